"""Kernels prepared in the background (core/prepare.py): start() returns at once, worker
processes compile every kind and this process loads each; any failure leaves the queries to
the numpy reference with the reason in status(). Each case runs in a fresh process."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from demo.addon_from_checkout import LINK_DIR
from geometry_queries.core.prepare import Status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def backend():
    """Replaces the conftest's two-backend fixture: nothing here runs in this process."""
    yield None


def run_python(code, path=(), timeout=600, **environment):
    """``code`` in a fresh interpreter (repository and ``path`` first on sys.path): stdout."""
    env = dict(os.environ, **environment)
    env.pop("GEOMETRY_QUERIES_BACKEND", None)
    env["PYTHONPATH"] = os.pathsep.join([*path, LINK_DIR])
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()


WAIT = """
import sys, time
import geometry_queries.core as core
from geometry_queries.core import prepare
from geometry_queries.core.backend import set_cache_dir
{setup}
started = time.perf_counter()
first = prepare.start()
returned = time.perf_counter() - started
while prepare.status().state == "preparing" and time.perf_counter() - started < 500:
    time.sleep(0.1)
status = prepare.status()
print(first.state, returned < 0.5)
print(status.state, status.done, status.total)
print(status.line())
"""


def test_every_kind_is_prepared_and_then_loaded_here():
    lines = run_python(
        WAIT.format(setup="")
        + textwrap.dedent(
            """
            import numpy as np
            from geometry_queries.core.backend import kernel, kind, loaded
            placed = core.Placed(core.Sphere((0, 0, 0), 1.0), np.eye(4))
            print(loaded(kind(placed, "raycast")), kernel(placed, "raycast", 1) is not None)
            print(core.raycast(placed, (0, 0, 5), (0, 0, -1)).distance)
            prepare.stop()
            print(prepare.status().state)
            """
        )
    )
    assert lines[0] == "preparing True"
    state, done, total = lines[1].split()
    assert (state, done) == ("ready", total) and int(total) == len(prepare_kinds())
    assert lines[2] == "Fast kernels: ready"
    assert lines[3:] == ["True True", "4.0", "idle"]


def prepare_kinds():
    from geometry_queries.core import prepare

    return prepare.kinds()


@pytest.fixture
def broken_numba(tmp_path):
    """A folder holding a package ``numba`` whose import fails (or kills the process)."""

    def make(body):
        package = tmp_path / "numba"
        package.mkdir()
        (package / "__init__.py").write_text(body)
        return str(tmp_path)

    return make


def test_numba_refusing_this_numpy_is_said_in_a_users_words_and_numpy_answers(broken_numba):
    # numba's own refusal, as a bundled numba raises it beside a newer Blender's numpy
    folder = broken_numba("raise ImportError('Numba needs NumPy 2.3 or less. Got NumPy 9.1.')\n")
    lines = run_python(
        WAIT.format(setup="")
        + "print(core.raycast(core.Sphere((0, 0, 0), 1.0), (0, 0, 5), (0, 0, -1)).distance)\n"
        + "import numpy; print(numpy.__version__)\n",
        path=[folder],
    )
    assert lines[1].startswith("unavailable 0 ")
    # the version is the installed numba's, where its metadata is there
    assert re.fullmatch(
        rf"Fast kernels: unavailable: numba( [0-9.]+)? does not support NumPy {lines[4]} "
        r"\(it needs 2\.3 or less\); the numpy code answers",
        lines[2],
    ), lines[2]
    assert lines[3] == "4.0"


def test_numba_that_does_not_import_is_reported_and_numpy_answers(broken_numba):
    folder = broken_numba("raise ImportError('this numba is broken')\n")
    lines = run_python(
        WAIT.format(setup="")
        + "print(core.raycast(core.Sphere((0, 0, 0), 1.0), (0, 0, 5), (0, 0, -1)).distance)\n",
        path=[folder],
    )
    assert lines[1].startswith("unavailable 0 ")
    assert lines[2] == (
        "Fast kernels: unavailable: numba does not import (ImportError: this numba is broken)"
    )
    assert lines[3] == "4.0"


def test_a_worker_that_crashes_is_started_once_more_then_reported(broken_numba):
    folder = broken_numba("import os\nos._exit(3)\n")
    lines = run_python(WAIT.format(setup=""), path=[folder])
    assert lines[1].startswith("unavailable 0 ")
    assert lines[2] == "Fast kernels: unavailable: the compiling process failed (exit code 3)"


def test_a_cache_folder_that_cannot_be_written_is_reported(tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    setup = f"set_cache_dir({str(blocker / 'kernels')!r})"
    lines = run_python(WAIT.format(setup=setup))
    assert lines[0] == "unavailable True"
    assert lines[2].startswith("Fast kernels: unavailable: cannot write the kernel cache (")


def test_a_forced_backend_prepares_nothing():
    lines = run_python(
        "import os\nos.environ['GEOMETRY_QUERIES_BACKEND'] = 'numpy'\n"
        "from geometry_queries.core import prepare\nprint(prepare.start().line())\n"
    )
    assert lines == ["Fast kernels: off (GEOMETRY_QUERIES_BACKEND=numpy)"]


def test_status_lines():
    assert Status("preparing", 3, 7).line() == "Fast kernels: preparing, 3 of 7"
    assert Status("ready", 7, 7).line() == "Fast kernels: ready"
    assert Status("unavailable", reason="why").line() == "Fast kernels: unavailable: why"
