"""Sphere cast vs a capped cylinder and an open tube, against an independent oracle.

The oracle never solves the cast. It measures the exact distance from a point to the shape
as the smallest distance to its boundary pieces (the finite side wall, and for the capped
cylinder the two discs; zero inside the solid), in mpmath at 50 digits at the reported
contact and in float64 along the path. Each hit must put the centre at distance R from the
shape, the point on the surface at distance R from the centre with the normal along
centre - point, and conservative advancement (steps of distance - R, which can never pass a
contact) along the path must arrive at the reported distance and not before. Misses must
let conservative advancement run to the end of the segment. Some casts have answers known
in closed form (aimed at a chosen point of the rim torus, parallel to the axis onto a cap
or a rim, radial from the axis), checked directly.
"""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from geometry_queries.core import Cylinder, Placed, raycast, sphere_cast

mp.mp.dps = 50

P0 = np.array([0.2, -0.4, 0.1])
P1 = np.array([1.0, 0.6, 2.3])
RADIUS = 0.8


# --- the oracle ----------------------------------------------------------------------------


def _frame(p0, p1):
    axis = np.asarray(p1, float) - np.asarray(p0, float)
    height = np.linalg.norm(axis)
    return axis / height, height


def distance_to_shape(points, p0, p1, radius, capped):
    """float64 distance from each row of ``points`` to the shape (boundary pieces; zero
    inside the capped solid)."""
    axis, height = _frame(p0, p1)
    rel = np.atleast_2d(points) - p0
    z = rel @ axis
    rho = np.linalg.norm(rel - z[:, None] * axis, axis=1)
    beyond = np.maximum(np.maximum(-z, z - height), 0.0)
    wall = np.hypot(rho - radius, beyond)
    if not capped:
        return wall
    discs = [
        np.hypot(np.maximum(rho - radius, 0.0), z - level) for level in (0.0, height)
    ]  # a disc: the in-plane offset past its edge, and the height above its plane
    inside = (rho <= radius) & (z >= 0) & (z <= height)
    return np.where(inside, 0.0, np.minimum(wall, np.minimum(*discs)))


def mp_distance_to_shape(point, p0, p1, radius, capped, boundary=False):
    """The same in mpmath at 50 digits; ``boundary``: to the surface even from inside."""
    p, a, b = ([mp.mpf(float(x)) for x in v] for v in (point, p0, p1))
    r = mp.mpf(float(radius))
    axis = [y - x for x, y in zip(a, b)]
    height = mp.sqrt(sum(x * x for x in axis))
    w = [x / height for x in axis]
    rel = [x - y for x, y in zip(p, a)]
    z = sum(x * y for x, y in zip(rel, w))
    rho = mp.sqrt(sum((x - z * y) ** 2 for x, y in zip(rel, w)))
    beyond = max(-z, z - height, mp.mpf(0))
    wall = mp.sqrt((rho - r) ** 2 + beyond**2)
    if not capped:
        return wall
    edge = max(rho - r, mp.mpf(0))
    discs = [mp.sqrt(edge**2 + (z - level) ** 2) for level in (0, height)]
    if rho <= r and 0 <= z <= height and not boundary:
        return mp.mpf(0)
    return min(wall, *discs)


def advance(start, unit, length, reach, p0, p1, radius, capped, steps=4000, contact=1e-11):
    """Conservative advancement: t += distance - R from 0 while under ``length``. The
    distance is 1-Lipschitz, so t never passes the first contact. Returns (t, converged)."""
    t = np.zeros(len(start))
    converged = np.zeros(len(start), dtype=bool)
    for _ in range(steps):
        gap = distance_to_shape(start + t[:, None] * unit, p0, p1, radius, capped) - reach
        converged |= gap <= contact * (1 + reach)
        active = ~converged & (t <= length)
        if not active.any():
            break
        t = np.where(active, t + np.maximum(gap, 0.0), t)
    return t, converged


def check_casts(casts, starts, ends, reach, p0, p1, radius, capped, tolerance=1e-11):
    """The oracle's checks for every cast (see the module docstring)."""
    starts, ends = np.atleast_2d(starts), np.atleast_2d(ends)
    reach = np.broadcast_to(np.asarray(reach, float), (len(starts),))
    segment = ends - starts
    length = np.linalg.norm(segment, axis=1)
    unit = segment / np.where(length > 0, length, 1.0)[:, None]
    scale = np.abs(starts).max(axis=1) + np.linalg.norm(p0) + np.linalg.norm(p1) + radius
    scale += reach + np.where(casts.hit, casts.distance, 0.0)
    start_distance = distance_to_shape(starts, p0, p1, radius, capped)
    for row in range(len(starts)):
        if start_distance[row] <= reach[row] * (1 - 1e-12) - 1e-12 * scale[row]:
            assert casts.hit[row] and casts.distance[row] == 0, f"row {row}: overlap missed"
        if not casts.hit[row]:
            assert np.isinf(casts.distance[row]) and np.isnan(casts.point[row]).all()
            continue
        center, point, normal = casts.center[row], casts.point[row], casts.normal[row]
        tol = tolerance * scale[row]
        np.testing.assert_allclose(center, starts[row] + casts.distance[row] * unit[row], atol=tol)
        on_surface = mp_distance_to_shape(point, p0, p1, radius, capped, boundary=True)
        assert on_surface <= tol, f"row {row}: point {on_surface} off the surface"
        assert abs(np.linalg.norm(normal) - 1) < 1e-12, f"row {row}: normal not unit"
        if casts.distance[row] == 0:
            # Overlap: the point is the surface point nearest the start.
            nearest = mp_distance_to_shape(starts[row], p0, p1, radius, capped, boundary=True)
            assert abs(np.linalg.norm(point - starts[row]) - float(nearest)) <= tol, row
            assert float(mp_distance_to_shape(starts[row], p0, p1, radius, capped)) <= (
                reach[row] + tol
            )
            continue
        gap = mp_distance_to_shape(center, p0, p1, radius, capped) - reach[row]
        assert abs(gap) <= tol, f"row {row}: centre at distance R + {float(gap)}"
        assert abs(np.linalg.norm(center - point) - reach[row]) <= tol, f"row {row}"
        if reach[row] > 1e-6:
            np.testing.assert_allclose(normal, (center - point) / reach[row], atol=1e-9)
    # Along the path: conservative advancement reaches the reported contact, not earlier,
    # and runs through the whole segment of a miss (or touches only within rounding).
    t, converged = advance(starts, unit, length, reach, p0, p1, radius, capped)
    for row in range(len(starts)):
        if length[row] == 0:
            continue
        if casts.hit[row]:
            assert t[row] <= casts.distance[row] + 1e-9 * scale[row], f"row {row}: overshot"
            if converged[row]:
                assert casts.distance[row] - t[row] <= 1e-6 * scale[row], (
                    f"row {row}: contact at {t[row]} before the reported {casts.distance[row]}"
                )
        elif converged[row] and t[row] <= length[row]:
            # Touched within rounding: the path must not go deeper than that.
            near = t[row] + np.linspace(-1e-3, 1e-3, 2001)
            deepest = distance_to_shape(
                starts[row] + near[:, None] * unit[row], p0, p1, radius, capped
            )
            assert deepest.min() >= reach[row] - 1e-9 * scale[row], f"row {row}: missed a contact"
    for row in np.flatnonzero(casts.hit & (casts.distance > 0)):
        # Dense sampling before the contact, too.
        ts = np.linspace(0.0, casts.distance[row], 2000, endpoint=False)
        path = distance_to_shape(starts[row] + ts[:, None] * unit[row], p0, p1, radius, capped)
        assert path.min() >= reach[row] - 1e-9 * scale[row], f"row {row}: overlap before contact"


def random_casts(rng, n, spread=4.0):
    starts = rng.uniform(-spread, spread, (n, 3)) + (P0 + P1) / 2
    targets = P0 + rng.uniform(-0.3, 1.3, (n, 1)) * (P1 - P0) + rng.uniform(-1.5, 1.5, (n, 3))
    ends = starts + (targets - starts) * rng.uniform(0.5, 2.0, (n, 1))
    return starts, ends


# --- random casts ------------------------------------------------------------------------------


@pytest.mark.parametrize("capped", [True, False])
@pytest.mark.parametrize("reach", [0.05, 0.3, 1.5])
def test_random_casts_satisfy_the_oracle(capped, reach):
    rng = np.random.default_rng(31)
    starts, ends = random_casts(rng, 300)
    casts = sphere_cast(Cylinder(P0, P1, RADIUS, capped=capped), starts, ends, reach)
    assert 60 < casts.hit.sum() < 300
    check_casts(casts, starts, ends, reach, P0, P1, RADIUS, capped)


@pytest.mark.parametrize("capped", [True, False])
def test_casts_from_inside_the_tube_and_the_solid(capped):
    rng = np.random.default_rng(32)
    n = 200
    starts = P0 + rng.uniform(0.0, 1.0, (n, 1)) * (P1 - P0)  # on the axis
    ends = starts + rng.normal(size=(n, 3)) * 3.0
    casts = sphere_cast(Cylinder(P0, P1, RADIUS, capped=capped), starts, ends, 0.2)
    if capped:
        assert casts.hit.all() and (casts.distance == 0).all()
    else:
        assert casts.hit.sum() > 100 and (casts.distance[casts.hit] > 0).all()
    check_casts(casts, starts, ends, 0.2, P0, P1, RADIUS, capped)


# --- closed-form answers ---------------------------------------------------------------------


def test_cast_aimed_at_a_rim_torus_point_hits_exactly_there():
    """A centre position c* on the torus around a rim, in the corner (outward and past the
    cap), is on the boundary of the (convex) capped Minkowski sum with outward normal m;
    a cast arriving from outside (direction against m) enters exactly at c*, at distance L.
    The tube's Minkowski sum lies inside the capped one and shares c*: same answer."""
    rng = np.random.default_rng(33)
    axis, height = _frame(P0, P1)
    helper = np.cross(axis, [1.0, 0, 0])
    u = helper / np.linalg.norm(helper)
    v = np.cross(axis, u)
    n, reach, length = 200, 0.35, 3.0
    angle = rng.uniform(0, 2 * np.pi, n)
    radial = np.cos(angle)[:, None] * u + np.sin(angle)[:, None] * v
    top = rng.random(n) < 0.5
    rim_height = np.where(top, height, 0.0)
    outward = np.where(top, 1.0, -1.0)[:, None] * axis
    tilt = rng.uniform(0.05, np.pi / 2 - 0.05, n)  # strictly inside the corner quadrant
    m = np.cos(tilt)[:, None] * radial + np.sin(tilt)[:, None] * outward
    rim = P0 + RADIUS * radial + rim_height[:, None] * axis
    center = rim + reach * m
    arrival = m + rng.normal(size=(n, 3)) * 0.6
    arrival /= np.linalg.norm(arrival, axis=1, keepdims=True)
    arrival[(arrival * m).sum(axis=1) < 0.2] = m[(arrival * m).sum(axis=1) < 0.2]
    starts = center + length * arrival
    ends = center - 2.0 * arrival
    for capped in (True, False):
        casts = sphere_cast(Cylinder(P0, P1, RADIUS, capped=capped), starts, ends, reach)
        assert casts.hit.all()
        np.testing.assert_allclose(casts.distance, length, rtol=0, atol=1e-12)
        np.testing.assert_allclose(casts.point, rim, rtol=0, atol=1e-12)
        np.testing.assert_allclose(casts.normal, m, rtol=0, atol=1e-11)
        check_casts(casts, starts, ends, reach, P0, P1, RADIUS, capped)


def test_cast_from_inside_the_tube_onto_the_inner_side_of_a_rim_torus():
    """Inside the tube, past an end: c* = rim + R m with m pointing toward the axis and out
    of the end. Along the normal line c* + s m the distance to the tube is R + s (the rim
    stays the nearest point), so a cast arriving along -m from c* + L m touches at c*, at
    distance L. Arrivals tilted off the meridian plane (the torus's concave-to-convex
    stretch of F) are checked by the oracle."""
    r, h, reach, length = 0.8, 2.0, 0.2, 0.3
    tube = Cylinder((0, 0, 0), (0, 0, h), r, capped=False)
    angle = np.linspace(0, 2 * np.pi, 9)[:-1]
    radial = np.stack([np.cos(angle), np.sin(angle), np.zeros(8)], axis=1)
    tangential = np.stack([-np.sin(angle), np.cos(angle), np.zeros(8)], axis=1)
    rows = []
    for top in (True, False):
        for tilt in (0.2, 0.7, 1.2):
            out = np.array([0, 0, 1.0 if top else -1.0])
            m = -np.cos(tilt) * radial + np.sin(tilt) * out
            rim = r * radial + [0, 0, h if top else 0.0]
            rows.append((rim, m))
    rim = np.concatenate([a for a, _ in rows])
    m = np.concatenate([b for _, b in rows])
    center = rim + reach * m
    starts = center + length * m
    casts = sphere_cast(tube, starts, center - m, reach)
    assert casts.hit.all()
    np.testing.assert_allclose(casts.distance, length, rtol=0, atol=1e-13)
    np.testing.assert_allclose(casts.point, rim, rtol=0, atol=1e-13)
    np.testing.assert_allclose(casts.normal, m, rtol=0, atol=1e-12)
    skew = np.tile(tangential, (6, 1))
    for amount in (0.3, 1.0, 3.0):
        arrival = m + amount * skew
        arrival /= np.linalg.norm(arrival, axis=1, keepdims=True)
        starts, ends = center + length * arrival, center - 2 * arrival
        casts = sphere_cast(tube, starts, ends, reach)
        assert casts.hit.sum() > 20
        check_casts(casts, starts, ends, reach, np.zeros(3), np.array([0, 0, h]), r, False)


def test_parallel_to_the_axis_onto_cap_rim_and_through_the_tube():
    """Straight down at radial offset q: onto the cap (q <= r) at z = h + R, onto the rim
    torus (r < q < r + R) at z = h + sqrt(R^2 - (q - r)^2), nothing beyond r + R; the tube
    lets q < r - R pass through and meets the torus for r - R < q < r + R."""
    r, h, reach = 1.0, 2.0, 0.25
    offsets = [0.0, 0.5, 0.75, 0.8, 1.0, 1.1, 1.2, 1.249, 1.3]
    starts = np.array([[q, 0.0, 10.0] for q in offsets])
    ends = starts - [0, 0, 20.0]
    for capped in (True, False):
        casts = sphere_cast(Cylinder((0, 0, 0), (0, 0, h), r, capped=capped), starts, ends, reach)
        for row, q in enumerate(offsets):
            q_, r_, h_, reach_ = (mp.mpf(x) for x in (q, r, h, reach))
            if capped and q <= r:
                expected = 10 - (h_ + reach_)
            elif abs(q - r) <= reach:  # r - R exactly: runs along the inner wall, touching
                expected = 10 - (h_ + mp.sqrt(reach_**2 - (q_ - r_) ** 2))
            else:
                assert not casts.hit[row], (capped, q)
                continue
            assert casts.hit[row], (capped, q)
            # Touching along the wall is a tangent contact: known to sqrt(rounding) only.
            tolerance = 1e-7 if abs(q - r) == reach else 1e-14
            assert abs(casts.distance[row] - float(expected)) < tolerance, (capped, q)
        check_casts(casts, starts, ends, reach, np.zeros(3), np.array([0, 0, h]), r, capped)


def test_casts_into_the_tube_through_its_open_end():
    """Down into the tube through its top, in the plane y = 0 from x = q (|q| < r - R) tilted
    by theta toward +x: the centre stays in the hole, clear of the shell and the rim tori,
    until x = r - R, the inner wall, at t = (r - R - q) / sin(theta) below the start, where
    that is between the end planes; a steeper cast leaves through the bottom (nothing, or
    the bottom rim's torus from inside, near the bottom end)."""
    r, h, reach, above = 1.0, 2.0, 0.25, 0.5
    tube = Cylinder((0, 0, 0), (0, 0, h), r, capped=False)
    rows = []
    for q in (-0.7, -0.3, 0.0, 0.4, 0.74):
        for theta in (0.0, 1e-9, 0.05, 0.2, 0.35, 0.6, 1.0, 1.4):
            rows.append((q, theta))
    starts = np.array([[q, 0.0, h + above] for q, _ in rows])
    units = np.array([[np.sin(theta), 0.0, -np.cos(theta)] for _, theta in rows])
    ends = starts + 20.0 * units
    casts = sphere_cast(tube, starts, ends, reach)
    onto_wall = through = 0
    for row, (q, theta) in enumerate(rows):
        q_, theta_ = mp.mpf(q), mp.mpf(theta)
        if theta == 0.0:
            assert not casts.hit[row], (q, theta)  # straight through the hole
            continue
        expected = (mp.mpf(r - reach) - q_) / mp.sin(theta_)
        wall_z = h + above - expected * mp.cos(theta_)
        if 0 <= wall_z <= h:
            assert casts.hit[row], (q, theta)
            assert abs(casts.distance[row] - float(expected)) < 1e-13, (q, theta)
            onto_wall += 1
        elif wall_z < -reach:
            assert not casts.hit[row], (q, theta)  # out through the bottom, untouched
            through += 1
    assert onto_wall >= 8 and through >= 10
    check_casts(casts, starts, ends, reach, np.zeros(3), np.array([0, 0, h]), r, False)


def test_radial_casts_from_the_axis_meet_the_inner_wall():
    """From the tube's axis the inner wall is r - R away in every radial direction; with
    R >= r the start overlaps the wall."""
    angles = np.linspace(0, 2 * np.pi, 17)[:-1]
    directions = np.stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)], axis=1)
    starts = np.tile([0.0, 0.0, 1.0], (16, 1))
    tube = Cylinder((0, 0, 0), (0, 0, 2), 1.0, capped=False)
    casts = sphere_cast(tube, starts, starts + 5 * directions, 0.3)
    assert casts.hit.all()
    np.testing.assert_allclose(casts.distance, 0.7, rtol=0, atol=1e-15)
    np.testing.assert_allclose(casts.point, starts + directions, atol=1e-15)
    np.testing.assert_allclose(casts.normal, -directions, atol=1e-15)
    wide = sphere_cast(tube, starts, starts + 5 * directions, 1.0)
    assert wide.hit.all() and (wide.distance == 0).all()
    # Along the axis inside the tube (R < r): through both open ends.
    through = sphere_cast(tube, [[0.1, 0.2, -5.0]], [[0.1, 0.2, 7.0]], 0.3)
    assert not through.hit[0]


def test_grazing_casts_touch_at_distance_r_plus_reach():
    """Tangent to the side at r + R (and to the rim torus in its tangent plane): a hit at
    the tangent point or, decided by rounding, a miss; never an overlap."""
    r, h, reach = 1.0, 2.0, 0.3
    shape = Cylinder((0, 0, 0), (0, 0, h), r)
    heights = np.linspace(0.01, h - 0.01, 25)
    starts = np.stack([np.full(25, -5.0), np.full(25, r + reach), heights], axis=1)
    ends = starts + [10.0, 0, 0]
    casts = sphere_cast(shape, starts, ends, reach)
    assert casts.hit.sum() >= 20
    np.testing.assert_allclose(casts.distance[casts.hit], 5.0, atol=1e-7)
    check_casts(casts, starts, ends, reach, np.zeros(3), np.array([0, 0, h]), r, True)
    # Tangent to the torus at c* = rim + R m, along the circle's tangent direction.
    tilt = np.linspace(0.1, 1.4, 15)
    m = np.stack([np.cos(tilt), np.zeros(15), np.sin(tilt)], axis=1)
    center = np.array([r, 0, h]) + reach * m
    starts = center - [0, 4.0, 0]
    casts = sphere_cast(shape, starts, center + [0, 4.0, 0], reach)
    check_casts(
        casts, starts, center + [0, 4.0, 0], reach, np.zeros(3), np.array([0, 0, h]), r, True
    )
    assert casts.hit.sum() >= 10  # a touch is a hit; rounding may lose a few
    np.testing.assert_allclose(casts.distance[casts.hit], 4.0, atol=1e-6)
    # ... and in the meridian plane, tangent to the rim circle's torus section.
    tangent = np.stack([-np.sin(tilt), np.zeros(15), np.cos(tilt)], axis=1)
    starts, ends = center - 3 * tangent, center + 3 * tangent
    casts = sphere_cast(shape, starts, ends, reach)
    check_casts(casts, starts, ends, reach, np.zeros(3), np.array([0, 0, h]), r, True)
    assert casts.hit.sum() >= 10
    np.testing.assert_allclose(casts.distance[casts.hit], 3.0, atol=1e-6)
    # The same paths 1e-9 into the torus all hit, where the centre is R from the rim circle
    # (the nearest feature there: the padded cylinder is convex), and 1e-9 out of it all
    # miss. Such a path meets the torus at a grazing angle of about sqrt(2e-9 / R), which
    # magnifies rounding of ~1e-16 of the lengths to ~1e-10: the distances to 1e-9.
    rim_circle, reach_ = mp.mpf(r), mp.mpf(reach)
    for press in (1e-9, -1e-9):
        pressed = center - press * m
        along_y = sphere_cast(shape, pressed - [0, 4.0, 0], pressed + [0, 4.0, 0], reach)
        meridian = sphere_cast(shape, pressed - 3 * tangent, pressed + 3 * tangent, reach)
        if press < 0:
            assert not along_y.hit.any() and not meridian.hit.any()
            continue
        assert along_y.hit.all() and meridian.hit.all()
        for row, c in enumerate(pressed):
            x, z = mp.mpf(c[0]), mp.mpf(c[2]) - h
            # along y: the centre's distance from the axis reaches r + sqrt(R^2 - z^2)
            expected = 4 - mp.sqrt((rim_circle + mp.sqrt(reach_**2 - z**2)) ** 2 - x**2)
            assert abs(along_y.distance[row] - float(expected)) < 1e-9, row
            # in the meridian plane: the first point R from the rim point (r, 0, h)
            q = [mp.mpf(a) - 3 * mp.mpf(b) for a, b in zip(c - [r, 0, h], tangent[row])]
            b_ = sum(a * mp.mpf(b) for a, b in zip(q, tangent[row]))
            expected = -b_ - mp.sqrt(b_**2 - (sum(a * a for a in q) - reach_**2))
            assert abs(meridian.distance[row] - float(expected)) < 1e-9, row


# --- overlap, zero length, far, tiny and huge radii -------------------------------------------


@pytest.mark.parametrize("capped", [True, False])
def test_starts_in_overlap_are_distance_zero_at_the_nearest_surface_point(capped):
    rng = np.random.default_rng(34)
    n = 300
    starts = P0 + rng.uniform(-0.2, 1.2, (n, 1)) * (P1 - P0) + rng.uniform(-1.1, 1.1, (n, 3))
    ends = starts + rng.normal(size=(n, 3))
    reach = 0.4
    casts = sphere_cast(Cylinder(P0, P1, RADIUS, capped=capped), starts, ends, reach)
    overlap = distance_to_shape(starts, P0, P1, RADIUS, capped) <= reach
    assert overlap.sum() > 100
    assert (casts.distance[overlap] == 0).all()
    np.testing.assert_array_equal(casts.center[overlap], starts[overlap])
    check_casts(casts, starts, ends, reach, P0, P1, RADIUS, capped)


def test_overlap_normals_point_from_the_target_to_the_start():
    shape = Cylinder((0, 0, 0), (0, 0, 2), 1.0)
    starts = [[1.2, 0, 1], [0, 0, 2.1], [1.1, 0, 2.1], [0.9, 0, 1.0], [0.2, 0, 0.1]]
    casts = sphere_cast(shape, starts, np.array(starts) + [0, 1, 0], 0.3)
    assert (casts.distance == 0).all()
    np.testing.assert_allclose(
        casts.point, [[1, 0, 1], [0, 0, 2], [1, 0, 2], [1, 0, 1], [0.2, 0, 0]]
    )
    s = np.sqrt(0.5)
    expected = [[1, 0, 0], [0, 0, 1], [s, 0, s], [1, 0, 0], [0, 0, -1]]  # inside: face normal
    np.testing.assert_allclose(casts.normal, expected, atol=1e-12)
    tube = Cylinder((0, 0, 0), (0, 0, 2), 1.0, capped=False)
    casts = sphere_cast(tube, [[0.9, 0, 1], [1.2, 0, 1]], [[0.9, 1, 1], [1.2, 1, 1]], 0.3)
    np.testing.assert_allclose(casts.normal, [[-1, 0, 0], [1, 0, 0]], atol=1e-12)


@pytest.mark.parametrize("capped", [True, False])
def test_zero_length_casts_hit_only_in_overlap(capped):
    shape = Cylinder((0, 0, 0), (0, 0, 2), 1.0, capped=capped)
    starts = np.array([[1.2, 0, 1], [3, 0, 1], [0, 0, 2.2], [0, 0, 1], [1.1, 0, 2.1]])
    casts = sphere_cast(shape, starts, starts, 0.3)
    expected = [True, False, capped, capped, True]
    np.testing.assert_array_equal(casts.hit, expected)
    assert (casts.distance[casts.hit] == 0).all()
    check_casts(casts, starts, starts, 0.3, np.zeros(3), np.array([0, 0, 2.0]), 1.0, capped)


@pytest.mark.parametrize("capped", [True, False])
def test_far_starts(capped):
    """From 1e4 away in every direction, aimed near the shape (the rims included)."""
    rng = np.random.default_rng(35)
    n = 200
    direction = rng.normal(size=(n, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    targets = P0 + rng.uniform(-0.2, 1.2, (n, 1)) * (P1 - P0) + rng.uniform(-1.1, 1.1, (n, 3))
    starts = targets + 1e4 * direction
    ends = targets - 3.0 * direction
    casts = sphere_cast(Cylinder(P0, P1, RADIUS, capped=capped), starts, ends, 0.2)
    assert casts.hit.sum() > 80
    check_casts(casts, starts, ends, 0.2, P0, P1, RADIUS, capped, tolerance=1e-13)


@pytest.mark.parametrize("capped", [True, False])
@pytest.mark.parametrize("reach", [1e-9, 1e3])
def test_tiny_and_huge_radii(capped, reach):
    rng = np.random.default_rng(36)
    spread = 4.0 if reach < 1 else 4e3
    starts, ends = random_casts(rng, 200, spread)
    casts = sphere_cast(Cylinder(P0, P1, RADIUS, capped=capped), starts, ends, reach)
    assert 30 < casts.hit.sum() < 200
    check_casts(casts, starts, ends, reach, P0, P1, RADIUS, capped)


@pytest.mark.parametrize("capped", [True, False])
def test_zero_radius_cast_equals_the_ray_cast_clipped_to_the_segment(capped):
    rng = np.random.default_rng(37)
    starts, ends = random_casts(rng, 400)
    shape = Cylinder(P0, P1, RADIUS, capped=capped)
    outside = distance_to_shape(starts, P0, P1, RADIUS, capped) > 1e-6
    starts, ends = starts[outside], ends[outside]
    casts = sphere_cast(shape, starts, ends, 0.0)
    rays = raycast(shape, starts, ends - starts, max_distance=np.linalg.norm(ends - starts, axis=1))
    np.testing.assert_array_equal(casts.hit, rays.hit)
    assert 50 < casts.hit.sum()
    hit = casts.hit
    np.testing.assert_allclose(casts.distance[hit], rays.distance[hit], rtol=0, atol=1e-12)
    np.testing.assert_allclose(casts.point[hit], rays.point[hit], rtol=0, atol=1e-12)
    np.testing.assert_allclose(casts.normal[hit], rays.normal[hit], rtol=0, atol=1e-9)


# --- placed cylinders ----------------------------------------------------------------------------


def _rotation(angle, axis):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


@pytest.mark.parametrize("capped", [True, False])
def test_placed_cylinder_scaled_along_its_axis_and_uniformly_across_folds(capped):
    """Blender's non-uniformly scaled cylinder object: local cylinder along z, object scale
    (1.5, 1.5, 3) (mirrored in x and y too), rotated and moved: a cylinder of radius 1.5 r
    and 3x the height; casts on the Placed shape equal casts on that cylinder."""
    local = Cylinder((0, 0, -1), (0, 0, 1), 0.5, capped=capped)
    matrix = np.eye(4)
    matrix[:3, :3] = _rotation(0.7, [1, 2, 3]) @ np.diag([-1.5, -1.5, 3.0])
    matrix[:3, 3] = [1.0, -2.0, 0.5]
    world_axis = matrix[:3, :3] @ [0, 0, 1.0]
    world = Cylinder(matrix[:3, 3] - world_axis, matrix[:3, 3] + world_axis, 0.75, capped=capped)
    rng = np.random.default_rng(38)
    starts = rng.uniform(-6, 6, (300, 3)) + matrix[:3, 3]
    ends = matrix[:3, 3] + rng.uniform(-2, 2, (300, 3))
    placed = sphere_cast(Placed(local, matrix), starts, ends, 0.3)
    direct = sphere_cast(world, starts, ends, 0.3)
    np.testing.assert_array_equal(placed.hit, direct.hit)
    assert placed.hit.sum() > 50
    for name in ("distance", "center", "point", "normal"):
        a, b = getattr(placed, name)[placed.hit], getattr(direct, name)[direct.hit]
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9, err_msg=name)
    check_casts(placed, starts, ends, 0.3, world.p0, world.p1, 0.75, capped)


def test_placed_cylinder_that_stays_non_rigid_raises_saying_why():
    cylinder = Cylinder((0, 0, 0), (0, 0, 1), 1.0)
    with pytest.raises(ValueError, match="uniformly across its axis.*ellipse"):
        sphere_cast(Placed(cylinder, np.diag([1.0, 2.0, 1.0, 1.0])), [0, 0, 5], [0, 0, -5], 0.1)
    shear = np.eye(4)
    shear[0, 2] = 0.5  # x += 0.5 z: the axis leans, the cross-section stays a circle
    with pytest.raises(ValueError, match="perpendicular.*shears"):
        sphere_cast(Placed(cylinder, shear), [0, 0, 5], [0, 0, -5], 0.1)
    # A scale along a tilted local axis is not along the cylinder's axis: an ellipse.
    tilted = Cylinder((0, 0, 0), (1, 0, 1), 1.0)
    with pytest.raises(ValueError, match="ellipse|shears"):
        sphere_cast(Placed(tilted, np.diag([1.0, 1.0, 2.0, 1.0])), [0, 0, 5], [0, 0, -5], 0.1)


# --- properties ---------------------------------------------------------------------------

finite = st.floats(-5, 5, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(
    start=arrays(np.float64, 3, elements=finite),
    end=arrays(np.float64, 3, elements=finite),
    reach=st.one_of(st.just(0.0), st.floats(1e-6, 3.0)),
    radius=st.floats(0.05, 2.0),
    capped=st.booleans(),
)
def test_property_every_cast_satisfies_the_oracle(start, end, reach, radius, capped):
    p0, p1 = np.array([0.3, -0.2, -1.0]), np.array([-0.1, 0.4, 1.5])
    shape = Cylinder(p0, p1, radius, capped=capped)
    casts = sphere_cast(shape, start[None], end[None], reach)
    check_casts(casts, start[None], end[None], reach, p0, p1, radius, capped)


@settings(max_examples=150, deadline=None)
@given(
    angle=st.floats(0, 2 * np.pi),
    top=st.booleans(),
    offset=arrays(np.float64, 2, elements=st.floats(-2, 2)),
    direction=arrays(np.float64, 3, elements=st.floats(-1, 1)),
    reach=st.floats(1e-6, 3.0),
    capped=st.booleans(),
)
def test_property_casts_past_a_rim_satisfy_the_oracle(angle, top, offset, direction, reach, capped):
    """Casts through points within 2R of a rim circle (radially and axially), any direction:
    the rim tori's territory, inside and outside the tube."""
    r, h = 0.7, 1.6
    radial = np.array([np.cos(angle), np.sin(angle), 0.0])
    through = (r + offset[0] * reach) * radial + [0, 0, (h if top else 0.0) + offset[1] * reach]
    if np.linalg.norm(direction) < 1e-3:
        direction = np.array([0.0, 0.0, -1.0])
    unit = direction / np.linalg.norm(direction)
    starts, ends = (through - 3 * unit)[None], (through + 3 * unit)[None]
    p0, p1 = np.zeros(3), np.array([0, 0, h])
    casts = sphere_cast(Cylinder(p0, p1, r, capped=capped), starts, ends, reach)
    check_casts(casts, starts, ends, reach, p0, p1, r, capped)
