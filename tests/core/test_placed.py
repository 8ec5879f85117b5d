"""Placed shapes: any affine matrix; rays go to local space and hits come back to world."""

import numpy as np
import reference
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from geometry_queries.core import Cylinder, Placed, Sphere, raycast


def random_affine(rng, scale_range=(0.3, 3.0)):
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    matrix = np.eye(4)
    matrix[:3, :3] = (
        q @ np.diag(rng.uniform(*scale_range, 3)) @ np.linalg.qr(rng.normal(size=(3, 3)))[0]
    )
    matrix[:3, 3] = rng.uniform(-3, 3, 3)
    return matrix


def local_reference(matrix, origin, direction, local_reference_fn):
    """World hit of a placed shape computed by hand: map the ray with the inverse matrix,
    solve in local space with the mpmath reference, map the point back, and measure the
    distance in world space."""
    inverse = np.linalg.inv(matrix)
    local_origin = inverse[:3, :3] @ origin + inverse[:3, 3]
    local_direction = inverse[:3, :3] @ direction
    found = reference.as_float(local_reference_fn(local_origin, local_direction))
    if found is None:
        return None
    _, local_point, local_normal = found
    point = matrix[:3, :3] @ local_point + matrix[:3, 3]
    normal = inverse[:3, :3].T @ local_normal
    return np.linalg.norm(point - origin), point, normal / np.linalg.norm(normal)


def check_against_local_reference(shape, matrix, local_fn, seed, n=150):
    rng = np.random.default_rng(seed)
    origins = rng.uniform(-8, 8, (n, 3))
    directions = matrix[:3, 3] + rng.uniform(-2, 2, (n, 3)) - origins
    hits = raycast(Placed(shape, matrix), origins, directions)
    assert 10 < hits.hit.sum() < n
    for row in range(n):
        expected = local_reference(matrix, origins[row], directions[row], local_fn)
        if expected is None:
            assert not hits.hit[row]
            continue
        distance, point, normal = expected
        assert hits.hit[row]
        assert abs(hits.distance[row] - distance) < 1e-9
        np.testing.assert_allclose(hits.point[row], point, atol=1e-9)
        if distance > 1e-9:  # (an origin on the surface may round to either side)
            np.testing.assert_allclose(hits.normal[row], normal, atol=1e-7)


def test_ellipsoid_from_any_affine_matrix():
    rng = np.random.default_rng(31)
    sphere = Sphere((0.1, -0.2, 0.3), 1.1)
    for seed in range(3):
        matrix = random_affine(rng)
        check_against_local_reference(
            sphere, matrix, lambda o, d: reference.ray_sphere(o, d, sphere.center, 1.1), seed
        )


def test_elliptic_sheared_cylinder():
    rng = np.random.default_rng(32)
    cylinder = Cylinder((0, 0, -1), (0, 0, 1), 0.7)
    for seed in range(3):
        matrix = random_affine(rng)
        check_against_local_reference(
            cylinder,
            matrix,
            lambda o, d: reference.ray_cylinder(o, d, (0, 0, -1), (0, 0, 1), 0.7),
            seed,
        )


def test_axis_permuting_matrices_with_sign_flips():
    """Matrices made of 0 and +-scale entries (90-degree rotations, mirrors: common in
    Blender scenes) take the sparse path of the linear combinations, for both shapes."""
    sphere = Sphere((0.1, -0.2, 0.3), 1.1)
    cylinder = Cylinder((0, 0, -1), (0, 0, 1), 0.7)
    permutations = [(0, 1, 2), (2, 0, 1), (1, 2, 0), (1, 0, 2)]
    signs = [(1, 1, 1), (-1, 1, 1), (1, -1, -1), (-1, -1, 1)]
    for seed, (order, sign) in enumerate(zip(permutations, signs)):
        matrix = np.eye(4)
        matrix[:3, :3] = np.eye(3)[list(order)] * np.array(sign) * [1.0, 2.5, 1.5][seed % 3]
        matrix[:3, 3] = [1.5, -0.5, 2.0]
        check_against_local_reference(
            sphere, matrix, lambda o, d: reference.ray_sphere(o, d, sphere.center, 1.1), seed
        )
        check_against_local_reference(
            cylinder,
            matrix,
            lambda o, d: reference.ray_cylinder(o, d, (0, 0, -1), (0, 0, 1), 0.7),
            seed,
        )


def test_max_distance_is_measured_in_world_units():
    placed = Placed(Sphere((0, 0, 0), 1.0), np.diag([4.0, 4.0, 4.0, 1.0]))
    # World sphere of radius 4: from x=-10 the hit is 6 away, whatever the local scale.
    hits = raycast(placed, [[-10, 0, 0]] * 2, [[1, 0, 0]] * 2, max_distance=[6.0, 5.99])
    np.testing.assert_array_equal(hits.hit, [True, False])
    assert hits.distance[0] == 6.0


def test_origin_inside_a_placed_shape_and_nested_placement():
    inner = Placed(Sphere((0, 0, 0), 1.0), np.diag([2.0, 1.0, 1.0, 1.0]))
    outer_matrix = np.eye(4)
    outer_matrix[:3, 3] = [10, 0, 0]
    nested = Placed(inner, outer_matrix)
    hits = raycast(nested, [[11.5, 0, 0], [0, 0, 0]], [[0, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(hits.hit, [True, True])
    np.testing.assert_array_equal(hits.distance, [0.0, 8.0])
    np.testing.assert_allclose(hits.normal, [[0, -1, 0], [-1, 0, 0]])


def test_circle_placed_in_2d():
    placed = Placed(Sphere((0, 0), 1.0), [[3, 0, 1], [0, 1, 0], [0, 0, 1]])  # ellipse around (1, 0)
    hits = raycast(placed, [[-5, 0], [1, -5]], [[1, 0], [0, 1]])
    np.testing.assert_allclose(hits.distance, [3.0, 4.0])


@settings(max_examples=60, deadline=None)
@given(
    scales=arrays(np.float64, 3, elements=st.floats(0.2, 5)),
    origin=arrays(np.float64, 3, elements=st.floats(-6, 6)),
    target=arrays(np.float64, 3, elements=st.floats(-1, 1)),
)
def test_property_scaled_sphere_points_satisfy_the_ellipsoid(scales, origin, target):
    direction = target - origin
    if np.linalg.norm(direction) < 1e-3:
        return
    hits = raycast(Placed(Sphere((0, 0, 0), 1.0), np.diag([*scales, 1.0])), origin, direction)
    if hits.hit and hits.distance > 0:
        assert abs(np.sum((hits.point / scales) ** 2) - 1) < 1e-9
        gradient = hits.point / scales**2
        np.testing.assert_allclose(hits.normal, gradient / np.linalg.norm(gradient), atol=1e-8)
