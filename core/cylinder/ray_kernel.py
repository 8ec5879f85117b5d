"""Compiled ray vs finite cylinder, capped (a solid) or open (a tube), and line of sight:
the one-ray form of ray.py, whose docstring has the math (the side's interval from the 2D
ray-circle problem, closest approach first, overlapped with the slab between the cap planes).

Arguments (Cylinder.kernel_arguments): (p0, frame rows u, v, w as a 3x3 array, height,
radius, capped).
"""

import numpy as np
from numba import njit

from ..kernel_common import INF, helper, transform, transform_transposed
from ..kernel_loops import ray_blocks, segments_blocked
from .ray import ON_WALL


@helper
def ray_cylinder(arguments, ox, oy, oz, ux, uy, uz):
    """Distance and normal of one ray (unit direction) against the cylinder: the outward
    normal of the solid, or for the tube the wall's normal facing the ray."""
    p0, frame, height, radius, capped = arguments
    x0, y0, z0 = transform(frame, ox - p0[0], oy - p0[1], oz - p0[2])
    dx, dy, dz = transform(frame, ux, uy, uz)
    t, radial_scale, cap = hit_in_frame(height, radius, capped, x0, y0, z0, dx, dy, dz)
    # The normal in the frame: radial (the hit point's (x, y) scaled) or the cap's axis.
    hit_x, hit_y = x0 + t * dx, y0 + t * dy
    return (t, *transform_transposed(frame, hit_x * radial_scale, hit_y * radial_scale, cap))


@helper
def hit_in_frame(height, radius, capped, x0, y0, z0, dx, dy, dz):
    """In the cylinder's frame: the distance, the factor that turns the hit point's (x, y)
    into the radial normal (0 through a cap) and the normal's axis component (0 on the
    side). (Comparisons as selects, not max/min calls: fewer functions for numba to
    inline, see kernel_common.py.)"""
    between_caps = (z0 >= 0.0) & (z0 <= height)
    if capped and between_caps and x0 * x0 + y0 * y0 <= radius * radius:
        return 0.0, 0.0, 0.0  # origin inside or on the solid

    # Infinite cylinder: the 2D ray-circle problem along the radial direction of length a.
    a = np.sqrt(dx * dx + dy * dy)
    along_axis = a == 0.0
    inverse_a = 1.0 / (a if a > 1e-300 else 1e-300)
    ex, ey = dx * inverse_a, dy * inverse_a
    closest = -(x0 * ex + y0 * ey)
    px, py = x0 + closest * ex, y0 + closest * ey
    half_chord_squared = radius * radius - (px * px + py * py)
    crosses_wall = half_chord_squared >= 0.0
    half_chord = np.sqrt(half_chord_squared) if crosses_wall else 0.0
    side_enter = (closest - half_chord) * inverse_a
    side_leave = (closest + half_chord) * inverse_a

    if not capped:
        # Open tube: the first wall crossing at or after 0 between the cap planes (the
        # numpy module's order: side_leave, then side_enter wins where it is one).
        radial = np.sqrt(x0 * x0 + y0 * y0) - radius
        on_wall = (radial if radial >= 0.0 else -radial) <= ON_WALL * radius
        z_leave = z0 + side_leave * dz
        z_enter = z0 + side_enter * dz
        crossing = crosses_wall & ~along_axis
        leave_on_wall = crossing & (side_leave >= 0.0) & (z_leave >= 0.0) & (z_leave <= height)
        enter_on_wall = crossing & (side_enter >= 0.0) & (z_enter >= 0.0) & (z_enter <= height)
        t = side_leave if leave_on_wall else INF
        t = side_enter if enter_on_wall else t
        t = 0.0 if on_wall & between_caps else t
        hit_x, hit_y = x0 + t * dx, y0 + t * dy
        facing = -1.0 if hit_x * dx + hit_y * dy > 0.0 else 1.0  # the normal faces the ray
        length = np.sqrt(hit_x * hit_x + hit_y * hit_y)
        return t, facing / (length if length > 1e-300 else 1e-300), 0.0

    if not crosses_wall:
        return INF, 0.0, 0.0
    if along_axis:  # inside the infinite cylinder for all t
        side_enter, side_leave = -INF, INF
    # Slab between the caps; a ray parallel to them is inside it for all t or never.
    if dz == 0.0:
        if not between_caps:
            return INF, 0.0, 0.0
        slab_enter, slab_leave = -INF, INF
    else:
        inverse_dz = 1.0 / dz
        to_bottom = -z0 * inverse_dz
        to_top = to_bottom + height * inverse_dz
        slab_enter = to_bottom if to_bottom < to_top else to_top
        slab_leave = to_bottom if to_bottom > to_top else to_top
    enter = side_enter if side_enter > slab_enter else slab_enter
    leave = side_leave if side_leave < slab_leave else slab_leave
    if not (enter <= leave and leave >= 0.0):
        return INF, 0.0, 0.0
    t = enter if enter > 0.0 else 0.0
    # Normal: the cap's -sign(dz) w when the slab set the entry, else radial.
    if slab_enter >= side_enter:
        return t, 0.0, 1.0 if dz < 0.0 else -1.0
    hit_x, hit_y = x0 + t * dx, y0 + t * dy
    length = np.sqrt(hit_x * hit_x + hit_y * hit_y)
    return t, 1.0 / (length if length > 1e-300 else 1e-300), 0.0


@njit(cache=True, nogil=True, error_model="numpy")
def raycast(arguments, placement, origins, directions, max_distance, out, start, stop):
    """Rays start ... stop - 1 (core/backend.py): kernel_loops.ray_blocks with the
    cylinder; a hit at distance 0 is the solid's (normal -direction) only when capped."""
    capped = arguments[4]
    return ray_blocks(
        ray_cylinder,
        arguments,
        capped,
        placement,
        origins,
        directions,
        max_distance,
        out,
        start,
        stop,
    )


@njit(cache=True, nogil=True, error_model="numpy")
def occluded(arguments, placement, starts, ends, trim, out, start, stop):
    """Segments start ... stop - 1 (core/reference.py): out[0][i] True where the cylinder
    (or tube) meets the segment trimmed by ``trim[0]`` of its length at both ends."""
    capped = arguments[4]
    return segments_blocked(
        ray_cylinder, arguments, capped, 3, placement, starts, ends, trim, out, start, stop
    )
