"""The latency rule (core/backend.py): a query runs compiled when its kernel is loaded in the
process or when numpy would take longer than the wait for the kernel; otherwise the numpy
reference answers, so a small query never waits for numba. A damaged kernel cache is
rebuilt without the caller seeing it."""

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

from geometry_queries.core import Cylinder, Heightfield, Sphere, raycast
from geometry_queries.core.backend import (
    compile_freely,
    compiled,
    kernel,
    kind,
    loaded,
    refuse_compiles,
    use,
)

backend_module = importlib.import_module(
    "geometry_queries.core.backend"
)  # core.backend: a function

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_python(code, **environment):
    """Run ``code`` in a fresh interpreter with the repository on sys.path: (stdout, stderr)."""
    env = dict(os.environ, **environment)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip(), result.stderr.strip()


SMALL_QUERIES = """
import sys
import numpy as np
import geometry_queries.core as core
x = np.linspace(-2, 2, 64)
terrain = core.Heightfield(np.outer(np.cos(x), np.sin(x)), spacing=(0.1, 0.1), origin=(-3, -3))
placed = core.Placed(core.Cylinder((0, 0, -1), (0, 0, 1), 1.0), np.diag([2.0, 2.0, 1.0, 1.0]))
fan = np.column_stack([np.linspace(-0.5, 0.5, 60), np.zeros(60), -np.ones(60)])
print(core.raycast(core.Sphere((0, 0, 0), 1), (0, 0, 5), (0, 0, -1)).distance)
print(core.raycast(placed, (0, 5, 0), (0, -1, 0)).distance)
core.raycast(terrain, np.zeros((60, 3)) + (0, 0, 5), fan)
core.sphere_cast(terrain, (0.1, 0.2, 5), (0.1, 0.2, -5), 0.3)
core.occluded(terrain, np.zeros((4096, 3)) + (0, 0, 3), np.zeros((4096, 3)))
core.raycast_all(terrain, (0.1, 0.2, 5), (0.1, 0.0, -1))
print('numba' in sys.modules)
"""


def test_small_queries_in_a_fresh_process_never_import_numba():
    out, _ = run_python(SMALL_QUERIES, GEOMETRY_QUERIES_BACKEND="")
    assert out.splitlines() == ["4.0", "3.0", "False"]


def test_forcing_numba_compiles_the_query_into_the_cache_folder_given(tmp_path):
    code = (
        "import sys\nimport geometry_queries.core as core\n"
        "from geometry_queries.core.backend import set_cache_dir\n"
        f"set_cache_dir({str(tmp_path)!r})\n"
        "print(core.raycast(core.Sphere((0, 0, 0), 1), (0, 0, 5), (0, 0, -1)).distance)\n"
        "kernels = 'geometry_queries.core.'\n"
        "print(kernels + 'sphere.ray_kernel' in sys.modules,"
        " kernels + 'cylinder.ray_kernel' in sys.modules)\n"
    )
    out, _ = run_python(code, GEOMETRY_QUERIES_BACKEND="numba")
    assert out.splitlines() == ["4.0", "True False"]
    (version,) = tmp_path.iterdir()  # one folder per version of the kernels' sources
    assert version.name.startswith("geometry_queries-kernels-")
    # numba keeps each source folder's kernels in a folder named after it
    cached = [path for path in version.rglob("*.nbi")]
    assert any(
        path.parent.name.startswith("sphere_") and path.name.startswith("ray_kernel.raycast")
        for path in cached
    )


@pytest.fixture(autouse=True)
def backend():
    """Replaces the conftest's two-backend fixture: these tests choose their backends."""
    yield None


@pytest.fixture
def rule_chooses(monkeypatch):
    """No backend forced: the latency rule chooses."""
    monkeypatch.delenv("GEOMETRY_QUERIES_BACKEND", raising=False)
    yield
    refuse_compiles(None)


def test_the_rule_waits_only_when_numpy_would_take_longer(rule_chooses):
    key = ("sphere", "a query never run", None, False)
    wait = backend_module.wait_seconds(key)
    assert wait >= backend_module.UNKNOWN_COMPILE_SECONDS > 0.0  # a kind with no figure
    assert not compiled(key, lambda: 0.5 * wait)
    assert compiled(key, lambda: 2.0 * wait)
    refuse_compiles("the background preparation failed")
    assert not compiled(key, lambda: 2.0 * wait)  # only loaded kernels, then
    with use("numba"):
        assert compiled(key, lambda: 0.0)  # forced: whatever the wait
    with use("numpy"):
        refuse_compiles(None)
        assert not compiled(key, lambda: 1e9)


def test_compiling_freely_waits_for_any_kernel_unless_refused_or_forced(rule_chooses):
    key = ("sphere", "a query never run", None, False)
    assert not compiled(key, lambda: 0.0)
    with compile_freely():
        assert compiled(key, lambda: 0.0)  # the work after a compiled step waits too
        with use("numpy"):
            assert not compiled(key, lambda: 1e9)
        refuse_compiles("the background preparation failed")
        assert not compiled(key, lambda: 0.0)
    refuse_compiles(None)
    assert not compiled(key, lambda: 0.0)  # only inside the block


def test_a_loaded_kernel_answers_even_one_ray(rule_chooses):
    tube = Cylinder((0, 0, -1), (0, 0, 1), 0.7, capped=False)
    key = kind(tube, "raycast")
    assert key == ("cylinder", "raycast", False, False)
    with use("numba"):
        expected = raycast(tube, (3, 0, 0), (-1, 0, 0))
    assert loaded(key)
    assert kernel(tube, "raycast", 1) is not None
    assert raycast(tube, (3, 0, 0), (-1, 0, 0)).distance == expected.distance == pytest.approx(2.3)


def test_each_model_is_a_kind_of_its_own():
    heights = np.zeros((3, 3))
    kinds = {
        kind(Heightfield(heights, solid=solid, surface=surface), query)
        for solid in (True, False)
        for surface in ("TRIANGLES", "BILINEAR")
        for query in ("raycast", "occluded")
    }
    assert len(kinds) == 8
    assert kind(Sphere((0, 0), 1), "raycast") == kind(Sphere((0, 0, 0), 2), "raycast")


DAMAGE = """
import os, sys
import geometry_queries.core as core
from geometry_queries.core.backend import set_cache_dir
set_cache_dir(sys.argv[1])
print(core.raycast(core.Sphere((0, 0, 0), 1), (0, 0, 5), (0, 0, -1)).distance)
"""


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_cache_is_rebuilt_and_never_shown(tmp_path, damage):
    code = DAMAGE.replace("sys.argv[1]", repr(str(tmp_path)))
    out, _ = run_python(code, GEOMETRY_QUERIES_BACKEND="numba")
    assert out == "4.0"
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert any(path.suffix == ".nbc" for path in files)
    for path in files:  # a killed write or a full disk
        data = path.read_bytes()
        path.write_bytes(b"\x80\x04garbage" * 7 if damage == "garbage" else data[: len(data) // 2])
    out, err = run_python(code, GEOMETRY_QUERIES_BACKEND="numba")
    assert out == "4.0"
    assert err == ""
    # Rebuilt: a third process loads it again without compiling (a valid index).
    out, err = run_python(code + "print(core.backend())\n", GEOMETRY_QUERIES_BACKEND="numba")
    assert out.splitlines() == ["4.0", "numba"] and err == ""


def test_a_batch_that_waits_for_its_kernel_says_so_once(rule_chooses, monkeypatch):
    monkeypatch.setattr(backend_module, "_loaded", set())  # nothing loaded yet
    monkeypatch.setattr(backend_module, "wait_seconds", lambda key: 0.0)  # every batch pays
    messages = []
    origins = np.array([[0.0, 0.0, 5.0], [0.5, 0.0, 5.0]])
    with backend_module.notify_waits(messages.append):
        first = raycast(Sphere((0, 0, 0), 1), origins, [(0, 0, -1)] * 2)
        again = raycast(Sphere((0, 0, 0), 1), origins, [(0, 0, -1)] * 2)
    assert messages == ["Compiling fast kernels (first use)…"]
    assert loaded(kind(Sphere((0, 0, 0), 1), "raycast"))
    np.testing.assert_array_equal(first.distance, again.distance)
    assert first.distance[0] == 4.0
