"""Sphere cast vs a finite cylinder: capped (a solid) or open (a tube surface).

Math. A sphere of radius R moving along ``start + t u`` first touches the cylinder when its
centre enters the Minkowski sum M of the cylinder and a ball of radius R. In the cylinder's
frame (height z along the axis, radial distance rho) a point's distance to the solid is
``|(max(rho - r, 0), z - clamp(z, 0, h))|`` and to the tube ``|(rho - r, z - clamp(z, 0, h))|``,
so M is a solid of revolution made of straight pieces and two rim tori:

* capped: radius r + R between the caps, radius r between the caps moved out by R, and the
  solid tori ``(rho - r)^2 + (z - c)^2 <= R^2`` around the rims c = 0 and c = h;
* open: the shell ``r - R <= rho <= r + R`` between the end planes (from inside the tube the
  cast meets the inner wall at r - R; with R >= r the shell is solid), and the same tori.

The first entry into a union is the earliest first entry into its pieces. The straight
pieces are intervals of t in closed form (a radial circle with the closest approach first,
as for rays, and slabs). A torus is a quartic in t; rather than solving the quartic, take
its inside as ``F(t) = (rho - r)^2 + (z - c)^2 - R^2 <= 0``. Key step: with
``rho(t) = sqrt(a^2 s^2 + b^2)`` (s = t - t_closest, a the radial speed, b the radial miss
distance, |u| = 1), ``F'' = 2 - 2 r rho'' = 2 - 2 r a^2 b^2 / rho^3``, which only grows with
|s|: F is convex, then concave on the symmetric interval where ``rho^3 < r a^2 b^2``, then
convex again. Newton's tangent never crosses the root from the left end of a convex piece
nor from the right end of a concave one, so each piece in turn gives its first root or
proves it has none (a convex piece whose slope turns non-negative, a concave piece positive
at both ends). The iteration is monotone, quadratic at transversal contacts and linear at
tangent ones. Only casts whose path crosses a rim layer (|z - c| <= R within radius r + R)
before the straight pieces' entry pay for the tori.
"""

from __future__ import annotations

import numpy as np

from .vectors import from_frame, linear_combination

# Newton steps per torus piece: quadratic convergence needs < 10; a tangent contact halves
# the gap per step, so 100 steps take any start within 1e30 of it to float64 resolution.
NEWTON_STEPS = 100
EPSILON = np.finfo(np.float64).eps


def sphere_cast_cylinder(cylinder, start, direction, radius):
    """(distance, point, normal) of a sphere of ``radius`` (per row) cast from ``start``
    along the unit (or zero) ``direction`` against ``cylinder``, component lists in world
    space; distance inf or NaN where it never touches."""
    r, h = cylinder.radius, cylinder.height
    relative = [s - p for s, p in zip(start, cylinder.p0)]
    x0, y0, z0 = (linear_combination(axis, relative) for axis in cylinder.frame)
    dx, dy, dz = (linear_combination(axis, direction) for axis in cylinder.frame)
    reach = np.broadcast_to(np.asarray(radius, dtype=np.float64), x0.shape)
    radial = _Radial(x0, y0, dx, dy)
    slab = _Slab(z0, dz)

    # Where the start already overlaps the shape: distance 0.
    rho0 = np.sqrt(x0 * x0 + y0 * y0)
    off_radial = np.maximum(rho0 - r, 0.0) if cylinder.capped else rho0 - r
    off_axial = z0 - np.clip(z0, 0.0, h)
    overlap = off_radial * off_radial + off_axial * off_axial <= reach * reach

    # Straight pieces: the first point at or after 0 of each interval.
    outer_enter, outer_leave = radial.interval(r + reach)
    enter = np.maximum(outer_enter, slab.enter(0.0, h))
    leave = np.minimum(outer_leave, slab.leave(0.0, h))
    if cylinder.capped:
        side = _first_point(enter, leave)
        inner_enter, inner_leave = radial.interval(r)
        caps = _first_point(
            np.maximum(inner_enter, slab.enter(-reach, h + reach)),
            np.minimum(inner_leave, slab.leave(-reach, h + reach)),
        )
        straight = np.fmin(side, caps)
    else:
        # The shell minus the open hole rho < r - R (no hole when R >= r): skip the hole.
        hole_enter, hole_leave = radial.interval(np.maximum(r - reach, 0.0))
        no_hole = reach >= r
        hole_enter = np.where(no_hole, np.nan, hole_enter)
        first = np.fmax(enter, 0.0)
        first = np.where((first > hole_enter) & (first < hole_leave), hole_leave, first)
        straight = np.where((enter <= leave) & (first <= leave), first, np.inf)

    # Rim tori, for casts whose path crosses a rim layer before the straight entry.
    distance = straight
    for rim, low, high in ((0.0, -reach, 0.0), (h, h, h + reach)):
        lower = np.fmax(np.maximum(outer_enter, slab.enter(low, high)), 0.0)
        upper = np.fmin(np.minimum(outer_leave, slab.leave(low, high)), distance)
        rows = np.flatnonzero((lower <= upper) & ~overlap)
        if len(rows):
            torus = _rim_entry(
                x0[rows], y0[rows], z0[rows] - rim, dx[rows], dy[rows], dz[rows],
                radial, rows, r, reach[rows],
                lower[rows], upper[rows],
            )  # fmt: skip
            distance[rows] = np.fmin(distance[rows], torus)
    distance = np.where(overlap, 0.0, distance)

    # Contact: the centre's nearest point on the cylinder; the normal from it to the centre.
    cx, cy, cz = x0 + distance * dx, y0 + distance * dy, z0 + distance * dz
    if cylinder.capped:
        point, normal = _contact_capped(cx, cy, cz, r, h)
    else:
        point, normal = _contact_tube(cx, cy, cz, dx, dy, r, h, reach)
    world_point = [p + x for p, x in zip(cylinder.p0, from_frame(point, cylinder.frame))]
    return distance, world_point, from_frame(normal, cylinder.frame)


class _Radial:
    """The radial (2D) part of the line: intervals of t within a radius of the axis, found
    from the closest approach to the axis (the sphere's stable form, in the plane)."""

    def __init__(self, x0, y0, dx, dy):
        speed = np.sqrt(dx * dx + dy * dy)
        self.along_axis = speed == 0.0
        self.any_along_axis = self.along_axis.any()
        self.speed = speed
        self.inverse_speed = 1.0 / np.maximum(speed, 1e-300)
        ux, uy = dx * self.inverse_speed, dy * self.inverse_speed
        closest = -(x0 * ux + y0 * uy)
        px, py = x0 + closest * ux, y0 + closest * uy
        self.miss_squared = px * px + py * py  # b^2
        self.closest = closest * self.inverse_speed  # t of the closest approach

    def interval(self, radius):
        """[enter, leave] within ``radius`` of the axis; NaN where never, +-inf along it."""
        half = np.sqrt(radius * radius - self.miss_squared) * self.inverse_speed
        enter, leave = self.closest - half, self.closest + half
        if self.any_along_axis:  # parallel to the axis: all t (or never, NaN stays NaN)
            enter = np.where(self.along_axis & (half >= 0.0), -np.inf, enter)
            leave = np.where(self.along_axis & (half >= 0.0), np.inf, leave)
        return enter, leave


class _Slab:
    """Intervals of t with ``low <= z <= high``; all t or never when parallel to the caps."""

    def __init__(self, z0, dz):
        self.z0 = z0
        self.parallel = dz == 0.0
        self.any_parallel = self.parallel.any()
        self.inverse_dz = 1.0 / (dz + self.parallel) if self.any_parallel else 1.0 / dz

    def _ends(self, low, high):
        to_low = (low - self.z0) * self.inverse_dz
        to_high = (high - self.z0) * self.inverse_dz
        return to_low, to_high

    def _parallel(self, value, low, high, inside_value):
        if not self.any_parallel:
            return value
        inside = (self.z0 >= low) & (self.z0 <= high)
        return np.where(self.parallel, np.where(inside, inside_value, -inside_value), value)

    def enter(self, low, high):
        return self._parallel(np.minimum(*self._ends(low, high)), low, high, -np.inf)

    def leave(self, low, high):
        return self._parallel(np.maximum(*self._ends(low, high)), low, high, np.inf)


def _first_point(enter, leave):
    """The first t >= 0 of [enter, leave]; inf where the interval is empty or behind."""
    return np.where((enter <= leave) & (leave >= 0.0), np.fmax(enter, 0.0), np.inf)


def _rim_entry(x0, y0, zeta0, dx, dy, dz, radial, rows, r, reach, lower, upper):
    """First t in [lower, upper] inside the solid torus ``(rho - r)^2 + zeta^2 <= R^2``
    (zeta = height above the rim's plane), inf where none: Newton on each convex or concave
    piece of F in turn (module docstring)."""
    # F's rounding: the coordinates carry EPSILON * their size; F ~ 2 R * that near a root.
    size = 2.0 * (np.abs(x0) + np.abs(y0) + np.abs(zeta0)) + r + 2.0 * reach
    tolerance = 8.0 * EPSILON * reach * size

    def f_and_slope(index, t):
        x, y, zeta = (
            x0[index] + t * dx[index],
            y0[index] + t * dy[index],
            zeta0[index] + t * dz[index],
        )
        rho = np.sqrt(x * x + y * y)
        off = rho - r
        rho_slope = (x * dx[index] + y * dy[index]) / np.where(rho > 0.0, rho, 1.0)
        f = off * off + zeta * zeta - reach[index] * reach[index]
        return f, 2.0 * (off * rho_slope + zeta * dz[index])

    # The concave middle piece: |s| < s_c where rho(s_c)^3 = r a^2 b^2.
    speed, miss_squared = radial.speed[rows], radial.miss_squared[rows]
    rho_turn = np.cbrt(r * speed * speed * miss_squared)
    half_width = np.sqrt(np.maximum(rho_turn * rho_turn - miss_squared, 0.0))
    half_width *= radial.inverse_speed[rows]
    middle_low = radial.closest[rows] - half_width
    middle_high = radial.closest[rows] + half_width

    found = np.full(x0.shape, np.inf)
    pieces = (
        (lower, np.minimum(upper, middle_low), True),
        (np.maximum(lower, middle_low), np.minimum(upper, middle_high), False),
        (np.maximum(lower, middle_high), upper, True),
    )
    for low, high, convex in pieces:
        index = np.flatnonzero((found == np.inf) & (low <= high))
        if not len(index):
            continue
        f_low, _ = f_and_slope(index, low[index])
        at_low = f_low <= tolerance[index]
        found[index[at_low]] = low[index[at_low]]
        index = index[~at_low]
        if convex:
            begin = low[index]
        else:  # concave and positive at its left end: a root only if F(high) <= 0
            f_high, _ = f_and_slope(index, high[index])
            index = index[f_high <= tolerance[index]]
            begin = high[index]
        found[index] = _newton(f_and_slope, index, begin, low, high, tolerance, convex)
    return found


def _newton(f_and_slope, index, t, low, high, tolerance, convex):
    """Monotone Newton from the root's side: rightward from a convex piece's left end (F > 0),
    leftward from a concave piece's right end (F <= 0). A convex piece whose slope stops
    pointing down, or whose step leaves the piece, has no root: inf."""
    result = np.full(len(index), np.inf)
    active = np.arange(len(index))
    for _ in range(NEWTON_STEPS):
        if not len(active):
            break
        rows = index[active]
        f, slope = f_and_slope(rows, t)
        after = t - f / slope
        if convex:  # F > 0 on the way; at or below the tolerance: the root
            done = f <= tolerance[rows]
            moving = (slope < 0.0) & (after > t) & (after <= high[rows])
        else:  # F <= 0 on the way; a stall (rounding) is on the inside, a hair past the root
            moving = (after < t) & (after >= low[rows])
            done = (f >= -tolerance[rows]) | ~moving
        result[active[done]] = t[done]
        keep = ~done & moving
        active, t = active[keep], after[keep]
    return result


def _radial_unit(cx, cy, rho):
    """(cx, cy) / rho, and (1, 0) on the axis."""
    on_axis = rho == 0.0
    scale = 1.0 / np.where(on_axis, 1.0, rho)
    return cx * scale + on_axis, cy * scale


def _contact_capped(cx, cy, cz, r, h):
    """Nearest point of the solid cylinder to the centre and the normal toward the centre;
    for a centre inside (or on) the solid, the nearest boundary point and its face's normal."""
    rho = np.sqrt(cx * cx + cy * cy)
    ex, ey = _radial_unit(cx, cy, rho)
    nearest_rho = np.minimum(rho, r)
    nearest_z = np.clip(cz, 0.0, h)
    off_radial, off_axial = rho - nearest_rho, cz - nearest_z
    gap = np.sqrt(off_radial * off_radial + off_axial * off_axial)
    inverse_gap = 1.0 / np.where(gap > 0.0, gap, 1.0)
    normal_radial, normal_axial = off_radial * inverse_gap, off_axial * inverse_gap
    inside = gap == 0.0
    if inside.any():  # the nearest face: side, bottom or top
        to_side, to_bottom, to_top = r - rho, cz, h - cz
        side = inside & (to_side <= to_bottom) & (to_side <= to_top)
        top = inside & ~side & (to_top < to_bottom)
        bottom = inside & ~side & ~top
        nearest_rho = np.where(side, r, nearest_rho)
        nearest_z = np.where(top, h, np.where(bottom, 0.0, nearest_z))
        normal_radial = np.where(side, 1.0, normal_radial)
        normal_axial = np.where(top, 1.0, np.where(bottom, -1.0, normal_axial))
    point = [nearest_rho * ex, nearest_rho * ey, nearest_z]
    return point, [normal_radial * ex, normal_radial * ey, normal_axial]


def _contact_tube(cx, cy, cz, dx, dy, r, h, reach):
    """Nearest point of the tube to the centre and the normal toward the centre; for a
    centre on the wall (a zero radius: a ray), the wall's normal facing the cast."""
    rho = np.sqrt(cx * cx + cy * cy)
    ex, ey = _radial_unit(cx, cy, rho)
    nearest_z = np.clip(cz, 0.0, h)
    off_radial, off_axial = rho - r, cz - nearest_z
    gap = np.sqrt(off_radial * off_radial + off_axial * off_axial)
    on_wall = (gap == 0.0) | (reach == 0.0)
    inverse_gap = 1.0 / np.where(on_wall, 1.0, gap)
    facing = np.where(ex * dx + ey * dy > 0.0, -1.0, 1.0)
    normal_radial = np.where(on_wall, facing, off_radial * inverse_gap)
    normal_axial = np.where(on_wall, 0.0, off_axial * inverse_gap)
    return [r * ex, r * ey, nearest_z], [normal_radial * ex, normal_radial * ey, normal_axial]
