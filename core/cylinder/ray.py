"""Ray vs a finite cylinder from ``p0`` to ``p1``, a capped solid or an open tube (a
surface): the numpy reference, which ray_kernel.py compiles.

Math. Split everything along the unit axis ``w``: a point ``x`` has height
``z = (x - p0).w`` and radial part ``q = (x - p0) - z w``. The solid is the intersection of
two convex sets, the infinite cylinder ``|q| <= r`` and the slab ``0 <= z <= h``. Along the
ray each is an interval of t: the slab's from the two cap planes (all of t when the ray
runs parallel to the caps and starts between them), the infinite cylinder's from the 2D
ray-circle problem of the radial parts (all of t when the ray runs parallel to the axis
and starts within the radius), solved like the sphere with the closest approach first.
The solid's interval is their overlap [max(enters), min(leaves)]; the hit is its first
point at or after 0. Whichever interval set the entry decides the normal: the cap's
``-sign(d.w) w`` or the radial direction. Rays through the rim give enter == leave: a hit.

Open tube (``capped=False``): only the side wall between the cap planes, a surface with no
inside. The line meets the infinite cylinder's wall at the two ends of the same interval,
``side_enter`` and ``side_leave``; each is a hit when it lies at or after 0 and between the
cap planes, and the first such is the answer. The radial normal is turned to face the ray
(``n.d <= 0``: from inside the tube it points inward). A ray parallel to the axis never
crosses the wall (it passes through, or runs along the wall, a zero-measure graze counted
as a miss). An origin on the wall (``| |q| - r | <= 2^-40 r``) is a hit at 0 because the
wall is there, not because anything is inside: its normal still faces the ray.

The work happens in the cylinder's frame (u, v, w), where the radial problem is 2D. For an
axis-aligned cylinder (what Blender's cylinders map to) the frame only picks components.
"""

from __future__ import annotations

import numpy as np

from ..sphere.ray import first_entry, interval_records_with_normals, line_ball_interval
from ..vectors import at_least, from_frame, linear_combination, signed_infinity

# An origin within this fraction of the radius from an open tube's wall is on the wall.
ON_WALL = 2.0**-40


def crossings(cylinder, origin, direction, with_exits):
    """raycast's (distance, normal), or with ``with_exits`` raycast_all's records."""
    relative = [o - p for o, p in zip(origin, cylinder.p0)]
    x0, y0, z0 = (linear_combination(axis, relative) for axis in cylinder.frame)
    dx, dy, dz = (linear_combination(axis, direction) for axis in cylinder.frame)

    # Infinite cylinder: a 2D ray-circle problem in the (u, v) plane. The radial
    # direction has length a < 1, so distances along it are divided by a. A ray
    # parallel to the axis (a = 0) is inside for all t or never: the clamped a keeps
    # the arithmetic finite and the interval is then widened to (-inf, inf).
    a = np.sqrt(dx * dx + dy * dy)
    along_axis = a == 0.0
    any_along_axis = along_axis.any()
    if any_along_axis:
        a = at_least(a, 1e-300)
    inverse_a = 1.0 / a
    side_enter, side_leave = line_ball_interval(
        [x0, y0], [dx * inverse_a, dy * inverse_a], cylinder.radius
    )
    side_enter = side_enter * inverse_a
    side_leave = side_leave * inverse_a
    if not cylinder.capped:
        return _tube(
            cylinder, x0, y0, z0, dx, dy, dz, side_enter, side_leave, along_axis, with_exits
        )
    if any_along_axis:
        side_enter = np.minimum(side_enter, signed_infinity(along_axis))
        side_leave = np.maximum(side_leave, -signed_infinity(along_axis))

    # Slab between the caps; a ray parallel to them is inside for all t or never.
    between_caps = (z0 >= 0.0) & (z0 <= cylinder.height)
    parallel_to_caps = dz == 0.0
    any_parallel = parallel_to_caps.any()
    safe_dz = dz + parallel_to_caps if any_parallel else dz
    inverse_dz = 1.0 / safe_dz
    to_bottom = -z0 * inverse_dz
    to_top = to_bottom + cylinder.height * inverse_dz
    slab_enter = np.minimum(to_bottom, to_top)
    slab_leave = np.maximum(to_bottom, to_top)
    valid = True
    if any_parallel:
        slab_enter = np.minimum(slab_enter, signed_infinity(parallel_to_caps))
        slab_leave = np.maximum(slab_leave, -signed_infinity(parallel_to_caps))
        valid = ~parallel_to_caps | between_caps

    enter = np.maximum(side_enter, slab_enter)
    leave = np.minimum(side_leave, slab_leave)
    inside = (x0 * x0 + y0 * y0 <= cylinder.radius * cylinder.radius) & between_caps
    distance = first_entry(enter, leave, inside, valid & (enter <= leave))

    def normal_at(t, through_cap, cap_sign):
        """The cap's cap_sign * w where the slab set the crossing, else radial."""
        hit_x = x0 + t * dx
        hit_y = y0 + t * dy
        radial_scale = ~through_cap / at_least(np.sqrt(hit_x * hit_x + hit_y * hit_y), 1e-300)
        return from_frame(
            [hit_x * radial_scale, hit_y * radial_scale, through_cap * cap_sign], cylinder.frame
        )

    # Entry normal: the cap's -sign(dz) w when the slab set the entry, else radial.
    down = (dz < 0.0) * 2.0 - 1.0
    entry_normal = normal_at(distance, slab_enter >= side_enter, down)
    if not with_exits:
        return distance, entry_normal
    # The exit, where the interval has length: the cap's +sign(dz) w when the slab set
    # it, else radial (both outward, along the ray).
    exit_ = np.where(leave > distance, leave, np.inf)
    exit_normal = normal_at(exit_, slab_leave <= side_leave, -down)
    return interval_records_with_normals(distance, entry_normal, exit_, exit_normal)


def _tube(cylinder, x0, y0, z0, dx, dy, dz, side_enter, side_leave, along_axis, with_exits):
    """Wall crossings of the open tube (frame coordinates; see the module docstring):
    side_enter and side_leave where at or after 0 and between the cap planes; the
    first of them (raycast's hit), or with ``with_exits`` both (raycast_all)."""
    r = cylinder.radius
    on_wall = (np.abs(np.sqrt(x0 * x0 + y0 * y0) - r) <= ON_WALL * r) & (z0 >= 0.0)
    on_wall &= z0 <= cylinder.height
    crossings = []
    for root in (side_enter, side_leave):
        z = z0 + root * dz
        wall = (root >= 0.0) & (z >= 0.0) & (z <= cylinder.height) & ~along_axis
        crossings.append(np.where(wall, root, np.inf))
    first, second = crossings
    distance = np.where(first < np.inf, first, second)
    distance = np.where(on_wall, 0.0, distance)

    def normal_at(t):
        """Radial normal, turned to face the ray: -sign(q.d) q / |q|."""
        hit_x = x0 + t * dx
        hit_y = y0 + t * dy
        facing = np.where(hit_x * dx + hit_y * dy > 0.0, -1.0, 1.0)
        scale = facing / at_least(np.sqrt(hit_x * hit_x + hit_y * hit_y), 1e-300)
        return from_frame([hit_x * scale, hit_y * scale, np.zeros_like(hit_x)], cylinder.frame)

    if not with_exits:
        return distance, normal_at(distance)
    # The other crossing: the far root where the first record is the near one (or
    # the origin on the wall, which stands for the root nearest to 0), none where the
    # two roots coincide (a tangent touch).
    near_is_origin = on_wall & (np.abs(side_leave) <= np.abs(side_enter))
    other = np.where(near_is_origin, first, second)
    other = np.where(other > distance, other, np.inf)
    return interval_records_with_normals(distance, normal_at(distance), other, normal_at(other))
