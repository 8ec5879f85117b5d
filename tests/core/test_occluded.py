"""occluded against independent references, on both backends (tests/core/conftest.py).

A segment is blocked when the shape meets it between 1e-9 of its length after its start
and as much before its end (core/occlusion.py). The references apply that rule to every
crossing of the segment's line: mpmath roots for spheres and cylinders (reference.py),
every triangle of the grid (two-sided) plus the side walls and an inside start for
terrains (test_all_hits.terrain_all). The backends are compared bit for bit on large
batches of random segments (the compiled terrain kernel and the numpy reference).
"""

from functools import partial

import numpy as np
import pytest
import reference
from test_all_hits import random_terrain, terrain_all
from test_backends import SHAPES as BACKEND_SHAPES
from test_backends import random_rays as backend_rays

from geometry_queries.core import Cylinder, Heightfield, Placed, Sphere, occluded
from geometry_queries.core.backend import PARALLEL_MIN, use

# The documented trim, owned by the reference (never core's constant: a reference that
# borrowed it would follow any change to it, and a blocker within the trimmed stretch
# would go unseen by both).
TRIM = 1e-9


def trimmed(start, end):
    """The segment as the ray (origin, unit direction, length) the rule looks along."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    length = np.linalg.norm(end - start)
    unit = (end - start) / length
    trim = TRIM * length
    return start + trim * unit, unit, length - 2 * trim


def blocked_by_records(records, limit):
    return any(t <= limit for t, _ in records)


def test_sphere_segments_through_short_of_tangent_and_from_the_surface():
    sphere = Sphere((0, 0, 0), 1.0)
    starts = [[-3, 0, 0], [-3, 2, 0], [0, 0, 0], [-3, 0, 0], [1, 0, 0], [-3, 1, 0]]
    ends = [[3, 0, 0], [3, 2, 0], [5, 0, 0], [-1, 0, 0], [3, 0, 0], [3, 1, 0]]
    # through; beside; start inside; end on the surface; start on the surface going out;
    # tangent (a touch blocks)
    assert occluded(sphere, starts, ends).tolist() == [True, False, True, False, False, True]


def test_single_segment_gives_a_bool():
    assert occluded(Sphere((0, 0), 1.0), (-2, 0), (2, 0)) is np.True_


@pytest.mark.parametrize("kind", ["sphere", "cylinder", "tube", "circle"])
def test_analytic_shapes_match_mpmath(kind):
    rng = np.random.default_rng(len(kind))
    dimension = 2 if kind == "circle" else 3
    center = np.array([0.3, -0.2, 0.5])[:dimension]
    p0, p1 = np.array([0.2, -0.1, -1.0]), np.array([0.5, 0.3, 1.5])
    shape = {
        "sphere": Sphere(center, 1.2),
        "circle": Sphere(center, 1.2),
        "cylinder": Cylinder(p0, p1, 0.8),
        "tube": Cylinder(p0, p1, 0.8, capped=False),
    }[kind]
    starts = center + rng.normal(0, 2.0, (300, dimension))
    ends = center + rng.normal(0, 2.0, (300, dimension))
    starts[:30] = center + rng.uniform(-0.4, 0.4, (30, dimension))  # inside the solids
    blocked = occluded(shape, starts, ends)
    for row in range(len(starts)):
        origin, unit, limit = trimmed(starts[row], ends[row])
        if kind in ("sphere", "circle"):
            records = reference.sphere_all(origin, unit, center, 1.2)
        elif kind == "cylinder":
            records = reference.cylinder_all(origin, unit, p0, p1, 0.8)
        else:
            records = reference.tube_all(origin, unit, p0, p1, 0.8)
        assert blocked[row] == blocked_by_records(records, limit), row
    assert blocked[:30].all() == (kind != "tube")


def test_far_starts():
    sphere = Sphere((0, 0, 0), 1.0)
    starts = [[-1e6, 0.5, 0], [-1e6, 0.5, 0], [-1e6, 1.0 + 1e-9, 0], [-1e6, 0, 0]]
    ends = [[1e6, 0.5, 0], [-1.0, 0.5, 0], [1e6, 1.0 + 1e-9, 0], [-1.0 - 1e-6, 0, 0]]
    assert occluded(sphere, starts, ends).tolist() == [True, False, False, False]


# A blocker close to either end of a long sightline: the trim is 1e-9 of the length (1 um on
# 1 km), so blockers 1 m, 1 cm and 1 mm from an end block, and the same blockers just past
# that end do not. A trim of 1e-3 or 1e-2 of the length would hide the first or all of them.
SIGHT_START = np.array([120.0, -340.0, 25.0])
SIGHT_UNIT = np.array([0.8, 0.6, 0.0])  # level: a terrain's spike is easy to place under it
SIGHT_LENGTH = 1000.0
GAPS = (1.0, 1e-2, 1e-3)


def blockers_near_the_ends(kind):
    """[(shape, blocks, records)]: for each gap and each end, a blocker centred half the gap
    inside the segment from that end (within 0.1 to 0.9 of the gap from it: blocks), and one
    centred half the gap outside it (does not); ``records(origin, unit)`` gives the
    reference's crossings of a line."""
    side = np.array([-0.6, 0.8, 0.0])  # across the sightline
    cases = []
    for gap in GAPS:
        for at, inward in ((0.0, 1.0), (SIGHT_LENGTH, -1.0)):
            for offset, blocks in ((0.5 * gap, True), (-0.5 * gap, False)):
                centre = SIGHT_START + (at + inward * offset) * SIGHT_UNIT
                size = 0.4 * gap
                if kind == "sphere":
                    shape = Sphere(centre, size)
                    records = partial(reference.sphere_all, center=centre, radius=size)
                elif kind in ("cylinder", "tube"):
                    p0, p1 = centre - size * side, centre + size * side
                    shape = Cylinder(p0, p1, size, capped=kind == "cylinder")
                    solve = reference.cylinder_all if kind == "cylinder" else reference.tube_all
                    records = partial(solve, p0=p0, p1=p1, radius=size)
                else:  # a spike under the sightline's height, its tip above it
                    heights = np.full((3, 3), centre[2] - size)
                    heights[1, 1] = centre[2] + size
                    args = (heights, (size, size), tuple(centre[:2] - size), None)
                    shape = Heightfield(*args[:3], solid=kind == "terrain")
                    records = partial(terrain_all, args, kind == "terrain")
                cases.append((shape, blocks, records))
    return cases


@pytest.mark.parametrize("kind", ["sphere", "cylinder", "tube", "terrain", "surface"])
def test_blockers_near_either_end_of_a_long_sightline(kind):
    end = SIGHT_START + SIGHT_LENGTH * SIGHT_UNIT
    for shape, blocks, records in blockers_near_the_ends(kind):
        assert occluded(shape, SIGHT_START, end) == blocks, (kind, shape, blocks)
        assert occluded(shape, end, SIGHT_START) == blocks, (kind, shape, blocks)
        origin, unit, limit = trimmed(SIGHT_START, end)  # the reference sees the same
        assert blocked_by_records(records(origin, unit), limit) == blocks


def test_placed_mirrored_non_uniform_ellipsoid_matches_mpmath_in_local_space():
    rng = np.random.default_rng(4)
    matrix = np.array([[-2.0, 0.3, 0, 1], [0, 1.0, 0.2, -1], [0.1, 0, 0.5, 2], [0, 0, 0, 1]])
    placed = Placed(Sphere((0.1, 0, 0), 1.0), matrix)
    starts = matrix[:3, 3] + rng.normal(0, 2.5, (200, 3))
    ends = matrix[:3, 3] + rng.normal(0, 2.5, (200, 3))
    blocked = occluded(placed, starts, ends)
    inverse = np.linalg.inv(matrix[:3, :3])
    for row in range(len(starts)):
        # local space keeps the segment's fractions: the trimmed ends map to trimmed ends
        origin, unit, limit = trimmed(starts[row], ends[row])
        local_origin = inverse @ (origin - matrix[:3, 3])
        local_end = inverse @ (origin + limit * unit - matrix[:3, 3])
        local_length = np.linalg.norm(local_end - local_origin)
        records = reference.sphere_all(local_origin, local_end - local_origin, (0.1, 0, 0), 1.0)
        assert blocked[row] == blocked_by_records(records, local_length), row


# -- terrains ---------------------------------------------------------------------------------


def terrain_blocked(args, solid, start, end, grow=0.0):
    """The rule applied to every triangle (grown by ``grow``: touching an edge blocks)."""
    origin, unit, limit = trimmed(start, end)
    return len(terrain_all(args, solid, origin, unit, limit, grow)) > 0


@pytest.mark.parametrize("solid", [True, False])
@pytest.mark.parametrize("diagonals", [False, True])
def test_terrain_segments_match_every_triangle(solid, diagonals):
    rng = np.random.default_rng(21 + 2 * solid + diagonals)
    args = random_terrain(rng, 9, 11, diagonals)
    field = Heightfield(args[0], args[1], args[2], diagonals=args[3], solid=solid)
    heights, spacing, origin_xy, _ = args
    low = np.array(origin_xy)
    high = low + np.array(spacing) * [heights.shape[1] - 1, heights.shape[0] - 1]
    count = 250
    starts = np.column_stack(
        [rng.uniform(low - 1, high + 1, (count, 2)), rng.uniform(-2, 4, count)]
    )
    ends = np.column_stack([rng.uniform(low - 1, high + 1, (count, 2)), rng.uniform(-2, 4, count)])
    blocked = occluded(field, starts, ends)
    for row in range(count):
        assert blocked[row] == terrain_blocked(args, solid, starts[row], ends[row]), row
    assert 0.2 < blocked.mean() < 0.9


@pytest.mark.parametrize("solid", [True, False])
def test_every_vertex_seen_from_above_matches_every_triangle(solid):
    """Segments ending exactly on the vertices (not hidden by the terrain they lie on),
    and the same targets raised a little."""
    rng = np.random.default_rng(8)
    heights = np.round(rng.uniform(0, 3, (8, 9)) * 4) / 4  # ties between vertices, too
    args = (heights, (1.0, 1.0), (0.0, 0.0), None)
    field = Heightfield(heights, solid=solid)
    rows, columns = np.mgrid[0:8, 0:9]
    vertices = np.column_stack([columns.ravel(), rows.ravel(), heights.ravel()]).astype(float)
    observer = np.array([4.0, 3.5, heights.max() - 0.5])
    for raise_by in (0.0, 0.25):
        targets = vertices + [0, 0, raise_by]
        blocked = occluded(field, np.broadcast_to(observer, targets.shape), targets)
        expected = [terrain_blocked(args, solid, observer, t, 1e-9) for t in targets]
        assert blocked.tolist() == expected
        assert 0 < blocked.sum() < len(targets)
    # A target on the surface is visible from just above it.
    assert not occluded(field, vertices + [0, 0, 0.5], vertices).any()


def test_grazing_lines_of_sight_over_a_ridge():
    heights = np.zeros((3, 5))
    heights[:, 2] = 1.0  # a ridge along y at x = 2, height 1
    for solid in (True, False):
        field = Heightfield(heights, solid=solid)
        starts = [[0, 1, 1], [0, 1, 1 + 1e-6], [0, 1, 2], [0, 1, 2.1], [2, 1, 1], [2, 0, 1]]
        ends = [[4, 1, 1], [4, 1, 1 + 1e-6], [4, 1, 0], [4, 1, 0], [4, 1, 1], [2, 2, 1]]
        # level over the crest: touching it blocks, 1e-6 above it does not; down to the
        # far side's vertex touching the crest on the way blocks, 0.05 above it does not;
        # from a point on the crest down the level far side: nothing in between; along
        # the crest line itself: the surface all the way (a touch)
        expected = [True, False, True, False, False, True]
        assert occluded(field, starts, ends).tolist() == expected


def test_start_inside_solids_is_occluded_not_inside_surfaces():
    cylinder = Cylinder((0, 0, 0), (0, 0, 2), 1.0)
    tube = Cylinder((0, 0, 0), (0, 0, 2), 1.0, capped=False)
    start, end = [0, 0, 1], [0, 0, 5]
    assert occluded(cylinder, start, end)
    assert not occluded(tube, start, end)
    terrain = Heightfield(np.zeros((4, 4)))
    assert occluded(terrain, [1.5, 1.5, -1], [1.5, 1.5, -0.5])
    assert occluded(terrain, [1.5, 1.5, -1], [1.5, 1.5, 3])
    assert not occluded(Heightfield(np.zeros((4, 4)), solid=False), [1.5, 1.5, -1], [1, 1, -2])
    # on the surface looking out is not blocked; looking in is
    assert not occluded(terrain, [1.5, 1.5, 0.0], [1.5, 1.5, 3])
    assert occluded(terrain, [1.5, 1.5, 0.0], [1.5, 1.5, -3])


def test_zero_length_segments():
    sphere = Sphere((0, 0, 0), 1.0)
    points = [[0, 0, 0], [1, 0, 0], [2, 0, 0]]
    assert occluded(sphere, points, points).tolist() == [True, True, False]
    tube = Cylinder((0, 0, 0), (0, 0, 2), 1.0, capped=False)
    assert not occluded(tube, [1, 0, 1], [1, 0, 1])


def test_placed_terrain_mirrored_and_scaled():
    rng = np.random.default_rng(9)
    args = random_terrain(rng, 6, 7, True)
    matrix = np.array([[1.5, 0.2, 0, 0.3], [0, -0.8, 0.1, 1], [0.2, 0, -2.0, 0.5], [0, 0, 0, 1]])
    for solid in (True, False):
        field = Heightfield(args[0], args[1], args[2], diagonals=args[3], solid=solid)
        local_starts = np.column_stack([rng.uniform(-2, 5, (120, 2)), rng.uniform(-2, 3, 120)])
        local_ends = np.column_stack([rng.uniform(-2, 5, (120, 2)), rng.uniform(-2, 3, 120)])
        starts = local_starts @ matrix[:3, :3].T + matrix[:3, 3]
        ends = local_ends @ matrix[:3, :3].T + matrix[:3, 3]
        blocked = occluded(Placed(field, matrix), starts, ends)
        # an affine map keeps the fractions along a segment: the local segment decides
        expected = [terrain_blocked(args, solid, s, e) for s, e in zip(local_starts, local_ends)]
        assert blocked.tolist() == expected


def test_bad_rows_are_named():
    with pytest.raises(ValueError, match="ends row 1 is not finite"):
        occluded(Sphere((0, 0, 0), 1.0), np.zeros((2, 3)), [[1, 0, 0], [np.nan, 0, 0]])
    with pytest.raises(ValueError, match="starts row 0 is not finite"):
        occluded(Heightfield(np.zeros((3, 3))), [[np.inf, 0, 0]], [[1, 0, 0]])
    with pytest.raises(ValueError, match="starts has 2 rows but ends has 1"):
        occluded(Sphere((0, 0, 0), 1.0), np.zeros((2, 3)), [[1, 0, 0]])


# -- the backends agree bit for bit -------------------------------------------------------------


@pytest.mark.parametrize("surface", ["TRIANGLES", "BILINEAR"])
@pytest.mark.parametrize("solid", [True, False])
def test_compiled_terrain_kernel_equals_the_numpy_reference(solid, surface):
    rng = np.random.default_rng(30 + solid)
    heights = np.cumsum(rng.normal(0, 1, (70, 90)), axis=1) * 0.2  # several blocks
    diagonals = rng.uniform(size=(69, 89)) < 0.5 if surface == "TRIANGLES" else None
    field = Heightfield(
        heights, (0.5, 0.75), (-10, 3), surface=surface, diagonals=diagonals, solid=solid
    )
    placed = Placed(field, [[0, -1.5, 0, 1], [1, 0, 0.2, 2], [0, 0, -1, 3], [0, 0, 0, 1]])
    count = 2 * PARALLEL_MIN + 7  # the threaded path
    for shape in (field, placed):
        starts = rng.uniform((-12, 1, -4), (40, 60, 5), (count, 3))
        ends = rng.uniform((-12, 1, -4), (40, 60, 5), (count, 3))
        if shape is placed:
            starts, ends = (p @ placed.linear.T + placed.translation for p in (starts, ends))
        ends[:50] = starts[:50]  # zero-length segments
        with use("numpy"):
            expected = occluded(shape, starts, ends)
        with use("numba"):
            compiled = occluded(shape, starts, ends)
            assert np.array_equal(compiled, expected)
            assert np.array_equal(occluded(shape, starts[:100], ends[:100]), expected[:100])
        assert 0.1 < expected.mean() < 0.95


@pytest.mark.parametrize("name", list(BACKEND_SHAPES))
def test_compiled_analytic_kernels_equal_the_numpy_reference(name):
    shape = BACKEND_SHAPES[name]
    count = 2 * PARALLEL_MIN + 7  # the threaded path
    starts, moves = backend_rays(count, shape.dimension, seed=len(name))
    ends = starts + moves * 0.05
    ends[::23] = starts[::23]  # zero-length segments
    with use("numpy"):
        expected = occluded(shape, starts, ends)
    with use("numba"):
        assert np.array_equal(occluded(shape, starts, ends), expected)
        assert np.array_equal(occluded(shape, starts[:99], ends[:99]), expected[:99])
    assert expected.any() and not expected.all()


def test_the_compiled_segment_is_the_numpy_segment_bit_for_bit():
    """The kernels' trimmed segment (kernels.rays.segment_ray) is occlusion.segment_rays plus
    the trim, to the last bit: both backends look along the same ray (a rounding
    difference could turn a grazing line of sight around). Segments of every magnitude, in
    3D and 2D (z = 0), and a zero-length one."""
    numba = pytest.importorskip("numba")
    from geometry_queries.core.kernel_common import segment_ray
    from geometry_queries.core.queries import ON_SEGMENT_END
    from geometry_queries.core.reference import segment_rays

    # A kernel helper has no Python wrapper (kernels.rays.helper): called through a kernel.
    @numba.njit
    def compiled_segment_ray(sx, sy, sz, ex, ey, ez, trim, dimension):
        return segment_ray(sx, sy, sz, ex, ey, ez, trim, dimension)

    rng = np.random.default_rng(11)
    scale = 10.0 ** rng.integers(-150, 150, (400, 1))
    for dimension in (3, 2):
        starts = rng.normal(size=(400, dimension)) * scale
        ends = starts + rng.normal(size=(400, dimension)) * scale
        ends[0] = starts[0]  # a zero-length segment
        unit, length = segment_rays(starts, ends)
        trim = ON_SEGMENT_END * length
        origin = starts + trim[:, None] * unit
        for i in range(len(starts)):
            s, e = np.zeros(3), np.zeros(3)
            s[:dimension], e[:dimension] = starts[i], ends[i]
            got = compiled_segment_ray(*s, *e, ON_SEGMENT_END, dimension)
            expected = (*origin[i], *unit[i], length[i] - 2.0 * trim[i], length[i])
            if dimension == 2:  # the kernel's z (start z + trim * 0) and uz (0) beside them
                expected = (*origin[i], 0.0, *unit[i], 0.0, length[i] - 2.0 * trim[i], length[i])
            assert got == expected, i
