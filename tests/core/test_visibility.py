"""viewshed and cumulative_viewshed against a brute-force line of sight: every segment from
the eye to a raised vertex tested against every triangle of the terrain (Moller-Trumbore),
on small terrains; GIS options (heights, max distance, curvature) and their validation."""

import numpy as np
import pytest

from geometry_queries.core import Heightfield
from geometry_queries.core.visibility import (
    as_dataarray,
    cumulative_viewshed,
    reach_window,
    terrain_from_xarray,
    viewshed,
    window_terrain,
)

END = 1e-9  # core.occluded's trim at each end of a segment, as a fraction of its length


def triangles(heights, spacing, origin, diagonals=None):
    """(T, 3, 3) the terrain's triangles as Blender draws them."""
    ny, nx = heights.shape
    x = origin[0] + np.arange(nx) * spacing[0]
    y = origin[1] + np.arange(ny) * spacing[1]
    out = []
    for j in range(ny - 1):
        for i in range(nx - 1):
            p00 = (x[i], y[j], heights[j, i])
            p10 = (x[i + 1], y[j], heights[j, i + 1])
            p01 = (x[i], y[j + 1], heights[j + 1, i])
            p11 = (x[i + 1], y[j + 1], heights[j + 1, i + 1])
            if diagonals is not None and diagonals[j, i]:
                out += [(p00, p10, p01), (p10, p11, p01)]
            else:
                out += [(p00, p10, p11), (p00, p11, p01)]
    return np.array(out, dtype=np.float64)


def in_triangles(point, tris, eps=1e-9):
    """(T,) bool: ``point`` lies in the triangle (in its plane, within ``eps``)."""
    a, e1, e2 = tris[:, 0], tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]
    w = point - a
    normal = np.cross(e1, e2)
    off = np.abs(np.einsum("ij,ij->i", normal, w)) / np.linalg.norm(normal, axis=1)
    g11, g12, g22 = (np.einsum("ij,ij->i", p, q) for p, q in ((e1, e1), (e1, e2), (e2, e2)))
    r1, r2 = np.einsum("ij,ij->i", e1, w), np.einsum("ij,ij->i", e2, w)
    det = g11 * g22 - g12 * g12
    u, v = (g22 * r1 - g12 * r2) / det, (g11 * r2 - g12 * r1) / det
    return (off <= eps) & (u >= -eps) & (v >= -eps) & (u + v <= 1 + eps)


def segment_blocked(eye, target, tris):
    """Does the segment meet a triangle strictly inside its trimmed length? A segment in a
    triangle's plane counts as parallel (det small beside |e1||e2|) for the crossing test;
    such a segment running inside a triangle touches it all along, which blocks: it starts
    or ends on that triangle, so a point just past its start or before its end tells."""
    d = target - eye
    length = np.linalg.norm(d)
    if length == 0.0:
        return False
    d = d / length
    a, b, c = tris[:, 0], tris[:, 1], tris[:, 2]
    e1, e2 = b - a, c - a
    p = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, p)
    scale = np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1)
    ok = np.abs(det) > 1e-12 * scale
    det = np.where(ok, det, 1.0)
    s = eye - a
    u = np.einsum("ij,ij->i", s, p) / det
    q = np.cross(s, e1)
    v = (q @ d) / det
    t = np.einsum("ij,ij->i", e2, q) / det
    eps = 1e-12
    hit = ok & (u >= -eps) & (v >= -eps) & (u + v <= 1 + eps)
    hit &= (t >= END * length) & (t <= length - END * length)
    if hit.any():
        return True
    flat = tris[~ok]
    near_ends = (eye + 1e-6 * length * d, target - 1e-6 * length * d)
    return any(in_triangles(point, flat).any() for point in near_ends)


def brute_viewshed(heights, spacing, origin, observer, *, solid, oh=0.0, th=0.0, reach=np.inf):
    heights = np.asarray(heights, dtype=np.float64)
    terrain = Heightfield(heights, spacing=spacing, origin=origin)
    tris = triangles(heights, spacing, origin)
    eye = np.asarray(observer, dtype=np.float64) + [0.0, 0.0, oh]
    ny, nx = heights.shape
    ground = terrain.height_at(eye[0], eye[1])
    inside_solid = solid and eye[2] < ground
    visible = np.zeros((ny, nx), dtype=bool)
    for j in range(ny):
        for i in range(nx):
            x, y = origin[0] + i * spacing[0], origin[1] + j * spacing[1]
            if (x - observer[0]) ** 2 + (y - observer[1]) ** 2 > reach * reach:
                continue
            target = np.array([x, y, heights[j, i] + th])
            if inside_solid:
                continue
            if solid and np.array_equal(eye, target) and eye[2] <= ground:
                continue  # occluded: a point on a solid (zero-length segment) is blocked
            blocked = segment_blocked(eye, target, tris)
            if solid and not blocked:  # no crossing: one side throughout, the midpoint's
                mid = 0.5 * (eye + target)
                blocked = bool(mid[2] < terrain.height_at(mid[0], mid[1]))
            visible[j, i] = not blocked
    return visible


def rough(ny, nx, seed, amplitude=1.0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-amplitude, amplitude, size=(ny, nx))


SPACING = (0.5, 0.75)
ORIGIN = (3.0, -2.0)


def vertex(i, j, heights):
    return np.array([ORIGIN[0] + i * SPACING[0], ORIGIN[1] + j * SPACING[1], heights[j, i]])


@pytest.mark.parametrize("solid", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_observer_above_vertex_matches_brute_force(solid, seed):
    heights = rough(7, 8, seed)
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN, solid=solid)
    observer = vertex(3, 2, heights)
    got = viewshed(terrain, observer, observer_height=0.8, target_height=0.1)
    expected = brute_viewshed(heights, SPACING, ORIGIN, observer, solid=solid, oh=0.8, th=0.1)
    np.testing.assert_array_equal(got, expected)
    assert 0 < got.sum() < got.size


@pytest.mark.parametrize("solid", [True, False])
def test_observer_on_vertex_and_on_edge(solid):
    heights = rough(6, 7, 5, amplitude=0.3)
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN, solid=solid)
    on_vertex = vertex(2, 3, heights)
    # On the edge between vertices (4, 1) and (5, 1): the surface's height there.
    a, b = vertex(4, 1, heights), vertex(5, 1, heights)
    on_edge = 0.25 * a + 0.75 * b
    for observer, oh in ((on_vertex, 1.0), (on_vertex, 0.0), (on_edge, 0.6), (on_edge, 0.0)):
        got = viewshed(terrain, observer, observer_height=oh)
        expected = brute_viewshed(heights, SPACING, ORIGIN, observer, solid=solid, oh=oh)
        np.testing.assert_array_equal(got, expected)


def test_observer_below_the_surface():
    heights = rough(6, 6, 3) + 5.0
    observer = vertex(2, 3, heights) - [0.0, 0.0, 1.0]
    solid = Heightfield(heights, spacing=SPACING, origin=ORIGIN, solid=True)
    assert not viewshed(solid, observer, observer_height=0.5).any()  # inside the ground
    surface = Heightfield(heights, spacing=SPACING, origin=ORIGIN, solid=False)
    got = viewshed(surface, observer, observer_height=0.5)
    expected = brute_viewshed(heights, SPACING, ORIGIN, observer, solid=False, oh=0.5)
    np.testing.assert_array_equal(got, expected)


def test_max_distance_includes_a_vertex_exactly_at_it():
    heights = np.zeros((9, 9))
    terrain = Heightfield(heights, spacing=(1.0, 1.0), origin=(0.0, 0.0))
    observer = (1.0, 1.0, 0.0)
    got = viewshed(terrain, observer, observer_height=1.0, max_distance=5.0)
    assert got[1 + 4, 1 + 3] and got[1 + 3, 1 + 4]  # a 3-4-5 triangle: exactly 5 away
    assert got[1, 6] and not got[1, 7] and not got[6, 6]
    x, y = np.meshgrid(np.arange(9.0), np.arange(9.0))
    np.testing.assert_array_equal(got, (x - 1) ** 2 + (y - 1) ** 2 <= 25)


@pytest.mark.parametrize("reach", [0.0, 0.6, 1.5, 2.25])
def test_max_distance_matches_brute_force(reach):
    heights = rough(8, 7, 4)
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN, solid=False)
    observer = vertex(1, 5, heights)
    got = viewshed(terrain, observer, observer_height=1.2, max_distance=reach)
    expected = brute_viewshed(heights, SPACING, ORIGIN, observer, solid=False, oh=1.2, reach=reach)
    np.testing.assert_array_equal(got, expected)


def test_observer_outside_the_grid_beyond_reach():
    heights = rough(5, 5, 6)
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN)
    assert not viewshed(terrain, (100.0, 100.0, 50.0), max_distance=10.0).any()


@pytest.mark.parametrize("solid", [True, False])
def test_curvature_lowers_heights_by_the_formula(solid):
    heights = rough(7, 7, 7, amplitude=0.5) + 10.0
    spacing, origin = (4000.0, 3000.0), (-12000.0, 5000.0)
    observer = np.array([origin[0] + 3 * spacing[0], origin[1] + 3 * spacing[1], 10.6])
    k, radius = 0.13, 6_371_000.0
    x = origin[0] + np.arange(7) * spacing[0]
    y = origin[1] + np.arange(7) * spacing[1]
    d2 = (x[None, :] - observer[0]) ** 2 + (y[:, None] - observer[1]) ** 2
    lowered = heights - (1 - k) * d2 / (2 * radius)
    terrain = Heightfield(heights, spacing=spacing, origin=origin, solid=solid)
    got = viewshed(
        terrain,
        observer,
        observer_height=2.0,
        target_height=0.5,
        earth_curvature=True,
        refraction=k,
        earth_radius=radius,
    )
    expected = brute_viewshed(lowered, spacing, origin, observer, solid=solid, oh=2.0, th=0.5)
    np.testing.assert_array_equal(got, expected)
    flat = viewshed(terrain, observer, observer_height=2.0, target_height=0.5)
    assert not np.array_equal(got, flat)  # curvature hides some vertices here
    np.testing.assert_array_equal(
        flat, brute_viewshed(heights, spacing, origin, observer, solid=solid, oh=2.0, th=0.5)
    )


def test_cumulative_counts_are_sums_of_viewsheds():
    heights = rough(9, 8, 8)
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN, solid=False)
    observers = np.array([vertex(1, 1, heights), vertex(6, 7, heights), vertex(4, 3, heights)])
    options = dict(observer_height=0.7, target_height=0.2, max_distance=3.0)
    counts = cumulative_viewshed(terrain, observers, **options)
    assert counts.dtype == np.int32 and counts.shape == heights.shape
    expected = sum(
        brute_viewshed(heights, SPACING, ORIGIN, o, solid=False, oh=0.7, th=0.2, reach=3.0).astype(
            np.int32
        )
        for o in observers
    )
    np.testing.assert_array_equal(counts, expected)
    assert counts.max() >= 2
    empty = cumulative_viewshed(terrain, np.empty((0, 3)))
    assert empty.dtype == np.int32 and not empty.any()


def test_diagonals_are_kept_in_windows():
    heights = rough(8, 8, 9)
    diagonals = np.random.default_rng(1).random((7, 7)) < 0.5
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN, diagonals=diagonals)
    observer = vertex(3, 4, heights)
    whole = viewshed(terrain, observer, observer_height=0.5)
    near = viewshed(terrain, observer, observer_height=0.5, max_distance=1.6)
    x = ORIGIN[0] + np.arange(8) * SPACING[0]
    y = ORIGIN[1] + np.arange(8) * SPACING[1]
    within = (x[None, :] - observer[0]) ** 2 + (y[:, None] - observer[1]) ** 2 <= 1.6**2
    np.testing.assert_array_equal(near, whole & within)


def test_window_vertices_are_the_grid_vertices_bit_for_bit():
    spacing, origin = (0.1, 0.3), (1234.567, -89.01)
    heights = rough(50, 40, 10)
    window = reach_window((1236.0, -80.0, 0.0), 1.3, origin, spacing, heights.shape)
    j0, j1, i0, i1 = window
    assert (i0, j0) != (0, 0) and (i1, j1) != (40, 50)
    like = Heightfield(heights, spacing=spacing, origin=origin)
    part = window_terrain(heights[j0:j1, i0:i1], origin, spacing, window, like)
    assert part.origin == (origin[0] + i0 * spacing[0], origin[1] + j0 * spacing[1])
    assert part.spacing == like.spacing


@pytest.mark.parametrize(
    "options, message",
    [
        ({"observer_height": -1.0}, "observer_height"),
        ({"target_height": np.nan}, "target_height"),
        ({"max_distance": -0.5}, "max_distance"),
        ({"max_distance": np.nan}, "max_distance"),
        ({"refraction": 1.5}, "refraction"),
        ({"refraction": np.inf}, "refraction"),
        ({"earth_radius": 0.0}, "earth_radius"),
        ({"earth_curvature": "yes"}, "earth_curvature"),
    ],
)
def test_bad_options_are_named(options, message):
    terrain = Heightfield(rough(3, 3, 0))
    with pytest.raises(ValueError, match=message):
        viewshed(terrain, (0, 0, 1), **options)
    with pytest.raises(ValueError, match=message):
        cumulative_viewshed(terrain, [(0, 0, 1)], **options)


def test_bad_observers_are_named():
    terrain = Heightfield(rough(3, 3, 0))
    with pytest.raises(ValueError, match="row 1"):
        cumulative_viewshed(terrain, [(0, 0, 1), (0, np.nan, 1)])
    with pytest.raises(ValueError, match=r"\(M, 3\)"):
        cumulative_viewshed(terrain, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="observer"):
        viewshed(terrain, (0, 0))
    with pytest.raises(ValueError, match="Heightfield"):
        viewshed(np.zeros((3, 3)), (0, 0, 1))


def test_xarray_round_trip_with_descending_y():
    xr = pytest.importorskip("xarray")
    heights = rough(6, 5, 11)
    x = 100.0 + 2.0 * np.arange(5)
    y = 50.0 - 3.0 * np.arange(6)  # north up, as rasters store it
    da = xr.DataArray(heights, coords={"y": y, "x": x}, dims=("y", "x"))
    terrain = terrain_from_xarray(da, solid=False)
    assert terrain.spacing == (2.0, 3.0) and terrain.origin == (100.0, 35.0)
    np.testing.assert_array_equal(terrain.heights, heights[::-1])
    assert not terrain.solid
    counts = cumulative_viewshed(terrain, [(104.0, 41.0, 5.0)])
    back = as_dataarray(counts, da)
    assert back.dims == da.dims
    np.testing.assert_array_equal(back["y"], y)
    np.testing.assert_array_equal(back.values, counts[::-1])
    assert Heightfield.from_xarray(da).origin == (100.0, 35.0)
    with pytest.raises(ValueError, match="2D"):
        terrain_from_xarray(da.expand_dims("band"))
