"""Compiled ray vs sphere/circle and line of sight: the one-ray form of ray.py (its
docstring has the math: closest approach first, then the half chord).

Arguments (Sphere.kernel_arguments): (center as a 3-vector, z = 0 for a circle, radius,
dimension).
"""

import numpy as np
from numba import njit

from ..kernel_common import (
    BLOCK,
    INF,
    finite,
    helper,
    keep_hit,
    load,
    normal_to_world,
    ray_in_block,
    read_rays,
    segment_blocked,
    segment_ray,
    to_local,
    write_ray_hits,
)


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
def ray_sphere(center, radius, ox, oy, oz, ux, uy, uz):
    """Distance and outward normal of one ray (unit direction) against the ball."""
    mx, my, mz = ox - center[0], oy - center[1], oz - center[2]
    t = ball_entry(mx, my, mz, ux, uy, uz, radius)
    scale = 1.0 / radius
    return t, (mx + t * ux) * scale, (my + t * uy) * scale, (mz + t * uz) * scale


@njit(cache=True, nogil=True, error_model="numpy")
def raycast(arguments, placement, origins, directions, max_distance, out, start, stop):
    center, radius, _ = arguments
    hit, distance, point, normal = out
    origins, directions, point, normal = (
        origins.reshape(origins.size),
        directions.reshape(directions.size),
        point.reshape(point.size),
        normal.reshape(normal.size),
    )
    block = np.empty((11, BLOCK))
    bad = 0
    for begin in range(start, stop, BLOCK):
        count = stop - begin if stop - begin < BLOCK else BLOCK  # no min() to compile
        bad += read_rays(origins, directions, begin, count, block)
        for j in range(count):
            ox, oy, oz, ux, uy, uz = ray_in_block(block, j)
            lx, ly, lz, lux, luy, luz, stretch = to_local(placement, ox, oy, oz, ux, uy, uz)
            t, nx, ny, nz = ray_sphere(center, radius, lx, ly, lz, lux, luy, luz)
            nx, ny, nz = normal_to_world(placement, nx, ny, nz)
            keep_hit(block, j, t / stretch, nx, ny, nz)
        write_ray_hits(block, begin, count, max_distance, True, hit, distance, point, normal)
    return bad


@njit(cache=True, nogil=True, error_model="numpy")
def occluded(arguments, placement, starts, ends, trim, out, start, stop):
    """Segments start ... stop - 1 (the queries' occluded): out[0][i] True where the ball meets
    the segment trimmed by ``trim[0]`` of its length at both ends."""
    center, radius, dimension = arguments
    (blocked,) = out
    bad = 0
    for i in range(start, stop):
        sx, sy, sz = load(starts, i)
        ex, ey, ez = load(ends, i)
        if not (finite(sx, sy, sz) and finite(ex, ey, ez)):
            bad += 1
            continue
        ox, oy, oz, ux, uy, uz, limit, length = segment_ray(
            sx, sy, sz, ex, ey, ez, trim[0], dimension
        )
        lx, ly, lz, lux, luy, luz, stretch = to_local(placement, ox, oy, oz, ux, uy, uz)
        t = ray_sphere(center, radius, lx, ly, lz, lux, luy, luz)[0]
        blocked[i] = segment_blocked(t / stretch, limit, length, True)
    return bad
