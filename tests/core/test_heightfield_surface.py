"""Heightfield(solid=False), the surface as drawn, against brute force written here: every
triangle intersected from either side (Moller-Trumbore without culling, first t >= 0, the
triangle's normal turned to face the ray), and the bilinear patches sampled along the ray
for the first sign change of z - h in either direction. Also: the per-cell tolerance (a
1e12 spike moves no hit elsewhere, item 7 of issue 11) and rays on the footprint's first
and last grid lines (item 10), for both terrain models.
"""

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_heightfield import (
    check_against_reference,
    grid_triangles,
    grid_vertices,
    mixed_rays,
    moller_trumbore,
    multi_block_terrain,
)

from geometry_queries.core import Heightfield, Placed, raycast

MARGIN = 1e-9


def _unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


_TRIANGLES = {}


def _triangle_corners(args):
    """The three corners (T, 3) of every triangle of the grid (cached per terrain)."""
    heights, spacing, origin_xy, diagonals = args
    heights = np.asarray(heights, float)
    key = (
        heights.tobytes(),
        heights.shape,
        None if diagonals is None else np.asarray(diagonals).tobytes(),
        tuple(spacing),
        tuple(origin_xy),
    )
    if key not in _TRIANGLES:
        vertices = grid_vertices(heights, spacing, origin_xy)
        triangles, _ = grid_triangles(heights.shape, diagonals)
        _TRIANGLES.clear()
        _TRIANGLES[key] = tuple(vertices[triangles[:, k]] for k in range(3))
    return _TRIANGLES[key]


def surface_triangles(args, origin, direction, grow=0.0, matrix=None):
    """(t, normal facing the ray or None on an edge) of the first triangle hit from either
    side, or None. ``matrix``: the triangles placed in the world by this affine 4x4."""
    v0, v1, v2 = _triangle_corners(args)
    if matrix is not None:
        v0, v1, v2 = (v @ matrix[:3, :3].T + matrix[:3, 3] for v in (v0, v1, v2))
    unit = _unit(direction)
    t = moller_trumbore(np.asarray(origin, float), unit, v0, v1, v2, grow)
    best = t.min()
    if not np.isfinite(best):
        return None
    first = np.flatnonzero(t <= best + 1e-9 * max(1.0, best))
    normals = np.cross(v1[first] - v0[first], v2[first] - v0[first])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    normals *= np.where(normals @ unit > 0, -1.0, 1.0)[:, None]
    return best, (normals[0] if np.allclose(normals, normals[0], atol=1e-9) else None)


def surface_bilinear(args, origin, direction, grow=0.0, samples=257):
    """(t, normal facing the ray or None near a cell edge) of the first crossing of the
    bilinear surface (z - h changes sign or touches 0; with grow, comes within grow of the
    other side), or None: each cell's stretch of the ray sampled, then bisection."""
    heights, spacing, origin_xy, _ = args
    heights = np.asarray(heights, float)
    origin = np.asarray(origin, float)
    unit = _unit(direction)
    ny, nx = heights.shape
    # The part of the ray within the height range (finite for any non-horizontal ray).
    t_lo, t_hi = 0.0, np.inf
    if unit[2] != 0:
        a = (heights.min() - 1 - origin[2]) / unit[2]
        b = (heights.max() + 1 - origin[2]) / unit[2]
        t_lo, t_hi = max(0.0, min(a, b)), max(a, b)
    best = (np.inf, None)

    def g(t, i, j):
        p = origin[None, :] + np.multiply.outer(t, unit)
        U = (p[:, 0] - origin_xy[0]) / spacing[0] - i
        V = (p[:, 1] - origin_xy[1]) / spacing[1] - j
        h00, h10, h01, h11 = (
            heights[j, i],
            heights[j, i + 1],
            heights[j + 1, i],
            heights[j + 1, i + 1],
        )
        h = h00 * (1 - U) * (1 - V) + h10 * U * (1 - V) + h01 * (1 - U) * V + h11 * U * V
        return p[:, 2] - h

    for j in range(ny - 1):
        for i in range(nx - 1):
            lo, hi = t_lo, t_hi
            for axis, k in ((0, i), (1, j)):
                a = origin_xy[axis] + spacing[axis] * k
                b = a + spacing[axis]
                if unit[axis] == 0:
                    if not a <= origin[axis] <= b:
                        lo, hi = 1.0, 0.0
                    continue
                ta, tb = sorted(((a - origin[axis]) / unit[axis], (b - origin[axis]) / unit[axis]))
                lo, hi = max(lo, ta), min(hi, tb)
            if not lo <= hi or lo >= best[0]:
                continue
            ts = np.linspace(lo, hi, samples)
            values = g(ts, i, j)
            # The side the ray is on where it enters the cell: a crossing is where it gets
            # within grow of the other side (the cells before found none).
            side = 1.0 if values[0] >= 0 else -1.0
            values = side * values - grow
            crossing = np.flatnonzero(values <= 0)
            if crossing.size == 0:
                continue
            k = crossing[0]
            if k == 0:
                t = lo
            else:
                a, b = ts[k - 1], ts[k]
                for _ in range(80):
                    m = 0.5 * (a + b)
                    if side * g(np.array([m]), i, j)[0] - grow <= 0:
                        b = m
                    else:
                        a = m
                t = b
            if t < best[0] - 1e-12 * max(1.0, t):
                p = origin + t * unit
                U = (p[0] - origin_xy[0]) / spacing[0] - i
                V = (p[1] - origin_xy[1]) / spacing[1] - j
                h00, h10 = heights[j, i], heights[j, i + 1]
                h01, h11 = heights[j + 1, i], heights[j + 1, i + 1]
                du = ((h10 - h00) * (1 - V) + (h11 - h01) * V) / spacing[0]
                dv = ((h01 - h00) * (1 - U) + (h11 - h10) * U) / spacing[1]
                n = _unit([-du, -dv, 1.0])
                n = -n if n @ unit > 0 else n
                on_cell_edge = min(U, 1 - U, V, 1 - V) < 1e-9
                best = (t, None if on_cell_edge else n)
    return None if not np.isfinite(best[0]) else best


def surface_reference(args, surface, origin, direction, grow=0.0):
    solve = surface_bilinear if surface == "BILINEAR" else surface_triangles
    return solve(args, origin, direction, grow)


def make(heights, spacing=(1.0, 1.0), origin=(0.0, 0.0), surface="TRIANGLES", diagonals=None):
    heights = np.asarray(heights, float)
    field = Heightfield(heights, spacing, origin, surface=surface, diagonals=diagonals, solid=False)
    return field, (heights, spacing, origin, diagonals)


def check_surface(field, args, origins, directions, closed=False, tolerance=1e-8):
    """Every ray agrees with the two-sided brute force: hit or miss, distance, point, a unit
    normal facing the ray (the reference's where it is unique), the cell. ``closed``:
    named edge cases (along edges, through vertices) must match the reference with its
    triangles' edges included (grown by 1e-9), none skipped as ambiguous. Returns
    the number of rays compared."""
    origins = np.atleast_2d(np.asarray(origins, float))
    directions = np.atleast_2d(np.asarray(directions, float))
    hits = raycast(field, origins, directions)
    heights, spacing, origin_xy, _ = args
    compared = 0
    for row, (o, d) in enumerate(zip(origins, directions)):
        exact = surface_reference(args, field.surface, o, d, MARGIN if closed else 0.0)
        if not closed:
            grown = surface_reference(args, field.surface, o, d, MARGIN)
            shrunk = surface_reference(args, field.surface, o, d, -MARGIN)
            if (grown is None) != (shrunk is None) or (exact is None) != (grown is None):
                continue
            if grown is not None and abs(grown[0] - shrunk[0]) > 1e-6 * max(1, grown[0]):
                continue
        compared += 1
        unit = _unit(d)
        if exact is None:
            assert not hits.hit[row], f"row {row}: false hit at {hits.distance[row]} ({o}, {d})"
            continue
        t, normal = exact
        assert hits.hit[row], (
            f"row {row}: missed, reference distance {t} ({o.tolist()}, {d.tolist()})"
        )
        if closed:
            # Growing the triangles moves a graze (1e-9 / slope), while the triangles as they
            # are may lose an edge hit to rounding: the distance is either's.
            as_is = surface_reference(args, field.surface, o, d)
            if as_is is not None and abs(hits.distance[row] - as_is[0]) < abs(
                hits.distance[row] - t
            ):
                t = as_is[0]
                normal = None if normal is None or as_is[1] is None else as_is[1]
        assert abs(hits.distance[row] - t) <= tolerance * max(1.0, t), (row, hits.distance[row], t)
        np.testing.assert_allclose(
            hits.point[row], o + hits.distance[row] * unit, atol=1e-12 * max(1, t)
        )
        assert abs(np.linalg.norm(hits.normal[row]) - 1) < 1e-12
        assert hits.normal[row] @ unit <= 1e-12, f"row {row}: normal does not face the ray"
        if normal is not None and abs(normal @ unit) > 1e-6:
            np.testing.assert_allclose(hits.normal[row], normal, atol=1e-6, err_msg=f"row {row}")
        i, j = hits.cell[row]
        U = (hits.point[row][0] - origin_xy[0]) / spacing[0]
        V = (hits.point[row][1] - origin_xy[1]) / spacing[1]
        assert i - 1e-7 <= U <= i + 1 + 1e-7 and j - 1e-7 <= V <= j + 1 + 1e-7, (row, i, j, U, V)
    return compared


def rays_both_ways(rng, heights, spacing, origin_xy, count):
    """Rays from above, from below, sideways through the height range and grazing."""
    ny, nx = heights.shape
    width, depth = spacing[0] * (nx - 1), spacing[1] * (ny - 1)
    lo, hi = heights.min(), heights.max()
    centre = np.array([origin_xy[0] + width / 2, origin_xy[1] + depth / 2, (lo + hi) / 2])
    size = np.array([width, depth, hi - lo + 1])
    origins = centre + rng.uniform(-0.8, 0.8, (count, 3)) * size
    kind = rng.integers(0, 4, count)
    origins[kind == 0, 2] = hi + rng.uniform(0.5, 5, (kind == 0).sum())
    origins[kind == 1, 2] = lo - rng.uniform(0.5, 5, (kind == 1).sum())
    targets = centre + rng.uniform(-0.6, 0.6, (count, 3)) * size
    directions = targets - origins
    grazing = kind == 3
    directions[grazing, 2] = rng.normal(0, 0.02, grazing.sum())
    return origins, directions


TERRAINS = {
    "random": lambda rng: rng.normal(0, 1, (5, 6)).round(2),
    "spikes": lambda rng: np.where(rng.random((6, 6)) < 0.15, 6.0, 0.0),
    "pits": lambda rng: np.where(rng.random((6, 7)) < 0.15, -6.0, 0.0),
    "cliff": lambda rng: np.where(np.arange(6)[None, :] < 3, 5.0, -1.0) + np.zeros((5, 1)),
    "flat": lambda rng: np.zeros((3, 3)),
    "tiny": lambda rng: rng.normal(0, 1, (2, 2)),
}


@pytest.mark.parametrize("surface", ["TRIANGLES", "BILINEAR"])
@pytest.mark.parametrize("name", sorted(TERRAINS))
def test_terrains_match_two_sided_brute_force(name, surface):
    # crc32, not hash(): str hashes change from one process to the next (PYTHONHASHSEED)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    heights = TERRAINS[name](rng)
    diagonals = rng.random((heights.shape[0] - 1, heights.shape[1] - 1)) < 0.5
    spacing, origin = (0.7, 1.3), (-2.0, 1.0)
    field, args = make(
        heights, spacing, origin, surface, diagonals if surface == "TRIANGLES" else None
    )
    origins, directions = rays_both_ways(rng, heights, spacing, origin, 60)
    assert check_surface(field, args, origins, directions) >= 50
    hits = raycast(field, origins, directions)
    below = origins[:, 2] < heights.min()
    if name != "flat":
        assert hits.hit[below].any() and hits.hit[~below].any()


@pytest.mark.parametrize(
    "surface,diagonal", [("TRIANGLES", False), ("TRIANGLES", True), ("BILINEAR", False)]
)
def test_multi_block_grids_from_above_and_below(surface, diagonal):
    """Many blocks and pyramid levels: the max hierarchy (rays above) and the mirrored one
    (rays below) never lose a crossing."""
    rng = np.random.default_rng(31 + diagonal)
    shape = (37, 70) if surface == "TRIANGLES" else (20, 66)
    heights = multi_block_terrain(rng, *shape)
    heights[rng.integers(0, shape[0], 10), rng.integers(0, shape[1], 10)] -= 12.0  # pits
    diagonals = rng.random((shape[0] - 1, shape[1] - 1)) < 0.5 if diagonal else None
    spacing, origin = (0.75, 1.25), (-3.0, 4.0)
    field, args = make(heights, spacing, origin, surface, diagonals)
    count = 120 if surface == "TRIANGLES" else 30
    origins, directions = mixed_rays(rng, heights, spacing, count)
    origins[:, :2] += origin
    # The same rays mirrored through the terrain's mid height: from below.
    mid = 0.5 * (heights.min() + heights.max())
    mirrored_o = origins * [1, 1, -1] + [0, 0, 2 * mid]
    mirrored_d = directions * [1, 1, -1]
    origins = np.concatenate([origins, mirrored_o])
    directions = np.concatenate([directions, mirrored_d])
    assert check_surface(field, args, origins, directions, tolerance=1e-7) >= 0.9 * len(origins)


@pytest.mark.parametrize("surface", ["TRIANGLES", "BILINEAR"])
def test_vertical_rays_at_vertices_and_cell_centres_from_above_and_below(surface):
    rng = np.random.default_rng(7)
    heights = rng.integers(-3, 4, (5, 6)).astype(float)
    field, args = make(heights, surface=surface)
    solid = Heightfield(heights, surface=surface)
    xs, ys = np.meshgrid(np.arange(0, 5.5, 0.5), np.arange(0, 4.5, 0.5))
    points = np.stack([xs.ravel(), ys.ravel()], axis=1)
    n = len(points)
    down = raycast(
        field, np.column_stack([points, np.full(n, 10.0)]), np.tile([0, 0, -1.0], (n, 1))
    )
    up = raycast(field, np.column_stack([points, np.full(n, -10.0)]), np.tile([0, 0, 1.0], (n, 1)))
    assert down.hit.all() and up.hit.all()
    height = field.height_at(points[:, 0], points[:, 1])
    np.testing.assert_allclose(down.distance, 10.0 - height, atol=1e-12)
    np.testing.assert_allclose(up.distance, 10.0 + height, atol=1e-12)
    at_vertex = (points == points.round()).all(axis=1)
    ij = points[at_vertex].astype(int)
    np.testing.assert_array_equal(down.point[at_vertex][:, 2], heights[ij[:, 1], ij[:, 0]])
    np.testing.assert_array_equal(up.point[at_vertex][:, 2], heights[ij[:, 1], ij[:, 0]])
    # From above the normal is the solid's; from below its opposite.
    solid_down = raycast(
        solid, np.column_stack([points, np.full(n, 10.0)]), np.tile([0, 0, -1.0], (n, 1))
    )
    np.testing.assert_array_equal(down.normal, solid_down.normal)
    np.testing.assert_array_equal(up.cell, down.cell)
    inside = ~at_vertex & ((points % 1) != 0).all(axis=1)  # cell centres: one normal
    np.testing.assert_allclose(up.normal[inside], -down.normal[inside], atol=1e-15)


@pytest.mark.parametrize("surface", ["TRIANGLES", "BILINEAR"])
def test_rays_along_grid_lines_and_through_vertices_from_both_sides(surface):
    rng = np.random.default_rng(3)
    heights = rng.integers(0, 5, (6, 6)).astype(float)
    field, args = make(heights, surface=surface)
    origins, directions = [], []
    for line in range(6):
        for z in (0.5, 2.0, 3.0, 4.0, 4.5):
            origins += [[-2.0, line, z], [7.0, line, z], [line, -2.0, z], [line, 7.0, z]]
            directions += [[1, 0, 0.1], [-1, 0, -0.1], [0, 1, -0.2], [0, -1, 0.3]]
    for z in (1.0, 2.0, 2.5):  # exactly level rays along the grid lines and diagonals
        origins += [[-2.0, 2.0, z], [2.0, 7.0, z], [-1.0, -1.0, z], [6.5, 3.0, z]]
        directions += [[1, 0, 0], [0, -1, 0], [1, 1, 0], [-1, 0, 0]]
    for start in range(-2, 3):  # diagonals through lattice points, descending and ascending
        for slope in (-0.5, -0.25, 0.25, 0.5):
            origins += [[start, 0, 2.5 - 5 * slope], [start + 5, 5, 2.5 - 5 * slope]]
            directions += [[1, 1, slope], [-1, -1, slope]]
    assert check_surface(field, args, origins, directions, closed=True) == len(origins)


def test_origin_on_the_surface_is_a_hit_at_zero_with_the_surface_normal():
    heights = np.array([[0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [0.0, 0.0, 1.0]])
    for surface in ("TRIANGLES", "BILINEAR"):
        field, _ = make(heights, surface=surface)
        points = np.array([[0.5, 0.5], [1.0, 1.0], [1.5, 0.25], [0.0, 0.0], [2.0, 2.0]])
        z = field.height_at(points[:, 0], points[:, 1])
        origins = np.column_stack([points, z])
        for direction in ([0.3, 0.2, 1.0], [0.3, 0.2, -1.0], [1.0, 0.0, 0.0]):
            hits = raycast(field, origins, np.tile(direction, (len(origins), 1)))
            assert hits.hit.all() and (hits.distance == 0).all()
            np.testing.assert_array_equal(hits.point, origins)
            assert (hits.normal @ _unit(direction) <= 0).all()
            assert (np.abs(hits.normal[:, 2]) > 0.3).all()  # the surface's normal, not -d


def test_nothing_inside_no_walls_and_no_terrain_beside_it():
    heights = np.array([[1.0, 2.0, 3.0], [2.0, 5.0, 1.0], [0.0, 1.0, 2.0]])
    field, args = make(heights, (2.0, 1.0), (10.0, 20.0))
    cases = [
        ([12.0, 21.0, -5.0], [0, 0, -1]),  # below, going down: nothing inside
        ([5.0, 20.5, -0.5], [1, 0, 0.3]),  # under the x = 10 edge: the underside beyond
        ([9.0, 21.0, 10.0], [0, 0, -1]),  # beside the footprint
        ([12.0, 21.0, 6.0], [0, 0, 1]),  # above everything, going up
    ]
    hits = raycast(field, [c[0] for c in cases], [c[1] for c in cases])
    np.testing.assert_array_equal(hits.hit, [False, True, False, False])
    assert hits.distance[1] > 5.3 and hits.normal[1][2] < 0
    check_surface(field, args, [c[0] for c in cases], [c[1] for c in cases], closed=True)
    solid = raycast(Heightfield(heights, (2.0, 1.0), (10.0, 20.0)), cases[1][0], cases[1][1])
    assert solid.hit and solid.normal[0] == -1  # the solid's wall, for contrast


def test_far_origins_from_above_and_below():
    rng = np.random.default_rng(5)
    heights = rng.normal(0, 1, (9, 8))
    field, args = make(heights, (0.5, 0.25), (3.0, -2.0))
    targets = np.column_stack(
        [3 + rng.uniform(0.2, 3.3, 40), -2 + rng.uniform(0.2, 1.8, 40), np.zeros(40)]
    )
    away = rng.normal(size=(40, 3))
    away[:, 2] = np.abs(away[:, 2]) + 0.3
    away[20:, 2] *= -1  # half of them from below
    origins = targets + 1e6 * away / np.linalg.norm(away, axis=1, keepdims=True)
    directions = targets - origins
    hits = raycast(field, origins, directions)
    assert hits.hit.sum() >= 35
    assert check_surface(field, args, origins, directions, tolerance=1e-9) >= 35


@pytest.mark.parametrize(
    "linear",
    [
        np.diag([1.0, 1.0, -1.0]),  # mirrored: scale Z = -1
        np.diag([-2.0, 0.5, 3.0]),  # mirror and non-uniform scale
        np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]),  # stood up as a wall
        np.array([[0.8, 0.3, 0.0], [-0.2, 1.1, 0.5], [0.1, -0.4, -1.7]]),  # sheared, det < 0
    ],
)
def test_placed_surface_normals_face_the_ray_under_any_affine_matrix(linear):
    """World hits of a placed surface against the world triangles themselves (the affine
    image of the grid), from both sides: distance, point, normal facing the ray."""
    rng = np.random.default_rng(41)
    heights = rng.normal(0, 0.7, (6, 7))
    diagonals = rng.random((5, 6)) < 0.5
    args = (heights, (0.6, 0.9), (-1.0, -2.0), diagonals)
    field = Heightfield(heights, (0.6, 0.9), (-1.0, -2.0), diagonals=diagonals, solid=False)
    matrix = np.eye(4)
    matrix[:3, :3] = linear
    matrix[:3, 3] = [3.0, -1.0, 2.0]
    placed = Placed(field, matrix)
    local_o, local_d = rays_both_ways(rng, heights, (0.6, 0.9), (-1.0, -2.0), 80)
    origins = local_o @ linear.T + matrix[:3, 3]
    directions = local_d @ linear.T
    hits = raycast(placed, origins, directions)
    compared = 0
    for row in range(len(origins)):
        o, d = origins[row], directions[row]
        exact = surface_triangles(args, o, d, 0.0, matrix)
        grown = surface_triangles(args, o, d, MARGIN, matrix)
        shrunk = surface_triangles(args, o, d, -MARGIN, matrix)
        if (grown is None) != (shrunk is None) or (grown is None) != (exact is None):
            continue
        compared += 1
        assert hits.hit[row] == (exact is not None), row
        if exact is None:
            continue
        assert abs(hits.distance[row] - exact[0]) < 1e-8 * max(1, exact[0])
        unit = _unit(d)
        assert hits.normal[row] @ unit <= 0
        if exact[1] is not None:
            np.testing.assert_allclose(hits.normal[row], exact[1], atol=1e-7)
    assert compared >= 70 and hits.hit.sum() > 20


def test_solid_must_be_a_bool():
    with pytest.raises(ValueError, match="solid must be True or False"):
        Heightfield(np.zeros((3, 3)), solid="no")
    assert Heightfield(np.zeros((3, 3))).solid is True


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    ny=st.integers(2, 7),
    nx=st.integers(2, 7),
    surface=st.sampled_from(["TRIANGLES", "BILINEAR"]),
    integer_heights=st.booleans(),
)
def test_property_random_terrains_match_two_sided_brute_force(
    seed, ny, nx, surface, integer_heights
):
    rng = np.random.default_rng(seed)
    heights = (
        rng.integers(-2, 3, (ny, nx)).astype(float)
        if integer_heights
        else rng.normal(0, 1, (ny, nx))
    )
    diagonals = rng.random((ny - 1, nx - 1)) < 0.5 if surface == "TRIANGLES" else None
    field, args = make(heights, (1.0, 0.5), (0.25, -1.0), surface, diagonals)
    origins, directions = rays_both_ways(rng, heights, (1.0, 0.5), (0.25, -1.0), 8)
    # Only rays the reference cannot decide are left out: nearly all must be compared.
    assert check_surface(field, args, origins, directions) >= 0.85 * len(origins)


# -- item 7: a 1e12 spike moves no hit elsewhere (the tolerance is each cell's own) ----------


@pytest.mark.parametrize("solid", [True, False])
@pytest.mark.parametrize("surface", ["TRIANGLES", "BILINEAR"])
def test_a_huge_spike_moves_no_hit_away_from_its_cells(surface, solid):
    rng = np.random.default_rng(71)
    ny, nx = 40, 44
    y, x = np.mgrid[0:ny, 0:nx]
    heights = (2 * np.sin(x / 5.0) * np.cos(y / 7.0) + rng.normal(0, 0.2, (ny, nx))).round(4)
    spiked = heights.copy()
    spiked[20, 30] = 1e12  # in cells (29..30, 19..20)
    spacing, origin = (0.5, 0.5), (0.0, 0.0)
    plain = Heightfield(heights, spacing, origin, surface=surface, solid=solid)
    spike = Heightfield(spiked, spacing, origin, surface=surface, solid=solid)
    count = 3000
    origins = np.column_stack(
        [rng.uniform(0, 21.5, count), rng.uniform(0, 19.5, count), rng.uniform(2.5, 6, count)]
    )
    directions = np.column_stack([rng.normal(0, 0.7, (count, 2)), -np.ones(count)])
    grazing = rng.random(count) < 0.3  # nearly level rays skim the hills
    origins[grazing, 2] = rng.uniform(-1.5, 2.5, grazing.sum())
    directions[grazing, 2] = rng.normal(0, 0.05, grazing.sum())
    if not solid:
        below = rng.random(count) < 0.3  # and rays from below
        origins[below, 2] = -origins[below, 2]
        directions[below, 2] = -directions[below, 2]
    a = raycast(plain, origins, directions)
    b = raycast(spike, origins, directions)
    # Rays whose path over the footprint (up to the hit) never enters the spike's cells.
    unit = directions / np.linalg.norm(directions, axis=1, keepdims=True)
    end = np.where(a.hit, a.distance, 200.0)
    ts = np.linspace(0, 1, 4000)[None, :] * end[:, None]
    U = (origins[:, 0, None] + ts * unit[:, 0, None]) / spacing[0]
    V = (origins[:, 1, None] + ts * unit[:, 1, None]) / spacing[1]
    near_spike = ((U > 28.5) & (U < 31.5) & (V > 18.5) & (V < 21.5)).any(axis=1)
    away = ~near_spike
    assert away.sum() > 0.7 * count and a.hit[away].sum() > 0.5 * count
    np.testing.assert_array_equal(b.hit[away], a.hit[away])
    both = away & a.hit
    np.testing.assert_allclose(b.distance[both], a.distance[both], rtol=1e-12, atol=0)
    np.testing.assert_allclose(b.normal[both], a.normal[both], atol=1e-12)
    np.testing.assert_array_equal(b.cell[both], a.cell[both])
    # And the spiked terrain against brute force on a sample away from the spike.
    if surface == "TRIANGLES":
        args = (spiked, spacing, origin, None)
        rows = np.flatnonzero(away)[:40]
        if solid:
            check_against_reference(spike, args, origins[rows], directions[rows], tolerance=1e-9)
        else:
            check_surface(spike, args, origins[rows], directions[rows], tolerance=1e-9)


# -- item 10: rays on the footprint's first and last grid lines ------------------------------


@pytest.mark.parametrize("solid", [True, False])
@pytest.mark.parametrize("surface", ["TRIANGLES", "BILINEAR"])
def test_vertical_rays_on_the_first_and_last_grid_lines_and_corners(surface, solid):
    """Vertical rays at x = x0 + (nx-1) dx (computed so, in float64: a few ulps off the
    grid), x = x0, and likewise in y, at many points along each line and at the corners."""
    rng = np.random.default_rng(13)
    for (ny, nx), spacing, origin in (
        ((5, 6), (0.1, 0.3), (-1.3, 2.7)),
        ((5, 6), (0.37, 0.37), (5.0, 5.0)),
        ((20, 20), (0.37, 0.37), (5.0, 5.0)),
        ((33, 40), (0.1, 0.3), (-1.3, 2.7)),
    ):
        heights = rng.uniform(0, 1, (ny, nx))
        field = Heightfield(heights, spacing, origin, surface=surface, solid=solid)
        xs = origin[0] + spacing[0] * np.array([0, nx - 1])
        ys = origin[1] + spacing[1] * np.array([0, ny - 1])
        along_y = origin[1] + spacing[1] * np.linspace(0, ny - 1, 4 * ny - 3)
        along_x = origin[0] + spacing[0] * np.linspace(0, nx - 1, 4 * nx - 3)
        points, expected = [], []
        for k, x in enumerate(xs):  # the first and last columns: linear between vertices
            column = heights[:, 0 if k == 0 else -1]
            points += [(x, y) for y in along_y]
            expected += list(np.interp(along_y, origin[1] + spacing[1] * np.arange(ny), column))
        for k, y in enumerate(ys):
            row = heights[0 if k == 0 else -1]
            points += [(x, y) for x in along_x]
            expected += list(np.interp(along_x, origin[0] + spacing[0] * np.arange(nx), row))
        points, expected = np.array(points), np.array(expected)
        n = len(points)
        down = raycast(
            field, np.column_stack([points, np.full(n, 5.0)]), np.tile([0, 0, -1.0], (n, 1))
        )
        assert down.hit.all(), points[~down.hit][:3]
        np.testing.assert_allclose(down.point[:, 2], expected, atol=1e-12)
        corners = [(x, y) for x in xs for y in ys]
        assert all(any((points == c).all(axis=1)) for c in corners)
        up = raycast(
            field, np.column_stack([points, np.full(n, -5.0)]), np.tile([0, 0, 1.0], (n, 1))
        )
        assert up.hit.all()
        if solid:  # below the surface in the footprint: inside
            assert (up.distance == 0).all()
        else:
            np.testing.assert_allclose(up.point[:, 2], expected, atol=1e-12)


@pytest.mark.parametrize("solid", [True, False])
def test_sloped_rays_in_the_planes_of_the_first_and_last_grid_lines(solid):
    """Rays in the vertical plane x = x0 + (nx-1) dx (or y likewise), not vertical: the
    same edge, crossed along it, against brute force over the triangles."""
    rng = np.random.default_rng(17)
    (ny, nx), spacing, origin = (6, 7), (0.37, 0.1), (5.0, -1.3)
    heights = rng.uniform(0, 1, (ny, nx))
    field = Heightfield(heights, spacing, origin, solid=solid)
    args = (heights, spacing, origin, None)
    x_last = origin[0] + spacing[0] * (nx - 1)
    y_last = origin[1] + spacing[1] * (ny - 1)
    origins, directions = [], []
    for z, slope in ((1.2, -1.0), (1.5, -0.5), (-0.5, 1.0)):  # (slopes along y 4x steeper)
        origins += [[x_last, origin[1] - 0.2, z], [origin[0], y_last + 0.1, z]]
        directions += [[0, 1, 4 * slope], [0, -1, 4 * slope]]
        origins += [[origin[0] - 0.3, y_last, z], [x_last + 0.3, origin[1], z]]
        directions += [[1, 0, slope], [-1, 0, slope]]
    assert raycast(field, origins, directions).hit.sum() >= 9
    if solid:
        check_against_reference(field, args, origins, directions, closed=True)
    else:
        check_surface(field, args, origins, directions, closed=True)
