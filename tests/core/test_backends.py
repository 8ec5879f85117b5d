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


def assert_same(first, second, fields):
    np.testing.assert_array_equal(first.hit, second.hit)
    for field in fields:
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
    assert_same(compiled, expected, ["distance", "point", "normal"])


# A placement scaling a cylinder along its axis (local z) and uniformly across: folded.
STRETCH_ALONG_Z = np.diag([1.3, 1.3, 2.5, 1.0])

CAST_TARGETS = {
    "sphere": Sphere((0.3, -0.2, 0.5), 1.7),
    "circle": Sphere((0.3, -0.2), 1.7),
    "placed sphere": Placed(Sphere((1, 0, 0), 0.8), similarity(1.5, ROTATION, (0, 1, -1))),
    "cylinder along z": Cylinder((0, 0, -1), (0, 0, 2), 1.3),
    "oblique cylinder": Cylinder((0.5, -1, 0.2), (-1, 2, 1.5), 0.9),
    "open tube": Cylinder((0.5, -1, 0.2), (-1, 2, 1.5), 0.9, capped=False),
    "open tube along x": Cylinder((-2, 0, 0), (2, 0, 0), 1.0, capped=False),
    "placed cylinder (folded)": Placed(
        Cylinder((0, 0, -1), (0, 0, 1), 0.7),
        similarity(1.0, ROTATION, (0.5, 0, -1)) @ STRETCH_ALONG_Z,
    ),
    "nested placed tube (folded)": Placed(
        Placed(Cylinder((0, 0, -1), (0, 0, 1), 0.7, capped=False), STRETCH_ALONG_Z),
        similarity(0.8, ROTATION, (0.5, 0, -1)),
    ),
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


def cylinder_edge_casts(r, h, rng):
    """Casts at the edges of sphere casts against the cylinder of radius r from z = 0 to h
    along z, with their radii: rims (horizontal and oblique casts touching a rim torus,
    down the axis onto the rim ring, over the cap's plane at height h + R), grazing the
    side (closest approach r + R), parallel to the axis onto a cap or through the hole,
    inside the tube, starts in overlap, on the axis, parallel to the caps, far away."""
    starts, ends, radii = [], [], []

    def add(start, end, radius):
        starts.append(start)
        ends.append(end)
        radii.append(radius)

    for radius in (0.05 * r, 0.5 * r, r, 2.0 * r):
        for angle in rng.uniform(0, 2 * np.pi, 6):
            c, s = np.cos(angle), np.sin(angle)
            for rim in (0.0, h):
                side = 1.0 if rim == h else -1.0
                # Horizontal at heights across the rim's layer: the torus, tangent at R.
                for lift in (0.0, 0.3, 0.9, 1.0, 1.0 + 1e-12):
                    z = rim + side * lift * radius
                    add((-5 * c, -5 * s, z), (5 * c, 5 * s, z), radius)
                # Down (or up) the axis direction at radial offsets around r .. r + R.
                for offset in (0.0, 0.5, 0.999, 1.0, 1.0 + 1e-13, 1.2):
                    rho = r + offset * radius
                    x, y = rho * c, rho * s
                    add((x, y, rim + side * 4), (x, y, rim - side * 4), radius)
                # Oblique, aimed at the rim ring.
                target = np.array((r * c, r * s, rim))
                away = np.array((c, s, side)) * rng.uniform(2, 6)
                add(target + away, target - away, radius)
            # Grazing the side: closest approach r + R, horizontal and oblique.
            for slope in (0.0, 0.4):
                for miss in (1.0 - 1e-12, 1.0, 1.0 + 1e-12):
                    b = (r + radius) * miss
                    start = np.array((-5 * s + b * c, 5 * c + b * s, 0.5 * h - 5 * slope))
                    end = np.array((5 * s + b * c, -5 * c + b * s, 0.5 * h + 5 * slope))
                    add(start, end, radius)
            # Parallel to the caps at heights around the cap layers.
            for z in (-radius, -0.5 * radius, 0.0, 0.5 * h, h, h + radius, h + 1.5 * radius):
                add((-4 * c, -4 * s + 0.3, z), (4 * c, 4 * s + 0.3, z), radius)
        # Inside the tube (the hole) and in overlap: short casts in random directions.
        for _ in range(8):
            rho, angle = rng.uniform(0, r), rng.uniform(0, 2 * np.pi)
            start = np.array((rho * np.cos(angle), rho * np.sin(angle), rng.uniform(-1, h + 1)))
            move = rng.normal(size=3)
            add(start, start + move * rng.uniform(0.1, 4), radius)
            add(start, start + (0, 0, rng.choice((-4.0, 4.0))), radius)  # along the axis
            near = np.array((r + rng.uniform(-radius, radius), 0, rng.uniform(-radius, h)))
            add(near, near + move, radius)  # starts in overlap
        add((0, 0, 0.5 * h), (0, 0, 0.5 * h), radius)  # zero-length, on the axis
        add((0, 0, h + 3), (0, 0, -3), radius)  # down the axis
        add((1e4, 3e3, -2e3), (0.1, 0.2, 0.5 * h), radius)  # far starts
        add((r + radius, 0, -1e4), (r + radius, 0, 1e4), radius)
    return np.array(starts, dtype=float), np.array(ends, dtype=float), np.array(radii)


@pytest.mark.parametrize("capped", [True, False])
@pytest.mark.parametrize("placed", [False, True])
def test_sphere_cast_backends_agree_at_cylinder_edges(capped, placed):
    """Rims, grazing casts, casts inside the tube, in overlap and parallel to the axis or
    the caps: the compiled kernel takes the numpy reference's branches (a hit/miss or a
    Newton start that differs shows here), on a cylinder along z and on the same cylinder
    turned and moved (a frame with no zero weights)."""
    r, h = 0.8, 1.5
    cylinder = Cylinder((0, 0, 0), (0, 0, h), r, capped=capped)
    starts, ends, radii = cylinder_edge_casts(r, h, np.random.default_rng(7))
    if placed:
        turn, move = ROTATION, np.array((0.3, -2.0, 1.0))
        cylinder = Cylinder(move, turn @ (0, 0, h) + move, r, capped=capped)
        starts, ends = starts @ turn.T + move, ends @ turn.T + move
    with use("numpy"):
        expected = sphere_cast(cylinder, starts, ends, radii)
    with use("numba"):
        compiled = sphere_cast(cylinder, starts, ends, radii)
    assert 0.3 < expected.hit.mean() < 0.95  # hits and misses
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
