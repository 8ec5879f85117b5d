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


# Rays passing within RIM_SLACK of a rim circle may take the cap or the side by rounding
# (the two meet there, with different normals), and one grazing the rim may hit or miss:
# those alone are left out. Core's rounding moves a feature by ~1e-15 of the coordinates
# (a few units here), far below RIM_SLACK, so every ray passing farther from the rims
# must take the reference's feature: hit or miss, distance and point to 1e-9, normal to
# 1e-7, as everywhere else.
RIM_SLACK = 1e-9


def rim_distance(origin, direction, reach=20.0):
    """How close the ray (t in [0, reach]) comes to either rim circle: the smallest of
    sqrt((radial - r)^2 + (z - cap)^2), sampled every 1e-3 and each local minimum refined
    by golden-section search to ~1e-14 (the distance is smooth near the rims)."""
    unit = direction / np.linalg.norm(direction)

    def to_rims(t):
        rel = origin + np.multiply.outer(t, unit) - P0
        z = rel @ AXIS
        radial = np.linalg.norm(rel - z[..., None] * AXIS, axis=-1)
        return np.minimum(np.hypot(radial - RADIUS, z), np.hypot(radial - RADIUS, z - HEIGHT))

    ts = np.linspace(0.0, reach, 20001)
    values = to_rims(ts)
    step = ts[1] - ts[0]
    lowest = np.flatnonzero(
        (values <= np.r_[np.inf, values[:-1]]) & (values <= np.r_[values[1:], np.inf])
    )
    a, b = np.maximum(ts[lowest] - step, 0.0), np.minimum(ts[lowest] + step, reach)
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(80):
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        left = to_rims(c) <= to_rims(d)
        a, b = np.where(left, a, c), np.where(left, d, b)
    return min(values.min(), to_rims(0.5 * (a + b)).min())


def near_boundary_ambiguity(origins, directions, slack=RIM_SLACK):
    """Rays whose classification can flip with input rounding: passing within ``slack`` of
    a rim circle (near-tangency to the side is _near_tangent's)."""
    return [rim_distance(o, d) < slack for o, d in zip(origins, directions)]


def rays_near_the_rims(rng, count):
    """Rays aimed at points log-uniformly 1e-9 to 2e-3 from a rim circle (either rim, any
    angle around it, any direction in its meridian plane: outside, over the cap, inside
    the side), from random origins; each passes at most that far from the rim."""
    angle = rng.uniform(0, 2 * np.pi, count)
    helper = np.array([1.0, 0.0, 0.0])
    u = np.cross(AXIS, helper)
    u /= np.linalg.norm(u)
    v = np.cross(AXIS, u)
    radial = np.outer(np.cos(angle), u) + np.outer(np.sin(angle), v)
    cap = rng.integers(0, 2, count)[:, None] * HEIGHT
    rim = P0 + RADIUS * radial + cap * AXIS
    offset = 10.0 ** rng.uniform(-9, np.log10(2e-3), count)
    turn = rng.uniform(0, 2 * np.pi, count)[:, None]
    aims = rim + offset[:, None] * (np.cos(turn) * radial + np.sin(turn) * AXIS)
    origins = rng.uniform(-4, 5, (count, 3))
    return origins, aims - origins, offset


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
    near_rim=st.one_of(st.none(), st.integers(0, 2**32 - 1)),
)
def test_property_matches_mpmath(origin, target, axis_dir, near_rim):
    """Random rays, including rays exactly parallel to an axis and rays aimed within 1e-9
    to 2e-3 of a rim, against the tilted cylinder."""
    if near_rim is not None:
        _, aims, _ = rays_near_the_rims(np.random.default_rng(near_rim), 1)
        target, axis_dir = aims[0] + origin, None
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


def test_rays_near_the_rims_match_mpmath():
    """Rays passing 1e-9 to 2e-3 from a rim take the reference's cap or side, or miss with
    it: only those within RIM_SLACK are left out."""
    rng = np.random.default_rng(14)
    origins, directions, offset = rays_near_the_rims(rng, 400)
    hits = raycast(Cylinder(P0, P1, RADIUS), origins, directions)
    ambiguous = [
        rim_distance(o, d) < RIM_SLACK or _near_tangent(o, d) for o, d in zip(origins, directions)
    ]
    assert sum(ambiguous) <= 40
    assert (offset[~np.array(ambiguous)] < 1e-6).sum() >= 100  # within a micrometre, too
    assert 100 < hits.hit.sum() < 390
    assert_matches_reference(
        hits,
        origins,
        directions,
        lambda o, d: reference.ray_cylinder(o, d, P0, P1, RADIUS),
        ambiguous=lambda row: ambiguous[row],
    )
    assert_no_earlier_hit(hits, origins, directions, cylinder_inside)


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
