"""The two backends (core/backend.py): same answers, chosen as documented, compiled lazily.

The other core tests run every query on both backends against independent references; here
the backends are compared with each other on large random batches (both the one-thread and
the threaded path of the kernels) and the switching rules are checked."""

import os
import subprocess
import sys
import warnings

import numba
import numpy as np
import pytest

from geometry_queries.core import Cylinder, Heightfield, Placed, Sphere, raycast, sphere_cast
from geometry_queries.core import backend as active_backend
from geometry_queries.core.backend import PARALLEL_MIN, use

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
    with use(chosen), pytest.raises(ValueError, match=message), warnings.catch_warnings():
        # the huge and tiny rows are valid: naming the bad one does not warn of them
        warnings.simplefilter("error", RuntimeWarning)
        raycast(SHAPES["sphere"], origins, directions)


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


TERRAIN_HEIGHTS = np.random.default_rng(11).normal(0, 0.6, (9, 12)).cumsum(axis=0)
TERRAIN_HEIGHTS[3, 4] = TERRAIN_HEIGHTS[3, 5] = TERRAIN_HEIGHTS[4, 4] = 0.25  # a flat spot
DIAGONALS = np.random.default_rng(12).random((8, 11)) < 0.5
SPACING, ORIGIN = (0.7, 0.9), (-2.0, 1.0)


def terrain(solid, diagonals=None):
    return Heightfield(TERRAIN_HEIGHTS, SPACING, ORIGIN, diagonals=diagonals, solid=solid)


TERRAIN_TARGETS = {
    "solid": terrain(True),
    "surface": terrain(False),
    "solid, diagonals": terrain(True, DIAGONALS),
    "surface, diagonals": terrain(False, DIAGONALS),
    "placed solid (rigid)": Placed(terrain(True, DIAGONALS), similarity(1.0, ROTATION, (1, 2, 3))),
    "placed surface (scaled and mirrored: folded)": Placed(
        terrain(False), similarity(1.0, ROTATION, (1, 2, 3)) @ np.diag([-1.5, 0.8, 2.0, 1.0])
    ),
    "nested placed solid (folded as one)": Placed(
        Placed(terrain(True, DIAGONALS), np.diag([2.0, 0.5, 1.5, 1.0])),
        similarity(0.7, ROTATION, (-1, 0, 2)),
    ),
}


def terrain_edge_casts(rng, sizes=(0.0, 0.05, 0.3, 1.0)):
    """Casts at the edges of the terrain (in its frame, heights TERRAIN_HEIGHTS), with
    radii: down onto vertices and along grid lines, horizontal along grid lines at the
    heights, starts in overlap (just above and below the surface, inside the solid), into
    the walls and under the sheet's edge, at the footprint's corners, radius 0 and zero
    length, far starts."""
    ny, nx = TERRAIN_HEIGHTS.shape
    (x0, y0), (dx, dy) = ORIGIN, SPACING
    xs, ys = x0 + dx * np.arange(nx), y0 + dy * np.arange(ny)
    low, high = TERRAIN_HEIGHTS.min(), TERRAIN_HEIGHTS.max()
    starts, ends, radii = [], [], []

    def add(start, end, radius):
        starts.append(start)
        ends.append(end)
        radii.append(radius)

    for radius in sizes:
        for _ in range(6):
            i, j = rng.integers(0, nx), rng.integers(0, ny)
            z = TERRAIN_HEIGHTS[j, i]
            add((xs[i], ys[j], high + 2), (xs[i], ys[j], low - 2), radius)  # onto a vertex
            add((xs[i], ys[j], low - 3), (xs[i], ys[j], high + 3), radius)  # up from below
            x = rng.uniform(xs[0], xs[-1])
            add((x, ys[j], high + 2), (x, ys[j], low - 2), radius)  # down a grid line
            add((xs[0] - 2, ys[j], z), (xs[-1] + 2, ys[j], z), radius)  # along a grid line
            add((xs[i], ys[0] - 2, z - 0.5), (xs[i], ys[-1] + 2, z + 0.5), radius)
            gap = rng.uniform(-1, 1) * radius  # a start in overlap (or on the surface)
            add((xs[i], ys[j], z + gap), (xs[i] + 1, ys[j] - 1, z + gap - 1), radius)
            add((xs[i], ys[j], z - 0.2), (xs[i] + 0.3, ys[j], z + 2), radius)  # inside
            wall_z = rng.uniform(low - 1, high)  # into the walls, under the sheet's edge
            add((xs[0] - 3, ys[j] + 0.1, wall_z), (xs[-1], ys[j] + 0.2, wall_z), radius)
            add((xs[i] + 0.1, ys[-1] + 3, wall_z), (xs[i] + 0.2, ys[0], wall_z + 0.3), radius)
        for cx, cy in ((xs[0], ys[0]), (xs[-1], ys[0]), (xs[0], ys[-1]), (xs[-1], ys[-1])):
            for z in (low - 1, high + 0.5):  # toward the corner lines
                add((cx + 3, cy + 2.5, z), (cx - 3, cy - 2.5, z), radius)
                add((cx - 3, cy + 2.5, z), (cx + 3, cy - 2.5, z), radius)
        middle = (xs[nx // 2], ys[ny // 2], high + 0.5)
        add(middle, middle, radius)  # zero length
        add((1e4, -3e3, 2e3), (xs[3], ys[4], low), radius)  # far
    return np.array(starts, dtype=float), np.array(ends, dtype=float), np.array(radii)


def to_world(shape, rows):
    """Rows given in a terrain's frame, in the world of ``shape`` (Placed, nested or not)."""
    if not isinstance(shape, Placed):
        return rows
    return to_world(shape.shape, rows) @ shape.linear.T + shape.translation


@pytest.mark.parametrize("name", list(TERRAIN_TARGETS))
def test_sphere_cast_backends_agree_on_terrains(name):
    """Random casts and edge casts (terrain_edge_casts) against both terrain models, with
    and without diagonals, placed rigidly and folded: the compiled kernel finds the
    numpy reference's contacts (hits, distances, centres, points, normals)."""
    shape = TERRAIN_TARGETS[name]
    rng = np.random.default_rng(13)
    n = 1500
    (x0, y0), (dx, dy) = ORIGIN, SPACING
    ny, nx = TERRAIN_HEIGHTS.shape
    box_low = np.array((x0 - 2, y0 - 2, TERRAIN_HEIGHTS.min() - 2))
    box_high = np.array((x0 + nx * dx + 2, y0 + ny * dy + 2, TERRAIN_HEIGHTS.max() + 2))
    starts = rng.uniform(box_low, box_high, (n, 3))
    ends = starts + rng.normal(0, 3, (n, 3))
    radii = rng.uniform(0, 1.2, n)
    radii[::7] = 0.0
    radii[::11] = rng.uniform(2, 7, len(radii[::11]))  # many cells per stretch
    ends[::13] = starts[::13]
    # Radius 0 is the ray kernel's walk, which makes the direction unit again: on a placed
    # terrain, a ray exactly through a vertex or along the footprint's edge (in its frame)
    # may then pass on the other side by an ulp; random rays only there.
    radius_zero = () if isinstance(shape, Placed) else (0.0,)
    edge_starts, edge_ends, edge_radii = terrain_edge_casts(rng, radius_zero + (0.05, 0.3, 1.0))
    starts = to_world(shape, np.concatenate((starts, edge_starts)))
    ends = to_world(shape, np.concatenate((ends, edge_ends)))
    radii = np.concatenate((radii, edge_radii))
    with use("numpy"):
        expected = sphere_cast(shape, starts, ends, radii)
    with use("numba"):
        compiled = sphere_cast(shape, starts, ends, radii)
    assert 0.2 < expected.hit.mean() < 0.9
    assert (expected.distance == 0).sum() > 20  # starts in overlap
    assert_same(compiled, expected, ["distance", "center", "point", "normal"])


@pytest.mark.parametrize("solid", [True, False])
def test_terrain_casts_grazing_edges_agree(solid):
    """Casts whose line passes every interior edge's line at R (1 + d), d from -1e-6 to
    1e-6: the kernel's division-free pre-test of an edge (heightfield_cast.edge_entry)
    never rejects an edge that the exact test accepts, so both backends find the same
    contacts, tangent ones included."""
    shape = terrain(solid, DIAGONALS)
    ny, nx = TERRAIN_HEIGHTS.shape
    (x0, y0), (dx, dy) = ORIGIN, SPACING
    rng = np.random.default_rng(29)
    starts, ends, radii = [], [], []
    for j in range(1, ny - 1):
        for i in range(1, nx - 1):
            a = np.array((x0 + i * dx, y0 + j * dy, TERRAIN_HEIGHTS[j, i]))
            for di, dj in ((1, 0), (0, 1), (1, 1)):
                b = np.array((a[0] + di * dx, a[1] + dj * dy, TERRAIN_HEIGHTS[j + dj, i + di]))
                u = rng.normal(size=3)
                u[2] = -abs(u[2])
                across = np.cross(u, b - a)
                across /= np.linalg.norm(across)
                radius = rng.choice([0.05, 0.3, 1.0])
                for d in (-1e-6, -1e-9, 0.0, 1e-9, 1e-6):
                    passing = 0.5 * (a + b) + radius * (1 + d) * across
                    starts.append(passing - 4 * u / np.linalg.norm(u))
                    ends.append(passing + 4 * u / np.linalg.norm(u))
                    radii.append(radius)
    starts, ends, radii = np.array(starts), np.array(ends), np.array(radii)
    with use("numpy"):
        expected = sphere_cast(shape, starts, ends, radii)
    with use("numba"):
        compiled = sphere_cast(shape, starts, ends, radii)
    assert expected.hit.mean() > 0.5
    assert_same(compiled, expected, ["distance", "center", "point", "normal"])


def test_terrain_casts_on_threads_match_one_thread_and_numpy(monkeypatch):
    """A batch large enough for the threads (each runs the cast kernel, then the ray kernel
    for its radius-0 casts) gives the one-thread answers, and the numpy reference's."""
    shape = TERRAIN_TARGETS["placed surface (scaled and mirrored: folded)"]
    rng = np.random.default_rng(17)
    n = 2 * PARALLEL_MIN + 3
    starts = to_world(shape, rng.uniform((-4, -1, -4), (8, 10, 5), (n, 3)))
    ends = starts + rng.normal(0, 3, (n, 3))
    radii = rng.uniform(0, 1, n)
    radii[::5] = 0.0
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 2)
    with use("numba"):
        threaded = sphere_cast(shape, starts, ends, radii)
        monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)
        single = sphere_cast(shape, starts, ends, radii)
    with use("numpy"):
        expected = sphere_cast(shape, starts, ends, radii)
    assert 0.1 < expected.hit.mean() < 0.9
    assert_same(threaded, single, ["distance", "center", "point", "normal"])
    assert_same(threaded, expected, ["distance", "center", "point", "normal"])


def test_terrain_casts_on_a_large_terrain_take_the_coherent_order():
    """From SORT_MIN_CELLS heights the cast kernel runs its casts in the order of the block
    they start over (the ray kernel's _coherent_order, through a compiled entry point: a
    helper called from Python crashes the process), gathered into that order and scattered
    back; the answers stay the reference's, with one radius and with one per cast (radius-0
    casts among them)."""
    from geometry_queries.core.heightfield.ray_order import SORT_MIN_CELLS, SORT_MIN_RAYS

    side = int(np.ceil(np.sqrt(SORT_MIN_CELLS)))
    rng = np.random.default_rng(23)
    heights = np.cumsum(rng.normal(0, 0.3, (side, side)), axis=1)
    shape = Heightfield(heights, spacing=(0.5, 0.5), solid=True)
    n = 2 * SORT_MIN_RAYS + 1
    starts = np.column_stack(
        [rng.uniform(0, 0.5 * (side - 1), (n, 2)), np.full(n, heights.max() + 2.0)]
    )
    ends = starts + np.column_stack([rng.normal(0, 4, (n, 2)), np.full(n, -60.0)])
    radii = rng.uniform(0.1, 1.0, n)
    radii[::9] = 0.0  # rays, answered in the gathered order too
    for radius in (0.4, radii):
        with use("numba"):
            compiled = sphere_cast(shape, starts, ends, radius)
        with use("numpy"):
            expected = sphere_cast(shape, starts, ends, radius)
        assert expected.hit.mean() > 0.9
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
        "import geometry_queries.core as core\n"
        "hits = core.raycast(core.Sphere((0, 0, 0), 1), (0, 0, 5), (0, 0, -1))\n"
        "print(core.backend(), hits.distance)\n"
    )
    assert run_python(code, GEOMETRY_QUERIES_BACKEND="") == "numpy 4.0"
    code = NO_NUMBA + (
        "import geometry_queries.core as core\n"
        "try:\n"
        "    core.raycast(core.Sphere((0, 0, 0), 1), (0, 0, 5), (0, 0, -1))\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
    )
    message = run_python(code, GEOMETRY_QUERIES_BACKEND="numba")
    assert message.startswith("GEOMETRY_QUERIES_BACKEND=numba but numba does not import")
