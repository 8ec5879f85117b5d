"""Compiled ray vs sphere/circle and line of sight: the one-ray form of ray.py (its
docstring has the math: closest approach first, then the half chord).

Arguments (Sphere.kernel_arguments): (center as a 3-vector, z = 0 for a circle, radius,
dimension).
"""

import numpy as np
from numba import njit

from ..kernel_common import INF, helper
from ..kernel_loops import ray_blocks, segments_blocked


@helper
def ball_entry(mx, my, mz, ux, uy, uz, radius):
    """First t >= 0 where (m + t u) is within ``radius`` of the origin (u unit or zero);
    0 when m already is, inf when never."""
    if mx * mx + my * my + mz * mz <= radius * radius:
        return 0.0  # origin inside or on the ball
    closest = -(mx * ux + my * uy + mz * uz)
    px = mx + closest * ux
    py = my + closest * uy
    pz = mz + closest * uz
    half_chord_squared = radius * radius - (px * px + py * py + pz * pz)
    if not half_chord_squared >= 0.0:
        return INF  # the line passes the ball
    half_chord = np.sqrt(half_chord_squared)
    if not closest + half_chord >= 0.0:
        return INF  # the ball lies behind the origin
    entry = closest - half_chord
    return entry if entry > 0.0 else 0.0


@helper
def ray_sphere(arguments, ox, oy, oz, ux, uy, uz):
    """Distance and outward normal of one ray (unit direction) against the ball."""
    center, radius, _ = arguments
    mx, my, mz = ox - center[0], oy - center[1], oz - center[2]
    t = ball_entry(mx, my, mz, ux, uy, uz, radius)
    scale = 1.0 / radius
    return t, (mx + t * ux) * scale, (my + t * uy) * scale, (mz + t * uz) * scale


@njit(cache=True, nogil=True, error_model="numpy")
def raycast(arguments, placement, origins, directions, max_distance, out, start, stop):
    """Rays start ... stop - 1 (core/backend.py): kernel_loops.ray_blocks with the ball."""
    return ray_blocks(
        ray_sphere, arguments, True, placement, origins, directions, max_distance, out, start, stop
    )


@njit(cache=True, nogil=True, error_model="numpy")
def occluded(arguments, placement, starts, ends, trim, out, start, stop):
    """Segments start ... stop - 1 (the queries' occluded): out[0][i] True where the ball meets
    the segment trimmed by ``trim[0]`` of its length at both ends."""
    dimension = arguments[2]
    return segments_blocked(
        ray_sphere, arguments, True, dimension, placement, starts, ends, trim, out, start, stop
    )
