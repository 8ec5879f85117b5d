"""Ray vs an open tube (Cylinder(capped=False)): a surface hit from either side, against the
mpmath side-roots reference (reference.ray_tube), and placed by mirror / non-uniform matrices."""

import numpy as np
import pytest
import reference
from checks import assert_matches_reference
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from geometry_queries.core import Cylinder, Placed, raycast

P0 = np.array([0.2, -0.4, 0.1])
P1 = np.array([1.0, 0.6, 2.3])
RADIUS = 0.8
AXIS = (P1 - P0) / np.linalg.norm(P1 - P0)
HEIGHT = np.linalg.norm(P1 - P0)
TUBE = Cylinder(P0, P1, RADIUS, capped=False)
UPRIGHT = Cylinder((0, 0, 0), (0, 0, 2), 1.0, capped=False)


def _tube_reference(p0=P0, p1=P1, radius=RADIUS):
    return lambda o, d: reference.ray_tube(o, d, p0, p1, radius)


def _ambiguous(origin, direction, p0=P0, p1=P1, radius=RADIUS, slack=1e-8):
    """Rays that input rounding may decide either way: nearly tangent to the wall, nearly
    parallel to the axis, or crossing the wall within slack of a rim circle."""
    axis = (p1 - p0) / np.linalg.norm(p1 - p0)
    height = np.linalg.norm(p1 - p0)
    unit = direction / np.linalg.norm(direction)
    q = (origin - p0) - ((origin - p0) @ axis) * axis
    e = unit - (unit @ axis) * axis
    a = e @ e
    if a < 1e-12:
        return True
    closest = q - (q @ e) / a * e
    if abs(np.linalg.norm(closest) - radius) < slack:
        return True
    # Wall crossings near a rim.
    b, c = 2 * (q @ e), q @ q - radius * radius
    disc = b * b - 4 * a * c
    if disc < 0:
        return False
    for t in ((-b - np.sqrt(disc)) / (2 * a), (-b + np.sqrt(disc)) / (2 * a)):
        z = (origin + t * unit - p0) @ axis
        if abs(z) < slack * 10 or abs(z - height) < slack * 10 or abs(t) < slack:
            return True
    return False


def test_random_rays_match_mpmath_from_inside_and_outside():
    rng = np.random.default_rng(21)
    n = 300
    origins = rng.uniform(-4, 5, (n, 3))
    origins[: n // 3] = P0 + rng.uniform(0, 1, (n // 3, 1)) * (P1 - P0)  # on the axis: inside
    targets = P0 + rng.uniform(-0.2, 1.2, (n, 1)) * (P1 - P0) + rng.uniform(-1.2, 1.2, (n, 3))
    directions = targets - origins
    hits = raycast(TUBE, origins, directions)
    assert 100 < hits.hit.sum() < n - 20 and hits.hit[: n // 3].sum() > 50
    flags = [_ambiguous(o, d) for o, d in zip(origins, directions)]
    assert_matches_reference(
        hits, origins, directions, _tube_reference(), ambiguous=lambda row: flags[row]
    )
    unit = directions / np.linalg.norm(directions, axis=1, keepdims=True)
    facing = np.einsum("ij,ij->i", hits.normal[hits.hit], unit[hits.hit])
    assert (facing <= 0).all()


def test_outside_inside_and_through_the_open_ends():
    origins = [[-5, 0, 1], [0, 0, 1], [0.3, 0.2, 5], [0, 0, 5], [0, 0, 1], [-5, 0, 3]]
    directions = [[1, 0, 0], [1, 0, 0], [0, 0, -1], [0.5, 0, -2], [0, 0, 1], [1, 0, 0]]
    hits = raycast(UPRIGHT, origins, directions)
    np.testing.assert_array_equal(hits.hit, [True, True, False, True, False, False])
    np.testing.assert_array_equal(hits.distance[:2], [4, 1])
    np.testing.assert_array_equal(hits.normal[0], [-1, 0, 0])  # outside: the outer face
    np.testing.assert_array_equal(hits.normal[1], [-1, 0, 0])  # inside: faces back inward
    # Down through the open top, out through the wall at x = 1, z = 1.
    np.testing.assert_allclose(hits.point[3], [1, 0, 1], atol=1e-15)
    np.testing.assert_allclose(hits.normal[3], [-1, 0, 0], atol=1e-15)


@pytest.mark.parametrize(
    "origin, direction",
    [
        ([0.0, 0.0, -5.0], [0, 0, 1]),  # along the axis: through the tube
        ([0.5, 0.3, 1.0], [0, 0, -1]),  # parallel to the axis, starting inside
        ([0.5, 0.3, 9.0], [0, 0, -1]),  # ... from above
        ([3.0, 0.0, 1.0], [0, 0, 1]),  # parallel, outside
    ],
)
def test_rays_parallel_to_the_axis_pass_through(origin, direction):
    assert not raycast(UPRIGHT, origin, direction).hit


def test_origin_on_the_wall_hits_at_zero_with_the_facing_normal():
    origins = [[1, 0, 1], [1, 0, 1], [0, -1, 0.5], [1, 0, 1], [1, 0, 0]]
    directions = [[1, 0, 0], [-1, 0, 0], [0.3, 1, 0.2], [0, 0, 1], [0, 1, 0]]
    hits = raycast(UPRIGHT, origins, directions)
    assert hits.hit.all() and (hits.distance == 0).all()
    np.testing.assert_array_equal(hits.point, origins)
    np.testing.assert_allclose(
        hits.normal, [[-1, 0, 0], [1, 0, 0], [0, -1, 0], [1, 0, 0], [1, 0, 0]], atol=1e-15
    )
    # Just outside the wall, moving away: nothing (no inside, no distance-0 rule).
    assert not raycast(UPRIGHT, [1 + 1e-9, 0, 1], [1, 0, 0]).hit


def test_tangent_and_rim_rays():
    hits = raycast(
        UPRIGHT,
        [[-5, 1, 1], [-5, 0, 2], [-5, 0, 2 + 1e-12], [-3, 0, 4]],
        [[1, 0, 0]] * 3 + [[1, 0, -1]],
    )
    np.testing.assert_array_equal(hits.hit, [True, True, False, True])
    np.testing.assert_allclose(hits.distance[:2], [5, 4], atol=1e-15)
    assert abs(hits.distance[3] - 2 * np.sqrt(2)) < 1e-12  # the rim point (-1, 0, 2)


def test_far_origins_match_mpmath():
    rng = np.random.default_rng(22)
    n = 80
    away = rng.normal(size=(n, 3))
    away /= np.linalg.norm(away, axis=1, keepdims=True)
    origins = 1e6 * away
    targets = rng.uniform([-0.6, -0.6, 0.2], [0.6, 0.6, 1.8], (n, 3))
    directions = targets - origins
    hits = raycast(UPRIGHT, origins, directions)
    flags = [
        _ambiguous(o, d, np.zeros(3), np.array([0, 0, 2.0]), 1.0, 1e-6)
        for o, d in zip(origins, directions)
    ]
    assert_matches_reference(
        hits,
        origins,
        directions,
        _tube_reference((0, 0, 0), (0, 0, 2), 1.0),
        tolerance=1e-9,
        relative=False,
        ambiguous=lambda row: flags[row],
    )
    assert hits.hit.sum() > n // 2


finite = st.floats(-6, 6, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(
    origin=arrays(np.float64, 3, elements=finite),
    target=arrays(np.float64, 3, elements=st.floats(-2, 2)),
    axis_dir=st.sampled_from([None, (1, 0, 0), (0, 1, 0), (0, 0, 1)]),
)
def test_property_matches_mpmath(origin, target, axis_dir):
    direction = np.array(axis_dir, float) if axis_dir else target - origin
    if np.linalg.norm(direction) < 1e-3:
        direction = np.array([0.0, 0.0, 1.0])
    hits = raycast(TUBE, origin[None], direction[None])
    assert_matches_reference(
        hits,
        origin[None],
        direction[None],
        _tube_reference(),
        ambiguous=lambda row: _ambiguous(origin, direction),
    )
    if hits.hit[0]:
        assert hits.normal[0] @ direction <= 0


@pytest.mark.parametrize(
    "linear",
    [
        np.diag([-1.0, 1.0, 1.0]),  # mirror
        np.diag([2.0, 0.5, -3.0]),  # non-uniform scale with a mirror
        np.array([[1.0, 0.7, 0.0], [0.0, -1.0, 0.3], [0.2, 0.0, 1.5]]),  # sheared, det < 0
    ],
)
def test_placed_tube_normals_face_the_ray_under_any_affine_matrix(linear):
    """World hits of a placed tube: on the mapped wall, normal = L^-T n_local facing the
    ray, distances measured in world units (checked against the local mpmath reference)."""
    matrix = np.eye(4)
    matrix[:3, :3] = linear
    matrix[:3, 3] = [0.5, -1.0, 2.0]
    placed = Placed(TUBE, matrix)
    rng = np.random.default_rng(23)
    n = 120
    local_origins = rng.uniform(-3, 4, (n, 3))
    local_origins[: n // 2] = P0 + rng.uniform(0.1, 0.9, (n // 2, 1)) * (P1 - P0)
    local_targets = P0 + rng.uniform(0, 1, (n, 1)) * (P1 - P0) + rng.uniform(-1, 1, (n, 3))
    origins = local_origins @ linear.T + matrix[:3, 3]
    directions = (local_targets - local_origins) @ linear.T
    hits = raycast(placed, origins, directions)
    assert hits.hit.sum() > n // 3
    inverse = np.linalg.inv(linear)
    for row in range(n):
        local_d = inverse @ directions[row]
        local_o = local_origins[row]
        if _ambiguous(local_o, local_d):
            continue
        expected = reference.as_float(reference.ray_tube(local_o, local_d, P0, P1, RADIUS))
        assert hits.hit[row] == (expected is not None), row
        if expected is None:
            continue
        t_local, point_local, normal_local = expected
        world_point = linear @ point_local + matrix[:3, 3]
        np.testing.assert_allclose(hits.point[row], world_point, atol=1e-9)
        world_t = t_local / np.linalg.norm(local_d) * np.linalg.norm(directions[row])
        assert abs(hits.distance[row] - world_t) < 1e-9
        normal = inverse.T @ normal_local
        np.testing.assert_allclose(hits.normal[row], normal / np.linalg.norm(normal), atol=1e-7)
        assert hits.normal[row] @ directions[row] <= 0


def test_capped_stays_the_solid_and_bad_capped_is_refused():
    assert TUBE.solid is False and Cylinder(P0, P1, RADIUS).solid is True
    hits = raycast(Cylinder((0, 0, 0), (0, 0, 2), 1.0), [0, 0, 1], [1, 0, 0])
    assert hits.hit and hits.distance == 0  # the solid: origin inside
    with pytest.raises(ValueError, match="capped"):
        Cylinder(P0, P1, RADIUS, capped="no")
