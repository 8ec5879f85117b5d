"""The compiled Heightfield kernel (core/kernels/heightfield.py) gives the numpy reference's
answers: the same hits and misses and cells, distances and normals to 1e-12, on both
terrain models and surfaces, with and without diagonals and placements, for rays of every
kind (tilted, vertical, along grid lines, grazing, from below, from the sides), on grids
small and large enough for several pyramid levels, through the serial and the parallel
loop. Whether those answers are right is test_heightfield.py's business (brute force),
which also runs on both backends."""

import numpy as np
import pytest

from geometry_queries.core import Heightfield, Placed, raycast
from geometry_queries.core.backend import PARALLEL_MIN, kernels, use


@pytest.fixture(scope="module", autouse=True)
def backend():
    """This module compares the two backends itself (overrides conftest's parametrization)."""
    yield "both"


def assert_same(shape, origins, directions, max_distance=np.inf):
    origins, directions = np.broadcast_arrays(np.asarray(origins, float), directions)
    with use("numpy"):
        expected = raycast(shape, origins, directions, max_distance)
    with use("numba"):
        got = raycast(shape, origins, directions, max_distance)
    np.testing.assert_array_equal(got.hit, expected.hit)
    np.testing.assert_array_equal(got.cell, expected.cell)
    hit = expected.hit
    np.testing.assert_allclose(got.distance[hit], expected.distance[hit], rtol=1e-12, atol=0)
    assert np.isinf(got.distance[~hit]).all()
    np.testing.assert_allclose(got.normal[hit], expected.normal[hit], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.point[hit], expected.point[hit], rtol=1e-12, atol=1e-12)
    assert np.isnan(got.normal[~hit]).all() and np.isnan(got.point[~hit]).all()
    return expected


def rays(rng, heights, spacing, origin, count, integer=False):
    """Tilted rays from above, near-horizontal grazing rays, rays from below and from the
    sides, vertical rays and rays parallel to one grid axis (a tenth each)."""
    ny, nx = heights.shape
    width, depth = spacing[0] * (nx - 1), spacing[1] * (ny - 1)
    lo, hi = heights.min(), heights.max()
    origins = np.column_stack(
        [
            origin[0] + rng.uniform(-0.2, 1.2, count) * width,
            origin[1] + rng.uniform(-0.2, 1.2, count) * depth,
            rng.uniform(lo - 2, hi + 3, count),
        ]
    )
    directions = rng.normal(size=(count, 3))
    kind = rng.integers(0, 10, count)
    directions[kind == 0, :2] = 0.0  # vertical
    directions[kind == 1, 0] = 0.0  # parallel to the y axis
    directions[kind == 2, 1] = 0.0  # parallel to the x axis
    directions[kind == 3, 2] *= 0.01  # grazing
    directions[kind == 4, 2] = -np.abs(directions[kind == 4, 2]) - 0.5  # down
    if integer:  # on grid lines and vertices, where ties are the rule
        grid = (origins[:, :2] - origin) / spacing
        origins[:, :2] = origin + np.round(grid) * spacing
        origins[:, 2] = np.round(origins[:, 2])
    directions[np.all(directions == 0, axis=1)] = [0, 0, -1]
    return origins, directions


@pytest.mark.parametrize("solid", [True, False])
@pytest.mark.parametrize(
    "surface,diagonal", [("TRIANGLES", False), ("TRIANGLES", True), ("BILINEAR", False)]
)
def test_random_terrains(surface, diagonal, solid):
    rng = np.random.default_rng([surface == "BILINEAR", diagonal, solid])
    for shape, integer in [((2, 2), False), ((5, 7), True), ((11, 9), False), ((6, 6), True)]:
        heights = rng.normal(0, 2, shape)
        if integer:
            heights = heights.round()
        diagonals = rng.random((shape[0] - 1, shape[1] - 1)) < 0.5 if diagonal else None
        spacing = tuple(rng.uniform(0.3, 3, 2))
        origin = tuple(rng.uniform(-5, 5, 2))
        field = Heightfield(heights, spacing, origin, surface, diagonals, solid=solid)
        origins, directions = rays(rng, heights, spacing, origin, 600, integer)
        assert_same(field, origins, directions)
        assert_same(field, origins, directions, rng.uniform(0, 6, len(origins)))


@pytest.mark.parametrize("solid", [True, False])
@pytest.mark.parametrize("surface", ["TRIANGLES", "BILINEAR"])
def test_large_grid_many_levels_parallel_and_serial(surface, solid):
    """A 300 x 200 grid (blocks, a partial last block, four pyramid levels, rays
    prefetched) with spikes and a plateau; 20,000 rays run on several threads, 500 on
    one."""
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:200, 0:300]
    heights = 20 * np.sin(x / 23.0) * np.cos(y / 31.0) + rng.normal(0, 0.5, (200, 300))
    heights[rng.integers(0, 200, 40), rng.integers(0, 300, 40)] += 60.0
    heights[50:90, 100:170] = 25.0
    diagonals = rng.random((199, 299)) < 0.5 if surface == "TRIANGLES" else None
    field = Heightfield(heights, (0.5, 0.75), (-10.0, 3.0), surface, diagonals, solid=solid)
    assert len(field.hierarchy[1]) >= 3
    origins, directions = rays(rng, heights, (0.5, 0.75), (-10.0, 3.0), 20_000)
    assert len(origins) >= PARALLEL_MIN
    expected = assert_same(field, origins, directions)
    assert 0.2 < expected.hit.mean() < 0.95
    assert_same(field, origins[:500], directions[:500], rng.uniform(0, 30, 500))
    assert_same(field, origins[0], directions[0])  # one ray as (3,)
    matrix = np.diag([2.0, 0.5, 1.5, 1.0])
    matrix[:3, 3] = (1.0, -2.0, 0.5)
    assert_same(Placed(field, matrix), origins[:3000], directions[:3000], 40.0)


@pytest.mark.parametrize("solid", [True, False])
def test_terrain_large_enough_to_sort_the_rays(solid):
    """800 x 700 heights: rays prefetched and traced in block order (gathered, results
    scattered back), with per-ray limits and a placement."""
    rng = np.random.default_rng(11)
    y, x = np.mgrid[0:700, 0:800]
    heights = 30 * np.sin(x / 37.0) * np.cos(y / 53.0) + rng.normal(0, 0.3, (700, 800))
    field = Heightfield(heights, (1.0, 1.25), (5.0, -20.0), solid=solid)
    assert heights.size >= kernels("heightfield.ray_order").SORT_MIN_CELLS
    origins, directions = rays(rng, heights, (1.0, 1.25), (5.0, -20.0), 20_000)
    assert_same(field, origins, directions, rng.uniform(0, 500, len(origins)))
    matrix = np.diag([0.5, 2.0, 1.0, 1.0])
    assert_same(Placed(field, matrix), origins, directions)


@pytest.mark.parametrize("solid", [True, False])
def test_vertices_grid_lines_and_a_huge_spike(solid):
    """Vertical rays at every vertex and cell centre, rays along every grid line, and a
    1e12 spike whose tolerance stays in its own cells."""
    heights = np.zeros((9, 12))
    heights[2:5, 3:7] = 1.5
    heights[6, 9] = 1e12
    field = Heightfield(heights, (1.0, 0.5), (2.0, -1.0), solid=solid)
    X, Y = np.meshgrid(2.0 + 0.5 * np.arange(23), -1.0 + 0.25 * np.arange(17))
    origins = np.column_stack([X.ravel(), Y.ravel(), np.full(X.size, 3.0)])
    assert_same(field, origins, [0.0, 0.0, -1.0])
    assert_same(field, origins * [1, 1, -1], [0.0, 0.0, 1.0])  # from below
    along_x = np.column_stack([np.full(17, 0.0), Y[:, 0], np.full(17, 1.5)])
    along_y = np.column_stack([X[0], np.full(23, -3.0), np.full(23, 1.5)])
    for origins, direction in [(along_x, [1.0, 0.0, 0.0]), (along_y, [0.0, 1.0, -0.01])]:
        assert_same(field, origins, direction)


@pytest.mark.parametrize("solid", [True, False])
def test_placed_terrain(solid):
    rng = np.random.default_rng(3)
    heights = rng.normal(0, 1, (30, 40))
    field = Heightfield(heights, (0.5, 0.5), (-10.0, -7.0), "BILINEAR", solid=solid)
    matrix = np.array(
        [[0.5, 0.2, 0.0, 1.0], [-0.3, 1.5, 0.1, 2.0], [0.1, 0.0, 2.0, 3.0], [0, 0, 0, 1.0]]
    )
    origins, directions = rays(rng, heights, (0.5, 0.5), (-10.0, -7.0), 3000)
    assert_same(Placed(field, matrix), origins, directions)
    assert_same(Placed(Placed(field, matrix), matrix), origins, directions, 5.0)


def test_bad_rays_are_named_and_march_stays_numpy():
    field = Heightfield(np.zeros((3, 3)))
    origins = np.zeros((5, 3))
    origins[3, 1] = np.nan
    with use("numba"), pytest.raises(ValueError, match="origins row 3 is not finite"):
        raycast(field, origins, np.tile([0.0, 0.0, -1.0], (5, 1)))
    directions = np.tile([0.0, 0.0, -1.0], (5, 1))
    directions[2] = 0.0
    with use("numba"), pytest.raises(ValueError, match="directions row 2 has zero length"):
        raycast(field, np.ones((5, 3)), directions)
    assert field.kernel_family == "heightfield"


@pytest.mark.parametrize("solid", [True, False])
def test_the_kernel_gives_the_references_bits(solid):
    """The kernel repeats the reference's expressions, directions made unit as
    unit_components does: the same bits, not only 1e-12 (rays of any length, a group of 4
    walked together with a tail of 3)."""
    rng = np.random.default_rng(17)
    y, x = np.mgrid[0:120, 0:150]
    heights = 20 * np.sin(x / 23.0) * np.cos(y / 31.0) + rng.normal(0, 0.5, (120, 150))
    field = Heightfield(heights, (0.5, 0.75), (-10.0, 3.0), solid=solid)
    origins, directions = rays(rng, heights, (0.5, 0.75), (-10.0, 3.0), 4003)
    directions *= rng.uniform(0.1, 10, (4003, 1))
    with use("numpy"):
        expected = raycast(field, origins, directions)
    with use("numba"):
        got = raycast(field, origins, directions)
    assert expected.hit.mean() > 0.2
    for name in ("hit", "distance", "point", "normal", "cell"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))


def test_the_cast_kernels_import_first_in_a_fresh_process():
    """core/kernels/heightfield_cast.py imported before heightfield.py (its own import of
    the ray kernels then imports heightfield.py, which imports it back): both load, and the
    terrain's sphere cast runs through either module."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = (
        "import numpy as np\n"
        "from geometry_queries.core import Heightfield, sphere_cast\n"
        "from geometry_queries.core.backend import kernels\n"
        "casts = kernels('heightfield.cast_kernel')\n"
        "assert casts.sphere_cast is not None\n"
        "terrain = Heightfield(np.zeros((4, 4)), spacing=(1.0, 1.0))\n"
        "print(sphere_cast(terrain, [[1.5, 1.5, 3.0]], [[1.5, 1.5, -1.0]], 0.5).distance)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[2.5]"  # dropped from 3 until 0.5 above the ground
