"""Sphere cast vs sphere against an mpmath closed form, brute force and ray casts."""

import numpy as np
import pytest
import reference
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from geometry_queries.core import Heightfield, Placed, Sphere, raycast, sphere_cast

CENTER = np.array([0.5, -0.25, 1.0])
RADIUS = 1.2


def assert_matches_cast_reference(casts, starts, ends, cast_radius, center, radius, skip=()):
    for row in range(len(starts)):
        if row in skip:
            continue
        expected = reference.sphere_cast_sphere(starts[row], ends[row], cast_radius, center, radius)
        if expected is None:
            assert not casts.hit[row], f"row {row}: false hit"
            assert np.isnan(casts.center[row]).all() and np.isinf(casts.distance[row])
            continue
        s = float(expected[0])
        moving, point, normal = (np.array([float(v) for v in part]) for part in expected[1:])
        assert casts.hit[row], f"row {row}: missed, reference distance {s}"
        assert abs(casts.distance[row] - s) < 1e-9
        np.testing.assert_allclose(casts.center[row], moving, atol=1e-9)
        np.testing.assert_allclose(casts.point[row], point, atol=1e-9)
        np.testing.assert_allclose(casts.normal[row], normal, atol=1e-8)


def test_random_casts_match_mpmath_and_touch_without_overlap_before():
    rng = np.random.default_rng(21)
    n = 300
    starts = rng.uniform(-6, 6, (n, 3))
    ends = rng.uniform(-3, 3, (n, 3)) + rng.uniform(-1, 1, (n, 1)) * starts
    cast_radius = 0.4
    casts = sphere_cast(Sphere(CENTER, RADIUS), starts, ends, cast_radius)
    assert 40 < casts.hit.sum() < 280
    assert_matches_cast_reference(casts, starts, ends, cast_radius, CENTER, RADIUS)
    reach = RADIUS + cast_radius
    for row in np.flatnonzero(casts.hit & (casts.distance > 0)):
        # The moving sphere touches the target at the contact and overlaps it nowhere before.
        assert abs(np.linalg.norm(casts.center[row] - CENTER) - reach) < 1e-9
        unit = (ends[row] - starts[row]) / np.linalg.norm(ends[row] - starts[row])
        earlier = (
            starts[row] + np.linspace(0, casts.distance[row], 300, endpoint=False)[:, None] * unit
        )
        assert (np.linalg.norm(earlier - CENTER, axis=1) > reach * (1 - 1e-12)).all()
        # The contact point is on both spheres' surfaces.
        assert abs(np.linalg.norm(casts.point[row] - CENTER) - RADIUS) < 1e-9
        assert abs(np.linalg.norm(casts.point[row] - casts.center[row]) - cast_radius) < 1e-9


def test_start_in_overlap_is_distance_zero_with_nearest_target_point():
    start = CENTER + np.array([0.0, 1.5, 0.0])  # 1.5 from the centre: within 1.2 + 0.5
    casts = sphere_cast(Sphere(CENTER, RADIUS), start, start + [5, 0, 0], 0.5)
    assert casts.hit and casts.distance == 0.0
    np.testing.assert_array_equal(casts.center, start)
    np.testing.assert_allclose(casts.point, CENTER + [0, RADIUS, 0], atol=1e-15)
    np.testing.assert_allclose(casts.normal, [0, 1, 0], atol=1e-15)
    # Starting at the target's very centre: the normal faces back along the cast.
    casts = sphere_cast(Sphere(CENTER, RADIUS), CENTER, CENTER + [0, 0, 2], 0.5)
    assert casts.hit and casts.distance == 0.0
    np.testing.assert_array_equal(casts.normal, [0, 0, -1])


def test_zero_length_casts():
    sphere = Sphere((0, 0, 0), 1.0)
    casts = sphere_cast(sphere, [[3, 0, 0], [1.4, 0, 0]], [[3, 0, 0], [1.4, 0, 0]], 0.5)
    np.testing.assert_array_equal(casts.hit, [False, True])
    assert casts.distance[1] == 0.0
    np.testing.assert_array_equal(casts.point[1], [1, 0, 0])
    # Zero length at the target's very centre: no direction at all, the normal faces up.
    casts = sphere_cast(sphere, [0, 0, 0], [0, 0, 0], 0.5)
    assert casts.hit and casts.distance == 0.0
    np.testing.assert_array_equal(casts.normal, [0, 0, 1])
    np.testing.assert_array_equal(casts.point, [0, 0, 1])


def test_zero_radius_cast_equals_ray_cast_clipped_to_the_segment():
    rng = np.random.default_rng(22)
    n = 500
    starts = rng.uniform(-5, 5, (n, 3))
    starts[np.linalg.norm(starts - CENTER, axis=1) <= RADIUS] += 10.0  # starts outside
    ends = rng.uniform(-3, 3, (n, 3))
    sphere = Sphere(CENTER, RADIUS)
    casts = sphere_cast(sphere, starts, ends, 0.0)
    rays = raycast(
        sphere, starts, ends - starts, max_distance=np.linalg.norm(ends - starts, axis=1)
    )
    np.testing.assert_array_equal(casts.hit, rays.hit)
    assert casts.hit.any() and not casts.hit.all()
    np.testing.assert_allclose(
        casts.distance[casts.hit], rays.distance[rays.hit], rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(casts.point[casts.hit], rays.point[rays.hit], atol=1e-12)
    np.testing.assert_allclose(casts.normal[casts.hit], rays.normal[rays.hit], atol=1e-12)


def test_segment_end_is_inclusive():
    casts = sphere_cast(
        Sphere((0, 0, 0), 1.0), [[-5, 0, 0], [-5, 0, 0]], [[-1.5, 0, 0], [-1.6, 0, 0]], 0.5
    )
    np.testing.assert_array_equal(casts.hit, [True, False])


def test_disc_cast_in_2d():
    casts = sphere_cast(Sphere((0, 0), 1.0), [-5, 1.2], [5, 1.2], 0.5)
    assert casts.hit
    expected = 5 - np.sqrt(1.5**2 - 1.2**2)
    assert abs(casts.distance - expected) < 1e-12
    np.testing.assert_allclose(casts.normal, [-np.sqrt(1.5**2 - 1.2**2) / 1.5, 0.8], atol=1e-12)


def test_placed_sphere_with_rotation_and_uniform_scale():
    angle = 0.7
    rotation = np.array(
        [[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0], [0, 0, 1]]
    )
    matrix = np.eye(4)
    matrix[:3, :3] = 2.5 * rotation
    matrix[:3, 3] = [1.0, -2.0, 0.5]
    local = Sphere((0.2, 0.1, -0.3), 0.8)
    world = Sphere(matrix[:3, :3] @ local.center + matrix[:3, 3], 0.8 * 2.5)
    rng = np.random.default_rng(23)
    starts = rng.uniform(-8, 8, (200, 3))
    ends = rng.uniform(-3, 3, (200, 3))
    placed = sphere_cast(Placed(local, matrix), starts, ends, 0.3)
    direct = sphere_cast(world, starts, ends, 0.3)
    np.testing.assert_array_equal(placed.hit, direct.hit)
    assert placed.hit.sum() > 20
    for name in ("distance", "center", "point", "normal"):
        a, b = getattr(placed, name)[placed.hit], getattr(direct, name)[direct.hit]
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9, err_msg=name)


def test_non_uniform_placement_and_unsupported_targets_raise():
    with pytest.raises(ValueError, match="non-uniform scale"):
        sphere_cast(
            Placed(Sphere((0, 0, 0), 1), np.diag([1, 2, 1, 1.0])), [0, 0, 5], [0, 0, -5], 0.1
        )
    # A BILINEAR terrain is still unsupported, bare or placed.
    terrain = Heightfield(np.zeros((3, 3)), spacing=(1, 1), origin=(0, 0), surface="BILINEAR")
    with pytest.raises(ValueError, match="support TRIANGLES terrains.*bilinear"):
        sphere_cast(terrain, [0, 0, 5], [0, 0, -5], 0.1)
    with pytest.raises(ValueError, match="support TRIANGLES terrains.*bilinear"):
        sphere_cast(Placed(terrain, np.eye(4)), [0, 0, 5], [0, 0, -5], 0.1)
    with pytest.raises(ValueError, match="radius"):
        sphere_cast(Sphere((0, 0, 0), 1), [0, 0, 5], [0, 0, -5], -0.1)


finite = st.floats(-8, 8, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(
    start=arrays(np.float64, 3, elements=finite),
    end=arrays(np.float64, 3, elements=finite),
    cast_radius=st.floats(0, 2),
    radius=st.floats(0.05, 3),
)
def test_property_matches_mpmath(start, end, cast_radius, radius):
    casts = sphere_cast(Sphere(CENTER, radius), start[None], end[None], cast_radius)
    reach = radius + cast_radius
    segment = end - start
    length = np.linalg.norm(segment)
    # Skip rounding-decided cases: start on the reach sphere, tangent, or contact at the end.
    m = start - CENTER
    gap = np.linalg.norm(m - (m @ segment) / (length**2) * segment) if length > 0 else np.inf
    fragile = (
        abs(np.linalg.norm(m) - reach) < 1e-9
        or abs(gap - reach) < 1e-9
        or abs(np.linalg.norm(end - CENTER) - reach) < 1e-9
    )
    assert_matches_cast_reference(
        casts, start[None], end[None], cast_radius, CENTER, radius, skip=(0,) if fragile else ()
    )
