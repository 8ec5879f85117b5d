"""Ray vs finite capped cylinder against an mpmath candidate-root reference and brute force."""

import numpy as np
import pytest
import reference
from checks import assert_matches_reference, assert_no_earlier_hit
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from geometry_queries.core import Cylinder, raycast

P0 = np.array([0.2, -0.4, 0.1])
P1 = np.array([1.0, 0.6, 2.3])
RADIUS = 0.8
AXIS = (P1 - P0) / np.linalg.norm(P1 - P0)
HEIGHT = np.linalg.norm(P1 - P0)


def cylinder_inside(points, slack, p0=P0, axis=AXIS, height=HEIGHT, radius=RADIUS):
    rel = points - p0
    z = rel @ axis
    radial = np.linalg.norm(rel - z[:, None] * axis, axis=1)
    return (radial <= radius * (1 + slack)) & (z >= -slack * height) & (z <= height * (1 + slack))


def outward(points):
    """Outward normal of the tilted test cylinder at boundary points."""
    rel = points - P0
    z = rel @ AXIS
    radial = rel - z[:, None] * AXIS
    normals = radial / np.linalg.norm(radial, axis=1, keepdims=True)
    normals[np.isclose(z, 0, atol=1e-9)] = -AXIS
    normals[np.isclose(z, HEIGHT, atol=1e-9)] = AXIS
    return normals


def near_boundary_ambiguity(origins, directions, slack=1e-9):
    """Rays whose classification can flip with input rounding: nearly tangent to the side,
    or passing within ``slack`` of the rim circles (sampled densely along the ray)."""
    flags = []
    unit = directions / np.linalg.norm(directions, axis=1, keepdims=True)
    for o, d in zip(origins, unit):
        ts = np.linspace(0, 20, 20001)
        points = o + ts[:, None] * d
        rel = points - P0
        z = rel @ AXIS
        radial = np.linalg.norm(rel - z[:, None] * AXIS, axis=1)
        near_rim = (np.abs(radial - RADIUS) < 2e-3) & (
            (np.abs(z) < 2e-3) | (np.abs(z - HEIGHT) < 2e-3)
        )
        flags.append(bool(near_rim.any()))
    return flags


def test_random_rays_match_mpmath():
    rng = np.random.default_rng(11)
    origins = rng.uniform(-4, 5, (300, 3))
    targets = P0 + rng.uniform(0, 1, (300, 1)) * (P1 - P0) + rng.uniform(-1.2, 1.2, (300, 3))
    directions = targets - origins
    hits = raycast(Cylinder(P0, P1, RADIUS), origins, directions)
    assert 60 < hits.hit.sum() < 290
    ambiguous = near_boundary_ambiguity(origins, directions)
    assert_matches_reference(
        hits,
        origins,
        directions,
        lambda o, d: reference.ray_cylinder(o, d, P0, P1, RADIUS),
        ambiguous=lambda row: ambiguous[row],
    )
    assert_no_earlier_hit(hits, origins, directions, cylinder_inside)
    rows = hits.hit & (hits.distance > 0) & ~np.array(ambiguous)
    np.testing.assert_allclose(np.linalg.norm(hits.normal[rows], axis=1), 1, atol=1e-12)
    np.testing.assert_allclose(hits.normal[rows], outward(hits.point[rows]), atol=1e-7)


# An upright cylinder makes the named cases easy to state exactly.
UPRIGHT = Cylinder((0, 0, 0), (0, 0, 2), 1.0)


def test_side_and_both_caps():
    origins = [[-5, 0, 1], [0.3, 0.2, 5], [0.3, 0.2, -5]]
    directions = [[1, 0, 0], [0, 0, -1], [0, 0, 1]]
    hits = raycast(UPRIGHT, origins, directions)
    np.testing.assert_array_equal(hits.distance, [4, 3, 5])
    np.testing.assert_array_equal(hits.normal, [[-1, 0, 0], [0, 0, 1], [0, 0, -1]])
    np.testing.assert_array_equal(hits.point, [[-1, 0, 1], [0.3, 0.2, 2], [0.3, 0.2, 0]])


@pytest.mark.parametrize(
    "origin, direction, expected",
    [
        ([0.5, 0, 5], [0, 0, -1], 3.0),  # parallel to the axis, inside the radius: top cap
        ([0.5, 0, -5], [0, 0, 1], 5.0),  # ... from below: bottom cap
        ([1.0, 0, 5], [0, 0, -1], 3.0),  # exactly on the radius: grazes the side, hits the rim
        ([1.5, 0, 5], [0, 0, -1], None),  # parallel, outside the radius
        ([0.5, 0, 1], [0, 0, 1], 0.0),  # parallel, origin inside
        ([0.5, 0, 3], [0, 0, 1], None),  # parallel, moving away above
    ],
)
def test_axis_parallel_rays(origin, direction, expected):
    hits = raycast(UPRIGHT, origin, direction)
    if expected is None:
        assert not hits.hit
    else:
        assert hits.hit and hits.distance == expected


@pytest.mark.parametrize(
    "origin, direction, expected",
    [
        ([-5, 0, 2], [1, 0, 0], 4.0),  # along the top cap plane: touches the rim
        ([-5, 0, 0], [1, 0, 0], 4.0),  # along the bottom cap plane
        ([-5, 0, 2 + 1e-12], [1, 0, 0], None),  # just above the top
        ([-3, 0, 4], [1, 0, -1], 2 * np.sqrt(2)),  # diagonal through the rim point (-1, 0, 2)
        ([-5, 1, 1], [1, 0, 0], 5.0),  # tangent to the side
    ],
)
def test_rim_and_tangent_rays(origin, direction, expected):
    hits = raycast(UPRIGHT, origin, direction)
    if expected is None:
        assert not hits.hit
    else:
        assert hits.hit and abs(hits.distance - expected) < 1e-12


def test_origin_inside_and_on_the_surface():
    origins = [[0, 0, 1], [1, 0, 1], [0, 0, 2], [0, 0, 0], [1, 0, 2]]
    directions = [[1, 0, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0], [1, 1, 1]]
    hits = raycast(UPRIGHT, origins, directions)
    assert hits.hit.all() and (hits.distance == 0).all()
    unit = np.array(directions, float) / np.linalg.norm(directions, axis=1, keepdims=True)
    np.testing.assert_allclose(hits.normal, -unit)
    np.testing.assert_array_equal(hits.point, origins)


def test_rays_parallel_to_the_caps_between_them():
    hits = raycast(UPRIGHT, [[-3, 0.5, 0.7], [-3, 2, 0.7]], [[1, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(hits.hit, [True, False])
    assert abs(hits.distance[0] - (3 - np.sqrt(0.75))) < 1e-15


def test_far_origins():
    rng = np.random.default_rng(12)
    n = 100
    away = rng.normal(size=(n, 3))
    away /= np.linalg.norm(away, axis=1, keepdims=True)
    origins = 1e6 * away
    targets = rng.uniform([-0.9, -0.9, 0.1], [0.9, 0.9, 1.9], (n, 3)) * [[0.7, 0.7, 1]]
    directions = targets - origins
    hits = raycast(UPRIGHT, origins, directions)
    assert hits.hit.all()
    assert_matches_reference(
        hits,
        origins,
        directions,
        lambda o, d: reference.ray_cylinder(o, d, (0, 0, 0), (0, 0, 2), 1.0),
        tolerance=1e-9,
        relative=False,
    )


finite = st.floats(-6, 6, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(
    origin=arrays(np.float64, 3, elements=finite),
    target=arrays(np.float64, 3, elements=st.floats(-2, 2)),
    axis_dir=st.sampled_from([None, (1, 0, 0), (0, 1, 0), (0, 0, 1)]),
)
def test_property_matches_mpmath(origin, target, axis_dir):
    """Random rays, including rays exactly parallel to an axis, against the tilted cylinder."""
    direction = np.array(axis_dir, float) if axis_dir else target - origin
    if np.linalg.norm(direction) < 1e-3:
        direction = np.array([0.0, 0.0, 1.0])
    hits = raycast(Cylinder(P0, P1, RADIUS), origin[None], direction[None])
    ambiguous = near_boundary_ambiguity(origin[None], direction[None])
    inside_gap = cylinder_inside(origin[None], 1e-9) & ~cylinder_inside(origin[None], -1e-9)
    assert_matches_reference(
        hits,
        origin[None],
        direction[None],
        lambda o, d: reference.ray_cylinder(o, d, P0, P1, RADIUS),
        ambiguous=lambda row: (
            ambiguous[row] or bool(inside_gap[0]) or _near_tangent(origin, direction)
        ),
    )
    assert_no_earlier_hit(hits, origin[None], direction[None], cylinder_inside)


def _near_tangent(origin, direction):
    """The ray's line passes within 1e-9 of the side's radius (side tangency)."""
    unit = direction / np.linalg.norm(direction)
    rel = origin - P0
    q = rel - (rel @ AXIS) * AXIS
    e = unit - (unit @ AXIS) * AXIS
    a = e @ e
    if a < 1e-12:
        return abs(np.linalg.norm(q) - RADIUS) < 1e-9
    closest = q - (q @ e) / a * e
    return abs(np.linalg.norm(closest) - RADIUS) < 1e-9


def test_mixed_batch_equals_single_rays():
    """Axis-parallel and cap-parallel rays mixed with general ones in one chunk give the
    same answers as alone (the kernels take whole-chunk fast paths when none are present)."""
    rng = np.random.default_rng(13)
    origins = rng.uniform(-3, 3, (60, 3))
    directions = rng.normal(size=(60, 3))
    directions[::5] = [0, 0, 1]
    directions[1::5] = [1, 0, 0]
    origins[2::5] = [[0.5, 0.5, 1.0]]
    hits = raycast(UPRIGHT, origins, directions)
    assert hits.hit.sum() > 10
    for row in range(60):
        single = raycast(UPRIGHT, origins[row], directions[row])
        assert single.hit == hits.hit[row]
        np.testing.assert_array_equal(single.distance, hits.distance[row])
        np.testing.assert_array_equal(single.normal, hits.normal[row])


@pytest.mark.parametrize(
    "axis", [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
)
def test_axis_aligned_cylinders_in_every_orientation_match_mpmath(axis):
    """Cylinders along a coordinate axis (either way) take the component-picking frame;
    hits, points and normals still match the reference, side and caps alike."""
    p0 = np.array([0.3, -0.2, 0.5])
    p1 = p0 + 1.7 * np.array(axis, float)
    rng = np.random.default_rng(5)
    origins = rng.uniform(-4, 4, (200, 3))
    targets = p0 + rng.uniform(0, 1, (200, 1)) * (p1 - p0) + rng.uniform(-1, 1, (200, 3))
    directions = targets - origins
    directions[:20] = np.array(axis, float) * rng.choice([-1, 1], (20, 1))  # along the axis
    origins[:20] = p0 + rng.uniform(-1.2, 1.2, (20, 3)) * (1 - np.abs(axis)) - 3 * (p1 - p0)
    hits = raycast(Cylinder(p0, p1, 0.9), origins, directions)
    assert 40 < hits.hit.sum() < 190 and hits.hit[:20].any() and not hits.hit[:20].all()
    assert_matches_reference(
        hits, origins, directions, lambda o, d: reference.ray_cylinder(o, d, p0, p1, 0.9)
    )
