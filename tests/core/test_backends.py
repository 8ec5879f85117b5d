"""The two backends (core/backend.py): same answers, chosen as documented, compiled lazily.

The other core tests run every query on both backends against independent references; here
the backends are compared with each other on large random batches (both the one-thread and
the threaded path of the kernels) and the switching rules are checked."""

import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from core import Cylinder, Placed, Sphere, raycast, sphere_cast
from core import backend as active_backend
from core.backend import PARALLEL_MIN, use

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def backend():
    """Replaces the conftest's two-backend fixture: these tests pick backends themselves."""
    yield None


ROTATION = np.array([[0.36, 0.48, -0.8], [-0.8, 0.6, 0.0], [0.48, 0.64, 0.6]])
SHEAR = np.array([[1.0, 0.3, 0.0, 1.0], [0.0, 2.0, 0.5, -2.0], [0.2, 0.0, 0.7, 3.0], [0, 0, 0, 1]])


def similarity(scale, rotation, translation):
    matrix = np.eye(4)
    matrix[:3, :3] = scale * rotation
    matrix[:3, 3] = translation
    return matrix


SHAPES = {
    "sphere": Sphere((0.3, -0.2, 0.5), 1.7),
    "circle": Sphere((0.3, -0.2), 1.7),
    "cylinder along z": Cylinder((0, 0, -1), (0, 0, 2), 1.3),
    "oblique cylinder": Cylinder((0.5, -1, 0.2), (-1, 2, 1.5), 0.9),
    "open tube": Cylinder((0.5, -1, 0.2), (-1, 2, 1.5), 0.9, capped=False),
    "open tube along x": Cylinder((-2, 0, 0), (2, 0, 0), 1.0, capped=False),
    "sheared sphere": Placed(Sphere((0, 0, 0), 1.0), SHEAR),
    "sheared cylinder": Placed(Cylinder((0, 0, -1), (0, 0, 1), 1.0), SHEAR),
    "placed circle": Placed(Sphere((0.5, 0), 1.0), [[0, -2, 1], [1, 0, 0.5], [0, 0, 1]]),
    "nested placement": Placed(
        Placed(Cylinder((0, 0, -1), (0, 0, 1), 1.0, capped=False), SHEAR),
        similarity(1.2, ROTATION, (-0.5, -1.0, -2.0)),
    ),
}


def random_rays(n, dimension, seed):
    """Origins around the shapes (some inside) and directions of any length, a share of
    them along coordinate axes (rays parallel to a cylinder's axis or caps)."""
    rng = np.random.default_rng(seed)
    origins = rng.normal(0, 2, (n, dimension))
    directions = rng.normal(0, 1, (n, dimension)) * rng.uniform(0.01, 100, (n, 1))
    axis = rng.integers(0, dimension, n)
    along = rng.random(n) < 0.2
    directions[along] = 0.0
    directions[along, axis[along]] = rng.choice([-1.0, 1.0], along.sum())
    return origins, directions


def assert_same(first, second, fields, exact=False):
    """The same answers to 1e-12; with ``exact``, the same bits."""
    np.testing.assert_array_equal(first.hit, second.hit)
    for field in fields:
        if exact:
            np.testing.assert_array_equal(getattr(first, field), getattr(second, field))
            continue
        a, b = getattr(first, field), getattr(second, field)
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
        finite = np.isfinite(a)
        np.testing.assert_allclose(a[finite], b[finite], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [PARALLEL_MIN - 1, 50_000])
@pytest.mark.parametrize("name", list(SHAPES))
def test_raycast_backends_agree(name, n):
    shape = SHAPES[name]
    origins, directions = random_rays(n, shape.dimension, seed=n)
    limits = np.random.default_rng(1).uniform(0, 20, n)
    with use("numpy"):
        expected = raycast(shape, origins, directions, limits)
    with use("numba"):
        compiled = raycast(shape, origins, directions, limits)
    assert expected.hit.sum() > n // 50  # the batch does exercise hits
    # The kernels repeat the reference's operations (kernels/rays.py): the same bits, but
    # for a nested Placed, which the kernel applies as one matrix.
    exact = name != "nested placement"
    assert_same(compiled, expected, ["distance", "point", "normal"], exact=exact)


@pytest.mark.parametrize("name", ["sphere", "circle", "oblique cylinder", "sheared sphere"])
def test_extreme_direction_lengths_give_the_same_bits(name):
    """Directions whose squared length under- or overflows (1e-200, 1e200) take the scaled
    unit_rows path on both backends; mixed into blocks of ordinary ones."""
    shape = SHAPES[name]
    origins, directions = random_rays(3000, shape.dimension, seed=11)
    scale = np.random.default_rng(12).choice([1e-200, 1e-150, 1.0, 1e150, 1e200], (3000, 1))
    directions = directions * scale
    with use("numpy"):
        expected = raycast(shape, origins, directions)
    with use("numba"):
        compiled = raycast(shape, origins, directions)
    assert expected.hit[scale[:, 0] == 1e-200].sum() > 10
    assert_same(compiled, expected, ["distance", "point", "normal"], exact=True)


BAD_ROWS = [
    # (row, origin or None, direction or None, message): in a block of ordinary rays,
    # after a tiny and a huge direction (the block's ray-by-ray pass)
    (300, None, [0.0, 0.0, 0.0], "directions row 300 has zero length"),
    (301, None, [np.nan, 1.0, 0.0], "directions row 301 is not finite"),
    (302, None, [1e300, -np.inf, 0.0], "directions row 302 is not finite"),
    (303, [0.0, np.inf, 1.0], None, "origins row 303 is not finite"),
    (304, [np.nan, 0.0, 1.0], [0.0, 0.0, 0.0], "origins row 304 is not finite"),
    (305, [1.0, 2.0, -np.inf], [1e-200, 0.0, 0.0], "origins row 305 is not finite"),
]


@pytest.mark.parametrize("chosen", ["numpy", "numba"])
@pytest.mark.parametrize("row, origin, direction, message", BAD_ROWS)
def test_the_first_bad_row_is_named_on_both_backends(chosen, row, origin, direction, message):
    origins, directions = random_rays(5000, 3, seed=13)
    directions[290] *= 1e-200
    directions[295] *= 1e200
    if origin is not None:
        origins[row] = origin
    if direction is not None:
        directions[row] = direction
    directions[4000] = 0.0  # a later bad row is not the one named
    with use(chosen), pytest.raises(ValueError, match=message):
        raycast(SHAPES["sphere"], origins, directions)


CAST_TARGETS = {
    "sphere": Sphere((0.3, -0.2, 0.5), 1.7),
    "circle": Sphere((0.3, -0.2), 1.7),
    "placed sphere": Placed(Sphere((1, 0, 0), 0.8), similarity(1.5, ROTATION, (0, 1, -1))),
}


@pytest.mark.parametrize("n", [100, 50_000])
@pytest.mark.parametrize("name", list(CAST_TARGETS))
def test_sphere_cast_backends_agree(name, n):
    shape = CAST_TARGETS[name]
    starts, moves = random_rays(n, shape.dimension, seed=n + 1)
    ends = starts + moves * 0.1
    ends[::17] = starts[::17]  # zero-length casts
    radius = np.random.default_rng(2).uniform(0, 1, n)
    with use("numpy"):
        expected = sphere_cast(shape, starts, ends, radius)
    with use("numba"):
        compiled = sphere_cast(shape, starts, ends, radius)
    assert expected.hit.sum() > n // 50
    assert_same(compiled, expected, ["distance", "center", "point", "normal"])


def test_one_thread_and_threads_give_the_same_answers(monkeypatch):
    shape = SHAPES["oblique cylinder"]
    origins, directions = random_rays(3 * PARALLEL_MIN + 1, 3, seed=5)
    with use("numba"):
        threaded = raycast(shape, origins, directions)
        monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)
        single = raycast(shape, origins, directions)
    assert_same(threaded, single, ["distance", "point", "normal"])


def test_bad_rows_are_named_by_the_compiled_backend_too():
    origins, directions = random_rays(10_000, 3, seed=3)
    directions[7_000] = 0.0
    with use("numba"), pytest.raises(ValueError, match="directions row 7000 has zero length"):
        raycast(SHAPES["sphere"], origins, directions)
    origins[9_999, 2] = np.inf
    with use("numba"), pytest.raises(ValueError, match="origins row 9999 is not finite"):
        raycast(SHAPES["sphere"], origins, directions)
    with use("numba"), pytest.raises(ValueError, match="ends row 9999 is not finite"):
        sphere_cast(SHAPES["sphere"], directions, origins, 0.5)


def run_python(code, **environment):
    """Run ``code`` in a fresh interpreter with the repository on sys.path; its stdout."""
    env = dict(os.environ, **environment)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_numba_is_the_default_and_the_environment_forces_a_backend(monkeypatch):
    monkeypatch.delenv("GEOMETRY_QUERIES_BACKEND", raising=False)
    assert active_backend() == "numba"
    monkeypatch.setenv("GEOMETRY_QUERIES_BACKEND", "numpy")
    assert active_backend() == "numpy"
    monkeypatch.setenv("GEOMETRY_QUERIES_BACKEND", "NUMBA")
    assert active_backend() == "numba"
    monkeypatch.setenv("GEOMETRY_QUERIES_BACKEND", "fortran")
    with pytest.raises(ValueError, match="GEOMETRY_QUERIES_BACKEND must be 'numba' or 'numpy'"):
        active_backend()
    with pytest.raises(ValueError, match="backend must be"):
        with use("fortran"):
            pass


NO_NUMBA = "import sys; sys.modules['numba'] = None  # numba does not import\n"


def test_without_numba_the_numpy_backend_answers_and_forcing_numba_fails_clearly():
    code = NO_NUMBA + (
        "import core\n"
        "hits = core.raycast(core.Sphere((0, 0, 0), 1), (0, 0, 5), (0, 0, -1))\n"
        "print(core.backend(), hits.distance)\n"
    )
    assert run_python(code, GEOMETRY_QUERIES_BACKEND="") == "numpy 4.0"
    code = NO_NUMBA + (
        "import core\n"
        "try:\n"
        "    core.raycast(core.Sphere((0, 0, 0), 1), (0, 0, 5), (0, 0, -1))\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
    )
    message = run_python(code, GEOMETRY_QUERIES_BACKEND="numba")
    assert message.startswith("GEOMETRY_QUERIES_BACKEND=numba but numba does not import")


def test_numba_is_imported_and_kernels_compiled_only_by_the_first_query(tmp_path):
    code = (
        "import sys, core\n"
        "from core import backend as b\n"
        "b_module = sys.modules['core.backend']\n"
        f"b_module.set_cache_dir({str(tmp_path)!r})\n"
        "print('numba' in sys.modules, 'core.kernels.sphere' in sys.modules)\n"
        "core.raycast(core.Sphere((0, 0, 0), 1), (0, 0, 5), (0, 0, -1))\n"
        "print('numba' in sys.modules, 'core.kernels.sphere' in sys.modules,\n"
        "      'core.kernels.cylinder' in sys.modules)\n"
    )
    first, second = run_python(code, GEOMETRY_QUERIES_BACKEND="").splitlines()
    assert first == "False False"
    assert second == "True True False"
    # The compiled sphere kernel went to the cache folder given, one per kernels' version.
    (version,) = tmp_path.iterdir()
    assert version.name.startswith("geometry_queries-kernels-")
    cached = [path.name for path in version.rglob("*") if path.is_file()]
    assert any(name.startswith("sphere.raycast") and name.endswith(".nbi") for name in cached)
