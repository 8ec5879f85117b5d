"""raycast_all against independent references, on both backends (tests/core/conftest.py).

Spheres, capped cylinders and open tubes: every root of the textbook quadratics in mpmath
at 50 digits (reference.py: sphere_all, cylinder_all, tube_all). Terrains: every triangle
of the grid intersected by Moller-Trumbore (two-sided), crossings on an edge shared by two
triangles counted once, plus, for the solid, the side walls under the edge profile and an
origin inside. And the contract itself: sorted by (ray, distance), within max_distance,
the first record of every ray is raycast's hit (hypothesis, every shape).
"""

import numpy as np
import pytest
import reference
from hypothesis import given, settings
from hypothesis import strategies as st
from test_heightfield import (
    _bilinear_height,
    _edge_profile,
    grid_triangles,
    grid_vertices,
    moller_trumbore,
)

from geometry_queries.core import (
    AllHits,
    Cylinder,
    Heightfield,
    Placed,
    Sphere,
    raycast,
    raycast_all,
)


def records_of(hits: AllHits, row: int):
    rows = np.flatnonzero(hits.ray == row)
    return hits.distance[rows], hits.point[rows], hits.normal[rows]


def check_records(hits, row, expected, origin, direction, scale, normal_tolerance=1e-9):
    distance, point, normal = records_of(hits, row)
    assert len(distance) == len(expected), (row, distance, [t for t, _ in expected])
    unit = np.asarray(direction, float) / np.linalg.norm(direction)
    for k, (t, n) in enumerate(expected):
        assert distance[k] == pytest.approx(t, abs=1e-9 * scale), (row, k)
        assert point[k] == pytest.approx(np.asarray(origin) + distance[k] * unit, abs=1e-12)
        if n is not None:
            assert normal[k] == pytest.approx(n, abs=normal_tolerance), (row, k)


def assert_sorted_and_first_is_raycast(shape, origins, directions, max_distance=np.inf):
    hits = raycast_all(shape, origins, directions, max_distance)
    first_hits = raycast(shape, origins, directions, max_distance)
    assert np.all(np.diff(hits.ray) >= 0)  # sorted by ray, then distance within each ray
    same_ray = hits.ray[1:] == hits.ray[:-1]
    assert np.all(hits.distance[1:][same_ray] > hits.distance[:-1][same_ray])
    assert np.all(
        (hits.distance >= 0)
        & (hits.distance <= np.broadcast_to(max_distance, (len(origins),))[hits.ray])
    )
    firsts = np.flatnonzero(np.r_[True, ~same_ray]) if len(hits.ray) else np.array([], int)
    rows = hits.ray[firsts]
    assert np.array_equal(rows, np.flatnonzero(first_hits.hit))
    scale = 1.0 + np.abs(first_hits.distance[rows])
    assert np.all(np.abs(hits.distance[firsts] - first_hits.distance[rows]) <= 1e-9 * scale)
    return hits, first_hits, firsts, rows


# -- analytic shapes against mpmath ---------------------------------------------------------


def random_rays(rng, count, center, spread, dimension=3):
    origins = center + rng.normal(0, spread, (count, dimension))
    targets = center + rng.normal(0, spread / 3, (count, dimension))
    return origins, targets - origins


@pytest.mark.parametrize("dimension", [2, 3])
def test_sphere_entries_and_exits_match_mpmath(dimension):
    rng = np.random.default_rng(dimension)
    center, radius = np.array([0.3, -0.2, 0.5])[:dimension], 1.7
    sphere = Sphere(center, radius)
    origins, directions = random_rays(rng, 200, center, 3.0, dimension)
    origins[:20] = center + rng.uniform(-0.9, 0.9, (20, dimension))  # inside
    hits = raycast_all(sphere, origins, directions)
    for row in range(len(origins)):
        expected = reference.as_float_records(
            reference.sphere_all(origins[row], directions[row], center, radius)
        )
        check_records(hits, row, expected, origins[row], directions[row], radius)
    assert np.all(hits.ray[:40] < 20)  # every inside origin: 0 and the exit
    assert np.array_equal(np.bincount(hits.ray)[:20], np.full(20, 2))


def test_sphere_far_origins_tangent_touch_and_origin_on_the_surface():
    sphere = Sphere((0, 0, 0), 1.0)
    origins = np.array([[-1e6, 0.5, 0], [-3, 1, 0], [1, 0, 0], [-1, 0, 0], [0, 2, 0]], float)
    directions = np.array([[1, 0, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0], [0, -1, 0]], float)
    hits = raycast_all(sphere, origins, directions)
    chord = np.sqrt(0.75)
    assert records_of(hits, 0)[0] == pytest.approx([1e6 - chord, 1e6 + chord], abs=1e-9)
    distance, point, normal = records_of(hits, 1)  # tangent: one record
    assert distance.tolist() == [3.0] and normal.tolist() == [[0, 1, 0]]
    distance, _, normal = records_of(hits, 2)  # on the surface, leaving: one record at 0
    assert distance.tolist() == [0.0] and normal.tolist() == [[-1, 0, 0]]
    distance, _, normal = records_of(hits, 3)  # on the surface, entering: 0, then the exit
    assert distance.tolist() == [0.0, 2.0] and normal.tolist() == [[-1, 0, 0], [1, 0, 0]]
    distance, _, normal = records_of(hits, 4)
    assert distance.tolist() == [1.0, 3.0] and normal.tolist() == [[0, 1, 0], [0, -1, 0]]


def test_max_distance_cuts_records():
    sphere = Sphere((0, 0, 0), 1.0)
    hits = raycast_all(sphere, [[-3, 0, 0]] * 3, [[1, 0, 0]] * 3, [1.0, 2.5, 4.0])
    assert hits.ray.tolist() == [1, 2, 2]
    assert hits.distance.tolist() == [2.0, 2.0, 4.0]


@pytest.mark.parametrize("capped", [True, False])
def test_cylinder_and_tube_crossings_match_mpmath(capped):
    rng = np.random.default_rng(7 + capped)
    p0, p1, radius = np.array([0.2, -0.1, -1.0]), np.array([0.5, 0.3, 1.5]), 0.8
    cylinder = Cylinder(p0, p1, radius, capped=capped)
    middle = (p0 + p1) / 2
    origins, directions = random_rays(rng, 200, middle, 2.5)
    origins[:20] = middle + rng.uniform(-0.3, 0.3, (20, 3))  # inside
    directions[20:30] = p1 - p0  # parallel to the axis
    hits = raycast_all(cylinder, origins, directions)
    for row in range(len(origins)):
        solve = reference.cylinder_all if capped else reference.tube_all
        expected = reference.as_float_records(solve(origins[row], directions[row], p0, p1, radius))
        check_records(hits, row, expected, origins[row], directions[row], 2.0)


def test_open_tube_from_inside_and_along_the_axis():
    tube = Cylinder((0, 0, 0), (0, 0, 2), 1.0, capped=False)
    origins = [[0, 0, 1], [0, 0, -1], [-3, 0, 1], [1, 0, 1]]
    directions = [[1, 0, 0], [0, 0, 1], [1, 0, 0], [-1, 0, 0]]
    hits = raycast_all(tube, origins, directions)
    assert hits.ray.tolist() == [0, 2, 2, 3, 3]
    assert hits.distance.tolist() == [1.0, 2.0, 4.0, 0.0, 2.0]
    # every normal faces the ray: from inside the tube it points inward
    assert hits.normal[:, 0].tolist() == [-1.0, -1.0, -1.0, 1.0, 1.0]


def test_capped_cylinder_exit_normals_point_out_along_the_ray():
    cylinder = Cylinder((0, 0, 0), (0, 0, 2), 1.0)
    hits = raycast_all(cylinder, [[0, 0, -1], [0.5, 0, 1]], [[0, 0, 1], [1, 0, 0]])
    assert hits.distance.tolist() == [1.0, 3.0, 0.0, 0.5]
    assert hits.normal.tolist() == [[0, 0, -1], [0, 0, 1], [-1, 0, 0], [1, 0, 0]]


def test_placed_ellipsoid_mirrored_matches_mpmath_in_local_space():
    rng = np.random.default_rng(3)
    matrix = np.array([[-2.0, 0.3, 0, 1], [0, 1.0, 0.2, -1], [0.1, 0, 0.5, 2], [0, 0, 0, 1]])
    placed = Placed(Sphere((0.1, 0, 0), 1.0), matrix)
    origins, directions = random_rays(rng, 100, matrix[:3, 3], 3.0)
    hits = raycast_all(placed, origins, directions)
    inverse = np.linalg.inv(matrix[:3, :3])
    for row in range(len(origins)):
        local_origin = inverse @ (origins[row] - matrix[:3, 3])
        local_direction = inverse @ (directions[row] / np.linalg.norm(directions[row]))
        stretch = np.linalg.norm(local_direction)
        expected = reference.as_float_records(
            reference.sphere_all(local_origin, local_direction, (0.1, 0, 0), 1.0)
        )
        world = []
        for t, n in expected:
            n = inverse.T @ n
            if t == 0:  # an origin inside: -direction in the world, as raycast
                n = -directions[row]
            world.append((t / stretch, n / np.linalg.norm(n)))
        check_records(hits, row, world, origins[row], directions[row], 3.0, 1e-8)


# -- terrains against every triangle ----------------------------------------------------------


def bilinear_crossings(args, solid, origin, unit, max_distance, samples=20001):
    """Every crossing [(t, normal)] of a ray with the bilinear surface, sampled: g = z - h
    (the patch's own formula, test_heightfield._bilinear_height) at ``samples`` points of the
    ray's stretch over the footprint, each sign change refined by 80 bisections; the
    normal from a finite-difference gradient of h there (up-facing; facing the ray for a
    surface)."""
    heights, spacing, origin_xy, _ = args
    ny, nx = heights.shape
    low = np.array(origin_xy, float)
    high = low + np.array(spacing) * [nx - 1, ny - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        ta, tb = (low - origin[:2]) / unit[:2], (high - origin[:2]) / unit[:2]
    inside_xy = (origin[:2] >= low) & (origin[:2] <= high)
    enter = np.where(unit[:2] == 0, np.where(inside_xy, -np.inf, np.inf), np.minimum(ta, tb))
    leave = np.where(unit[:2] == 0, np.where(inside_xy, np.inf, -np.inf), np.maximum(ta, tb))
    start, end = max(enter.max(), 0.0), min(leave.min(), max_distance, 1e3)
    if not start < end:
        return []

    def g(t):
        p = origin + np.multiply.outer(t, unit)
        return p[..., 2] - _bilinear_height(heights, spacing, origin_xy, p[..., 0], p[..., 1])

    t = np.linspace(start, end, samples)
    values = g(t)
    change = np.flatnonzero((values[:-1] > 0) != (values[1:] > 0))
    a, b = t[change], t[change + 1]
    for _ in range(80):
        middle = 0.5 * (a + b)
        same = (g(middle) > 0) == (values[change] > 0)
        a, b = np.where(same, middle, a), np.where(same, b, middle)
    records = []
    for root in 0.5 * (a + b):
        p = origin + root * unit
        e = 1e-7
        slope = [
            (
                _bilinear_height(heights, spacing, origin_xy, *(p[:2] + e * axis))
                - _bilinear_height(heights, spacing, origin_xy, *(p[:2] - e * axis))
            )
            / (2 * e)
            for axis in np.eye(2)
        ]
        normal = np.array([-slope[0], -slope[1], 1.0])
        normal /= np.linalg.norm(normal)
        if not solid and normal @ unit > 0:
            normal = -normal
        records.append((root, normal))
    return records


def terrain_all(args, solid, origin, direction, max_distance=np.inf, grow=0.0, surface="TRIANGLES"):
    """Every crossing [(t, normal or None on an edge)] by brute force: each triangle hit
    (two-sided), hits within 1e-9 of each other merged (an edge); the solid adds an origin
    inside (0, normal None: -d) and the side walls where the ray passes them under the
    edge profile (entry against the ray, exit along it). ``grow`` widens each triangle
    (Moller-Trumbore's barycentric limits): a closed surface, touched on its edges.
    ``surface="BILINEAR"``: the patches' crossings sampled (bilinear_crossings)."""
    heights, spacing, origin_xy, diagonals = args
    heights = np.asarray(heights, float)
    unit = np.asarray(direction, float) / np.linalg.norm(direction)
    origin = np.asarray(origin, float)
    if surface == "BILINEAR":
        return _with_walls(
            args, solid, origin, unit, max_distance, None, None, None,
            bilinear_crossings(args, solid, origin, unit, max_distance),
        )  # fmt: skip
    vertices = grid_vertices(heights, spacing, origin_xy)
    triangles, _ = grid_triangles(heights.shape, diagonals)
    v0, v1, v2 = (vertices[triangles[:, k]] for k in range(3))
    t = moller_trumbore(origin, unit, v0, v1, v2, grow)
    found = np.flatnonzero((t < np.inf) & (t <= max_distance))
    normals = np.cross(v1[found] - v0[found], v2[found] - v0[found])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    normals *= np.sign(normals[:, 2:3])
    if not solid:
        normals *= np.where(normals @ unit > 0, -1.0, 1.0)[:, None]
    records = []
    for k in np.argsort(t[found], kind="stable"):
        tk = t[found][k]
        if records and tk - records[-1][0] <= 1e-9 * max(1.0, tk):
            if records[-1][1] is not None and not np.allclose(records[-1][1], normals[k]):
                records[-1] = (records[-1][0], None)
            continue
        records.append((tk, normals[k]))
    return _with_walls(args, solid, origin, unit, max_distance, v0, v1, v2, records)


def _with_walls(args, solid, origin, unit, max_distance, v0, v1, v2, records):
    """The solid's origin inside and side walls added to the surface's records (the
    triangles v0, v1, v2 find the height under the origin; None: the bilinear patch)."""
    if not solid:
        return records
    heights, spacing, origin_xy, _ = args
    heights = np.asarray(heights, float)
    ny, nx = heights.shape
    low = np.array(origin_xy, float)
    high = low + np.array(spacing) * [nx - 1, ny - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        ta, tb = (low - origin[:2]) / unit[:2], (high - origin[:2]) / unit[:2]
    inside_xy = (origin[:2] >= low) & (origin[:2] <= high)
    enter = np.where(unit[:2] == 0, np.where(inside_xy, -np.inf, np.inf), np.minimum(ta, tb))
    leave = np.where(unit[:2] == 0, np.where(inside_xy, np.inf, -np.inf), np.maximum(ta, tb))
    t_in, t_out = enter.max(), leave.min()
    if t_in > t_out or t_out < 0:
        return records

    x_lines = low[0] + spacing[0] * np.arange(nx)
    y_lines = low[1] + spacing[1] * np.arange(ny)

    def side(t, sign):
        """The side crossed at t (sign -1 entering, +1 leaving): its outward normal, and
        whether the ray passes it under the edge profile (linear along the side)."""
        axis = int(np.argmax(enter) if sign < 0 else np.argmin(leave))
        high_side = (unit[axis] > 0) == (sign > 0)
        p = origin + t * unit
        if axis == 0:
            profile = heights[:, nx - 1 if high_side else 0]
            under = p[2] <= _edge_profile(y_lines, profile, p[1])
        else:
            profile = heights[ny - 1 if high_side else 0, :]
            under = p[2] <= _edge_profile(x_lines, profile, p[0])
        normal = np.zeros(3)
        normal[axis] = 1.0 if high_side else -1.0
        return normal, under

    if t_in > 0 and t_in <= max_distance:
        normal, under = side(t_in, -1.0)
        if under:
            records.insert(0, (t_in, normal))
    if t_in <= 0:
        if v0 is None:
            under = _bilinear_height(heights, spacing, origin_xy, origin[0], origin[1])
        else:
            vertical = moller_trumbore(
                np.array([origin[0], origin[1], heights.max() + 10]),
                np.array([0, 0, -1.0]),
                v0,
                v1,
                v2,
                1e-12,
            )
            under = heights.max() + 10 - vertical.min()
        if origin[2] <= under:
            records.insert(0, (0.0, None))
    if t_out < np.inf and t_out <= max_distance:
        normal, under = side(t_out, 1.0)
        if under:
            records.append((t_out, normal))
    return records


def random_terrain(rng, ny, nx, diagonals):
    heights = rng.uniform(-1, 2, (ny, nx))
    args = (
        heights,
        (0.7, 0.45),
        (-1.3, 2.1),
        rng.uniform(size=(ny - 1, nx - 1)) < 0.4 if diagonals else None,
    )
    return args


def terrain_rays(rng, args, count):
    heights, spacing, origin_xy, _ = args
    ny, nx = heights.shape
    low = np.array(origin_xy)
    high = low + np.array(spacing) * [nx - 1, ny - 1]
    origins = np.column_stack(
        [rng.uniform(low - 1, high + 1, (count, 2)), rng.uniform(-3, 4, count)]
    )
    targets = np.column_stack([rng.uniform(low, high, (count, 2)), rng.uniform(-1, 2, count)])
    return origins, targets - origins


@pytest.mark.parametrize("solid", [True, False])
@pytest.mark.parametrize("diagonals", [False, True])
def test_terrain_crossings_match_every_triangle(solid, diagonals):
    rng = np.random.default_rng(11 + 2 * solid + diagonals)
    args = random_terrain(rng, 9, 12, diagonals)
    field = Heightfield(args[0], args[1], args[2], diagonals=args[3], solid=solid)
    origins, directions = terrain_rays(rng, args, 150)
    max_distance = np.where(np.arange(150) % 5 == 0, 3.0, np.inf)
    hits = raycast_all(field, origins, directions, max_distance)
    for row in range(len(origins)):
        expected = terrain_all(args, solid, origins[row], directions[row], max_distance[row])
        check_records(hits, row, expected, origins[row], directions[row], 10.0, 1e-9)
    assert_sorted_and_first_is_raycast(field, origins, directions, max_distance)


def test_solid_terrain_walls_entry_and_exit():
    field = Heightfield(np.zeros((3, 3)), solid=True)  # footprint [0, 2]^2, top z = 0
    hits = raycast_all(field, [[-1, 1, -1], [0.5, 1, 1]], [[1, 0, 0], [1, 0, -1]])
    distance, _, normal = records_of(hits, 0)  # in through x = 0, out through x = 2
    assert distance.tolist() == [1.0, 3.0]
    assert normal.tolist() == [[-1, 0, 0], [1, 0, 0]]
    distance, _, normal = records_of(hits, 1)  # down through the top, out through x = 2
    assert distance == pytest.approx([np.sqrt(2), 1.5 * np.sqrt(2)], abs=1e-15)
    assert normal.tolist() == [[0, 0, 1], [1, 0, 0]]


def test_terrain_vertex_graze_is_one_record_and_a_crossing_through_a_vertex_one():
    heights = np.zeros((3, 3))
    heights[1, 1] = 1.0
    for solid in (True, False):
        field = Heightfield(heights, solid=solid)
        # level over the spike's tip: touches it; down through the tip: crosses once there
        hits = raycast_all(field, [[0, 1, 1], [1, 1, 2]], [[1, 0, 0], [0, 0, -1]])
        assert records_of(hits, 0)[0].tolist() == [1.0]
        assert records_of(hits, 1)[0].tolist() == [1.0]


def test_surface_terrain_from_below_and_placed_mirror_matches_world_triangles():
    rng = np.random.default_rng(5)
    args = random_terrain(rng, 7, 8, True)
    matrix = np.array([[1.5, 0.2, 0, 0.3], [0, -0.8, 0.1, 1], [0.2, 0, -2.0, 0.5], [0, 0, 0, 1]])
    field = Heightfield(args[0], args[1], args[2], diagonals=args[3], solid=False)
    placed = Placed(field, matrix)
    origins, directions = terrain_rays(rng, args, 80)
    origins = origins @ matrix[:3, :3].T + matrix[:3, 3]
    directions = directions @ matrix[:3, :3].T
    hits = raycast_all(placed, origins, directions)
    corners = _world_corners(args, matrix)
    for row in range(len(origins)):
        unit = directions[row] / np.linalg.norm(directions[row])
        t = moller_trumbore(origins[row], unit, *corners, 0.0)
        expected = np.unique(np.round(t[t < np.inf], 9))
        distance, _, normal = records_of(hits, row)
        assert distance == pytest.approx(expected, abs=1e-8), row
        assert np.all(np.einsum("ij,j->i", normal, unit) <= 0)
    assert_sorted_and_first_is_raycast(placed, origins, directions)


def _world_corners(args, matrix):
    heights, spacing, origin_xy, diagonals = args
    vertices = grid_vertices(np.asarray(heights), spacing, origin_xy)
    vertices = vertices @ matrix[:3, :3].T + matrix[:3, 3]
    triangles, _ = grid_triangles(np.asarray(heights).shape, diagonals)
    return [vertices[triangles[:, k]] for k in range(3)]


@pytest.mark.parametrize("solid", [True, False])
def test_bilinear_crossings_match_the_sampled_patches(solid):
    rng = np.random.default_rng(51 + solid)
    args = random_terrain(rng, 7, 8, False)
    field = Heightfield(args[0], args[1], args[2], surface="BILINEAR", solid=solid)
    origins, directions = terrain_rays(rng, args, 60)
    hits = raycast_all(field, origins, directions)
    for row in range(len(origins)):
        unit = directions[row] / np.linalg.norm(directions[row])
        expected = terrain_all(args, solid, origins[row], unit, surface="BILINEAR")
        check_records(hits, row, expected, origins[row], directions[row], 1e3, 1e-6)
    assert_sorted_and_first_is_raycast(field, origins, directions)
    assert len(hits.ray) > 60


def test_bad_input_names_the_argument_and_row():
    sphere = Sphere((0, 0, 0), 1.0)
    with pytest.raises(ValueError, match="directions row 1 has zero length"):
        raycast_all(sphere, np.zeros((2, 3)), [[1, 0, 0], [0, 0, 0]])
    with pytest.raises(ValueError, match="origins row 0 is not finite"):
        raycast_all(sphere, [[np.inf, 0, 0]], [[1, 0, 0]])
    with pytest.raises(ValueError, match="max_distance row 1 must be a non-negative"):
        raycast_all(sphere, np.zeros((2, 3)), np.ones((2, 3)), [1.0, -1.0])


def test_no_records_gives_empty_arrays_of_the_right_shape():
    hits = raycast_all(Sphere((0, 0), 1.0), [[5, 5]], [[1, 0]])
    assert hits.ray.shape == (0,) and hits.point.shape == (0, 2) and hits.normal.shape == (0, 2)


# -- the first record is raycast's hit, on every shape (hypothesis) -----------------------------

HEIGHTS = np.array([[0.0, 1.0, 0.5, 2.0], [1.5, -0.5, 1.0, 0.0], [0.25, 2.0, 1.0, 1.0]])
SHAPES = {
    "circle": Sphere((0.5, -0.25), 1.25),
    "sphere": Sphere((0.5, -0.25, 1.0), 1.25),
    "cylinder": Cylinder((0, 0, -1), (0.5, 1, 2), 1.0),
    "tube": Cylinder((0, 0, -1), (0.5, 1, 2), 1.0, capped=False),
    "terrain": Heightfield(HEIGHTS, (1.0, 1.5), (-1.5, -1.5), diagonals=[[0, 1, 0], [1, 0, 0]]),
    "surface": Heightfield(HEIGHTS, (1.0, 1.5), (-1.5, -1.5), solid=False),
    "bilinear terrain": Heightfield(HEIGHTS, (1.0, 1.5), (-1.5, -1.5), surface="BILINEAR"),
    "bilinear surface": Heightfield(
        HEIGHTS, (1.0, 1.5), (-1.5, -1.5), surface="BILINEAR", solid=False
    ),
}
MIRROR = np.array(
    [[-1.5, 0.2, 0.0, 0.5], [0.0, 0.75, 0.3, -1], [0.1, 0.0, 2.0, 0.25], [0, 0, 0, 1]]
)
PLACED = {
    f"placed {name}": Placed(
        shape, MIRROR if shape.dimension == 3 else MIRROR[[0, 1, 3]][:, [0, 1, 3]]
    )
    for name, shape in SHAPES.items()
}

coordinate = st.one_of(
    st.integers(-4, 4).map(float),
    st.floats(-4, 4, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.5, -1.5, 1e6, -1e6]),
)


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(sorted(SHAPES) + sorted(PLACED)),
    rays=st.lists(st.tuples(*[coordinate] * 6), min_size=1, max_size=6),
    max_distance=st.sampled_from([np.inf, 2.0, 5.0]),
)
def test_property_first_record_is_raycasts_hit(name, rays, max_distance):
    shape = {**SHAPES, **PLACED}[name]
    rows = np.array(rays, float)
    dimension = shape.dimension
    origins, directions = rows[:, :dimension], rows[:, 3 : 3 + dimension]
    # Origins 1e6 away on every shape, terrains too (their walk starts where the ray enters
    # the footprint: a far origin costs nothing). A drawn direction from there misses
    # everything, so such a ray is aimed back at the drawn direction's coordinates, taken as
    # a point near the shapes: far rays that meet them.
    far = np.abs(origins).max(axis=1) >= 1e6
    directions[far] = np.clip(directions[far], -4, 4) - origins[far]
    directions[np.all(directions == 0, axis=1), 0] = 1.0
    hits, first_hits, firsts, rows_hit = assert_sorted_and_first_is_raycast(
        shape, origins, directions, max_distance
    )
    normal, expected = hits.normal[firsts], first_hits.normal[rows_hit]
    if "terrain" in name or "surface" in name:
        # on an edge either triangle's normal is the surface's; elsewhere the same one
        point = first_hits.point[rows_hit]
        on_edge = _on_terrain_edge(shape, point)
        normal, expected = normal[~on_edge], expected[~on_edge]
    assert normal == pytest.approx(expected, abs=1e-6)


def _on_terrain_edge(shape, point):
    field = shape.shape if isinstance(shape, Placed) else shape
    if isinstance(shape, Placed):
        point = (point - shape.translation) @ shape.inverse_linear.T
    U = (point[:, 0] - field.origin[0]) / field.spacing[0]
    V = (point[:, 1] - field.origin[1]) / field.spacing[1]

    def near_integer(x):
        return np.abs(x - np.round(x)) < 1e-7

    return near_integer(U) | near_integer(V) | near_integer(U - V) | near_integer(U + V)


# -- ties: a ray through a vertex or along an edge --------------------------------------------


def rays_at_vertices(rng, args, count, along):
    """Rays from above aimed at interior grid vertices (every triangle around the vertex is
    inside the footprint): from random azimuths, down grid lines (a direction component
    exactly 0, so the ray runs along the edge below it), vertically, and across each
    cell's split line (``along`` the other diagonal: through the vertex from one split
    line to the next); elevations 3 to 86 degrees."""
    heights, spacing, origin_xy, _ = args
    ny, nx = heights.shape
    i, j = rng.integers(1, nx - 1, count), rng.integers(1, ny - 1, count)
    target = np.column_stack(
        [origin_xy[0] + i * spacing[0], origin_xy[1] + j * spacing[1], heights[j, i]]
    )
    kind = np.arange(count) % 4
    azimuth = rng.uniform(0, 2 * np.pi, count)
    azimuth[kind == 1] = rng.integers(0, 4, (kind == 1).sum()) * np.pi / 2
    elevation = rng.uniform(0.05, 1.5, count)
    horizontal = np.cos(elevation)
    direction = np.column_stack(
        [np.cos(azimuth) * horizontal, np.sin(azimuth) * horizontal, -np.sin(elevation)]
    )
    axis = np.column_stack([np.round(np.cos(azimuth)), np.round(np.sin(azimuth))])
    direction[kind == 1, :2] = (axis * horizontal[:, None])[kind == 1]  # one component 0
    direction[kind == 2] = (0.0, 0.0, -1.0)
    sign = rng.choice([-1.0, 1.0], (count, 1))
    diagonal = sign * np.multiply(along, spacing)
    direction[kind == 3, :2] = diagonal[kind == 3]
    origin = target - rng.uniform(0.5, 4.0, (count, 1)) * direction
    return origin, direction


def assert_first_record_is_raycasts_hit_exactly(shape, origins, directions):
    hits, first_hits, firsts, rows = assert_sorted_and_first_is_raycast(shape, origins, directions)
    scale = 1.0 + first_hits.distance[rows, None]
    assert np.all(np.abs(hits.point[firsts] - first_hits.point[rows]) <= 1e-12 * scale)
    same = np.all(hits.normal[firsts] == first_hits.normal[rows], axis=1)
    assert same.all(), (rows[~same], hits.normal[firsts][~same], first_hits.normal[rows][~same])
    return len(rows)


@pytest.mark.parametrize("solid", [True, False])
@pytest.mark.parametrize("diagonals", ["main", "anti"])
@pytest.mark.parametrize("integer_heights", [False, True])
def test_first_record_through_a_vertex_or_along_an_edge_has_raycasts_triangle(
    solid, diagonals, integer_heights
):
    """raycast_all's first record is raycast's hit, normal included, where the ray meets
    the terrain on a vertex or an edge, so several triangles hold the point: both pick
    the triangle the ray comes over to reach it (for a vertical ray, or one along a grid
    line, the one on the side the walk nudges it to). Rays along split lines and grid lines,
    into border vertices and grazing vertices: the next test."""
    rng = np.random.default_rng(60 + 4 * solid + 2 * (diagonals == "anti") + integer_heights)
    heights = rng.uniform(-1, 2, (9, 12))
    if integer_heights:  # ties between the heights too
        heights = np.round(2 * heights) / 2
    split = np.full((8, 11), diagonals == "anti")
    args = (heights, (0.7, 0.45), (-1.3, 2.1), split)
    field = Heightfield(heights, args[1], args[2], diagonals=split, solid=solid)
    # across the split lines: along u = -v where cells split along u = v, and back
    along = (1.0, -1.0) if diagonals == "main" else (1.0, 1.0)
    origins, directions = rays_at_vertices(rng, args, 800, along)
    assert assert_first_record_is_raycasts_hit_exactly(field, origins, directions) == 800
    # placed by an exact map (a quarter turn, power-of-two scales): zeros stay zeros
    matrix = np.array([[0, -2, 0, 1.25], [1, 0, 0, -2], [0, 0, 0.5, 3], [0, 0, 0, 1]], float)
    placed = Placed(field, matrix)
    origins = origins @ matrix[:3, :3].T + matrix[:3, 3]
    directions = directions @ matrix[:3, :3].T
    assert assert_first_record_is_raycasts_hit_exactly(placed, origins, directions) == 800


def rays_at_ties(rng, field, count):
    """Rays whose first point on the terrain is a tie decided by rounding, in six kinds:
    along a cell's own split line (both orientations, per cell), aimed at one of its ends
    or at a point between; along a grid line x = const or y = const, aimed at a vertex or
    between two, half of them nearly horizontal (0 to 1 degree down), the others
    descending; from outside the footprint into a border vertex, at its height or just
    above; and nearly horizontal rays through an interior vertex at its height or within
    fractions of its cells' tolerance above or below (grazes: hit or miss by rounding)."""
    heights, (dx, dy), (x0, y0) = field.heights, field.spacing, field.origin
    ny, nx = heights.shape
    kind = np.arange(count) % 6
    i, j = rng.integers(0, nx - 1, count), rng.integers(0, ny - 1, count)
    u, v = np.zeros(count), np.zeros(count)
    horizontal = np.zeros((count, 2))
    elevation = rng.uniform(0.02, 1.4, count)
    # along the split line of cell (i, j): (0, 0)-(1, 1), or (1, 0)-(0, 1) where anti
    anti = np.zeros(count, bool) if field.diagonals is None else field.diagonals[j, i]
    s = np.where(kind == 0, rng.integers(0, 2, count), rng.uniform(0, 1, count))
    split = kind <= 1
    u[split], v[split] = np.where(anti, 1 - s, s)[split], s[split]
    line = np.column_stack([np.where(anti, -dx, dx), np.full(count, dy)])
    horizontal[split] = (rng.choice([-1.0, 1.0], (count, 1)) * line)[split]
    # along x = const (moving in y) and y = const (moving in x)
    between = np.where(rng.uniform(size=count) < 0.5, 0.0, rng.uniform(0, 1, count))
    sign = rng.choice([-1.0, 1.0], count)
    for k, axis in ((2, 1), (3, 0)):
        on = kind == k
        (v if axis == 1 else u)[on] = between[on]
        (i if axis == 1 else j)[on] += rng.integers(0, 2, on.sum())  # the last line too
        horizontal[on, axis] = sign[on]
    grid = (kind == 2) | (kind == 3)
    flat = grid & (rng.uniform(size=count) < 0.5)
    elevation[flat] = rng.uniform(0.0, 0.0175, flat.sum())
    # into a border vertex from outside, inward within 80 degrees of the border's normal
    border = kind == 4
    side = rng.integers(0, 4, count)
    i[border] = np.where(side == 0, 0, np.where(side == 1, nx - 1, rng.integers(0, nx, count)))[
        border
    ]
    j[border] = np.where(side == 2, 0, np.where(side == 3, ny - 1, rng.integers(0, ny, count)))[
        border
    ]
    inward = np.where(
        side == 0, 0.0, np.where(side == 1, np.pi, np.where(side == 2, 0.5, 1.5) * np.pi)
    )
    azimuth = inward + np.where(rng.uniform(size=count) < 0.25, 0.0, rng.uniform(-1.4, 1.4, count))
    # grazing an interior vertex
    graze = kind == 5
    i[graze], j[graze] = rng.integers(1, nx - 1, graze.sum()), rng.integers(1, ny - 1, graze.sum())
    azimuth[graze] = np.where(
        rng.uniform(size=count) < 0.3, rng.integers(0, 8, count) * np.pi / 4, azimuth
    )[graze]
    elevation[graze] = rng.choice([0.0, 1e-9, 1e-3, 0.1], graze.sum())
    turned = border | graze
    horizontal[turned] = np.column_stack([np.cos(azimuth), np.sin(azimuth)])[turned]
    horizontal[turned] = np.where(np.abs(horizontal[turned]) < 1e-15, 0.0, horizontal[turned])
    horizontal /= np.linalg.norm(horizontal, axis=1, keepdims=True)
    x, y = x0 + (i + u) * dx, y0 + (j + v) * dy
    z = field.height_at(x, y)
    tolerance = field._above.tol[np.minimum(j, ny - 2) * nx + np.minimum(i, nx - 2)]
    z[border] += rng.choice([0.0, 1e-13, 0.3], border.sum())
    z[graze] += (rng.choice([0.0, 0.5, 1.0, 1.5, -0.5], count) * tolerance)[graze]
    direction = np.column_stack([horizontal * np.cos(elevation)[:, None], -np.sin(elevation)])
    target = np.column_stack([x, y, z])
    return target - rng.uniform(0.5, 4.0, (count, 1)) * direction, direction


@pytest.mark.parametrize("solid", [True, False])
@pytest.mark.parametrize("diagonals", ["main", "anti", "mixed"])
@pytest.mark.parametrize("integer_heights", [False, True])
def test_first_record_along_split_and_grid_lines_into_border_vertices_and_grazing_is_raycasts(
    solid, diagonals, integer_heights
):
    """raycast_all's first record is raycast's hit bit for bit (the same hit or miss,
    distance, point and normal) where the side of a split line or grid line, the wall or
    the top at a border vertex, or a touch within the tolerance is decided by rounding
    (rays_at_ties), on the terrain as given and placed by an exact map."""
    seed = 80 + 6 * solid + 2 * ["main", "anti", "mixed"].index(diagonals) + integer_heights
    rng = np.random.default_rng(seed)
    heights = rng.uniform(-1, 2, (9, 12))
    if integer_heights:  # ties between the heights too
        heights = np.round(2 * heights) / 2
    split = {"main": False, "anti": True, "mixed": rng.uniform(size=(8, 11)) < 0.5}[diagonals]
    split = np.broadcast_to(split, (8, 11))
    field = Heightfield(heights, (0.7, 0.45), (-1.3, 2.1), diagonals=split, solid=solid)
    origins, directions = rays_at_ties(rng, field, 900)
    assert assert_first_record_is_raycasts_hit_exactly(field, origins, directions) > 700
    matrix = np.array([[0, -2, 0, 1.25], [1, 0, 0, -2], [0, 0, 0.5, 3], [0, 0, 0, 1]], float)
    placed = Placed(field, matrix)
    origins = origins @ matrix[:3, :3].T + matrix[:3, 3]
    directions = directions @ matrix[:3, :3].T
    assert assert_first_record_is_raycasts_hit_exactly(placed, origins, directions) > 700


# -- the backends agree bit for bit ---------------------------------------------------------------


@pytest.mark.parametrize("solid", [True, False])
def test_compiled_terrain_records_equal_the_numpy_reference(solid):
    """kernels/heightfield_crossings.py against crossings.py: the same records, bit for
    bit, on a multi-block terrain with mixed diagonals and exact ties (rounded heights),
    placed or not, rays parallel to the axes and vertical ones, cut by max_distance."""
    from geometry_queries.core.backend import use

    rng = np.random.default_rng(40 + solid)
    heights = np.cumsum(rng.normal(0, 1, (40, 50)), axis=1) * 0.2
    heights[5:12, 5:12] = np.round(heights[5:12, 5:12])
    diagonals = rng.uniform(size=(39, 49)) < 0.5
    field = Heightfield(heights, (0.5, 0.75), (-10, 3), diagonals=diagonals, solid=solid)
    placed = Placed(field, [[0, -1.5, 0, 1], [1, 0, 0.2, 2], [0, 0, -1, 3], [0, 0, 0, 1]])
    for shape in (field, placed):
        origins = rng.uniform((-12, 1, -4), (20, 35, 5), (3000, 3))
        directions = rng.normal(size=(3000, 3))
        directions[:200, :2] = 0.0  # vertical
        directions[200:400, 0] = 0.0  # parallel to the y axis
        if shape is placed:
            origins = origins @ placed.linear.T + placed.translation
        limits = np.where(rng.uniform(size=3000) < 0.3, rng.uniform(0, 10, 3000), np.inf)
        with use("numpy"):
            expected = raycast_all(shape, origins, directions, limits)
        with use("numba"):
            compiled = raycast_all(shape, origins, directions, limits)
        for name in ("ray", "distance", "point", "normal"):
            assert np.array_equal(getattr(compiled, name), getattr(expected, name)), name
        assert len(expected.ray) > 1000
