"""Ray vs sphere (3D) and circle (2D) against an mpmath closed form and brute force."""

import numpy as np
import pytest
import reference
from checks import assert_matches_reference, assert_no_earlier_hit, assert_unit_outward
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from geometry_queries.core import Placed, Sphere, raycast

CENTER = np.array([0.3, -0.2, 0.5])
RADIUS = 1.7


def sphere_inside(points, slack):
    return np.linalg.norm(points - CENTER, axis=1) <= RADIUS * (1 + slack)


def closest_gap(origins, directions, center):
    """Distance from the centre to each ray's line (float64, for near-tangent detection)."""
    unit = directions / np.linalg.norm(directions, axis=1, keepdims=True)
    m = origins - center
    return np.linalg.norm(m - np.sum(m * unit, axis=1)[:, None] * unit, axis=1)


def random_rays(rng, n, dimension=3, spread=5.0):
    origins = rng.uniform(-spread, spread, (n, dimension))
    targets = rng.uniform(-2.5, 2.5, (n, dimension))
    return origins, targets - origins


def test_random_rays_match_mpmath():
    rng = np.random.default_rng(1)
    origins, directions = random_rays(rng, 300)
    hits = raycast(Sphere(CENTER, RADIUS), origins, directions)
    assert 50 < hits.hit.sum() < 280
    assert_matches_reference(
        hits, origins, directions, lambda o, d: reference.ray_sphere(o, d, CENTER, RADIUS)
    )
    assert_no_earlier_hit(hits, origins, directions, sphere_inside)
    assert_unit_outward(hits, lambda p: (p - CENTER) / RADIUS)


def test_circle_2d_matches_mpmath():
    rng = np.random.default_rng(2)
    center = np.array([1.0, -0.5])
    origins, directions = random_rays(rng, 200, dimension=2)
    hits = raycast(Sphere(center, 1.25), origins, directions)
    assert hits.point.shape == (200, 2) and hits.normal.shape == (200, 2)
    assert 30 < hits.hit.sum() < 190
    assert_matches_reference(
        hits, origins, directions, lambda o, d: reference.ray_sphere(o, d, center, 1.25)
    )


def test_tangent_ray_hits_in_2d_and_3d():
    # Exactly tangent: the discriminant is zero, which counts as a hit.
    hits3 = raycast(Sphere((0, 0, 0), 2.0), [[-5, 2, 0], [-5, 0, 2]], [[1, 0, 0], [3, 0, 0]])
    assert hits3.hit.all()
    np.testing.assert_array_equal(hits3.distance, [5.0, 5.0])
    np.testing.assert_array_equal(hits3.point, [[0, 2, 0], [0, 0, 2]])
    np.testing.assert_array_equal(hits3.normal, [[0, 1, 0], [0, 0, 1]])
    hits2 = raycast(Sphere((0, 0), 2.0), [-5, 2], [1, 0])
    assert hits2.hit and hits2.distance == 5.0
    # Just outside tangent: a miss.
    assert not raycast(Sphere((0, 0, 0), 2.0), [-5, 2 + 1e-12, 0], [1, 0, 0]).hit


@pytest.mark.parametrize("direction", [[1, 0, 0], [0, -1, 0], [0, 0, 1], [-1, -1, -1]])
def test_origin_inside_is_distance_zero(direction):
    hits = raycast(Sphere(CENTER, RADIUS), CENTER + 0.5, direction)
    unit = np.asarray(direction, float) / np.linalg.norm(direction)
    assert hits.hit and hits.distance == 0.0
    np.testing.assert_array_equal(hits.point, CENTER + 0.5)
    np.testing.assert_allclose(hits.normal, -unit)


@pytest.mark.parametrize("direction", [[1, 0, 0], [-1, 0, 0], [0, 1, 0]])
def test_origin_on_the_surface_is_distance_zero(direction):
    # Leaving, entering and tangent directions alike: on the surface counts as inside.
    hits = raycast(Sphere((0, 0, 0), 1.0), [1.0, 0, 0], direction)
    assert hits.hit and hits.distance == 0.0
    np.testing.assert_array_equal(hits.normal, -np.asarray(direction, float))


def test_sphere_behind_the_ray_is_a_miss():
    hits = raycast(Sphere((0, 0, 0), 1.0), [[3, 0, 0], [0, 0, 5]], [[1, 0, 0], [0, 1, 1]])
    assert not hits.hit.any()


def test_axis_parallel_rays():
    origins = [[-4, 0.5, 0.25], [0.5, -4, 0.25], [0.5, 0.25, -4], [0.5, 0.25, 4]]
    directions = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, -1]]
    hits = raycast(Sphere((0, 0, 0), 1.0), origins, directions)
    assert_matches_reference(
        hits,
        np.array(origins, float),
        np.array(directions, float),
        lambda o, d: reference.ray_sphere(o, d, (0, 0, 0), 1.0),
        tolerance=1e-15,
    )


def far_rays(rng, center, radius, impact):
    """Rays from 1e6 radii away in random directions, aimed past the centre at ``impact``."""
    n = len(impact)
    away = rng.normal(size=(n, 3))
    away /= np.linalg.norm(away, axis=1, keepdims=True)
    origins = center + 1e6 * radius * away
    side = np.cross(away, rng.normal(size=(n, 3)))
    side /= np.linalg.norm(side, axis=1, keepdims=True)
    return origins, center + impact[:, None] * side - origins


def test_far_origins_keep_distance_to_1e_minus_9_radius():
    rng = np.random.default_rng(3)
    radius, center = 0.75, np.array([10.0, -20.0, 5.0])
    impact = radius * np.concatenate([rng.uniform(0, 0.99, 150), rng.uniform(1.01, 2, 50)])
    origins, directions = far_rays(rng, center, radius, impact)
    hits = raycast(Sphere(center, radius), origins, directions)
    assert hits.hit.sum() == 150
    assert_matches_reference(
        hits,
        origins,
        directions,
        lambda o, d: reference.ray_sphere(o, d, center, radius),
        tolerance=1e-9 * radius,
        relative=False,
    )


def test_far_grazing_rays_are_classified_correctly():
    """Within 1e-3..1e-7 of tangency the hit must still be found; the distance is then as
    ill-conditioned as the half chord h (an input rounding of the direction moves the line
    by ~1e-10 radii, moving the hit by that times r / h)."""
    rng = np.random.default_rng(6)
    radius, center = 1.0, np.array([0.0, 0.0, 0.0])
    closeness = np.logspace(-3, -7, 40)
    impact = radius * np.concatenate([1 - closeness, 1 + closeness])
    origins, directions = far_rays(rng, center, radius, impact)
    hits = raycast(Sphere(center, radius), origins, directions)
    np.testing.assert_array_equal(hits.hit, impact <= radius)
    half_chord = np.sqrt(np.maximum(radius**2 - impact**2, 0))
    for row in np.flatnonzero(hits.hit):
        t = reference.as_float(reference.ray_sphere(origins[row], directions[row], center, radius))[
            0
        ]
        assert abs(hits.distance[row] - t) <= 1e-9 * radius * radius / half_chord[row]


def test_max_distance_is_inclusive_and_per_ray():
    sphere = Sphere((0, 0, 0), 1.0)
    origins = np.array([[-3.0, 0, 0]] * 3)
    directions = np.array([[1.0, 0, 0]] * 3)
    hits = raycast(sphere, origins, directions, max_distance=[2.0, 1.999999, 10.0])
    np.testing.assert_array_equal(hits.hit, [True, False, True])
    np.testing.assert_array_equal(hits.distance, [2.0, np.inf, 2.0])
    assert not raycast(sphere, [-3, 0, 0], [1, 0, 0], max_distance=0.0).hit
    # Origin inside: distance 0 is within any max_distance, even 0.
    assert raycast(sphere, [0, 0, 0], [1, 0, 0], max_distance=0.0).hit


def test_directions_need_not_be_unit():
    a = raycast(Sphere((0, 0, 0), 1.0), [-3, 0.2, 0.1], [1e-8, 0, 0])
    b = raycast(Sphere((0, 0, 0), 1.0), [-3, 0.2, 0.1], [1e8, 0, 0])
    assert a.distance == b.distance and a.hit


def test_batches_larger_than_one_chunk_match_single_rays():
    rng = np.random.default_rng(4)
    origins, directions = random_rays(rng, 70_001)
    sphere = Sphere(CENTER, RADIUS)
    batch = raycast(sphere, origins, directions)
    for row in (0, 65_535, 65_536, 70_000):
        single = raycast(sphere, origins[row], directions[row])
        assert single.hit == batch.hit[row]
        assert single.distance == batch.distance[row]


finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(
    origin=arrays(np.float64, 3, elements=finite),
    direction=arrays(np.float64, 3, elements=finite).filter(lambda d: np.linalg.norm(d) > 1e-3),
    center=arrays(np.float64, 3, elements=st.floats(-3, 3)),
    radius=st.floats(0.01, 5),
)
def test_property_matches_mpmath(origin, direction, center, radius):
    hits = raycast(Sphere(center, radius), origin[None], direction[None])
    gap = closest_gap(origin[None], direction[None], center)[0]
    near_surface = abs(np.linalg.norm(origin - center) - radius) < 1e-12 * max(1, radius)
    assert_matches_reference(
        hits,
        origin[None],
        direction[None],
        lambda o, d: reference.ray_sphere(o, d, center, radius),
        tolerance=1e-9,
        ambiguous=lambda row: abs(gap - radius) < 1e-9 * max(1, radius) or near_surface,
    )


@settings(max_examples=100, deadline=None)
@given(
    origin=arrays(np.float64, 3, elements=finite),
    direction=arrays(np.float64, 3, elements=finite).filter(lambda d: np.linalg.norm(d) > 1e-3),
)
def test_property_hit_point_is_on_the_sphere_and_first(origin, direction):
    hits = raycast(Sphere(CENTER, RADIUS), origin[None], direction[None])
    assert_no_earlier_hit(hits, origin[None], direction[None], sphere_inside)
    if hits.hit[0]:
        point = origin + hits.distance[0] * direction / np.linalg.norm(direction)
        np.testing.assert_allclose(hits.point[0], point, atol=1e-12)


def test_ellipsoid_through_placed_matches_scaled_reference():
    # A unit sphere scaled by (2, 1, 0.5) is the ellipsoid x^2/4 + y^2 + 4 z^2 = 1; map the
    # ray by hand into the unit-sphere frame and compare.
    matrix = np.diag([2.0, 1.0, 0.5, 1.0])
    rng = np.random.default_rng(5)
    origins, directions = random_rays(rng, 100)
    hits = raycast(Placed(Sphere((0, 0, 0), 1.0), matrix), origins, directions)
    scale = np.array([2.0, 1.0, 0.5])
    for row in range(100):
        local = reference.as_float(
            reference.ray_sphere(origins[row] / scale, directions[row] / scale, (0, 0, 0), 1.0)
        )
        if local is None:
            assert not hits.hit[row]
            continue
        _, local_point, local_normal = local
        world_point = local_point * scale
        assert hits.hit[row]
        np.testing.assert_allclose(hits.point[row], world_point, atol=1e-9)
        expected_distance = np.linalg.norm(world_point - origins[row])
        assert abs(hits.distance[row] - expected_distance) < 1e-9
        if hits.distance[row] > 0:
            normal = local_normal / scale
            np.testing.assert_allclose(hits.normal[row], normal / np.linalg.norm(normal), atol=1e-9)
