"""Compiled sphere cast vs sphere/circle: the one-cast form of cast.py (the ray against
the ball grown by the cast radius).

Arguments (Sphere.kernel_arguments): as ray_kernel.py's.
"""

import numpy as np
from numba import njit

from ..kernel_common import (
    BLOCK,
    INF,
    cast_to_local,
    cast_to_world,
    finite,
    helper,
    keep_cast,
    read_block,
    read_values,
    scaled_unit,
    write_cast_hits,
)
from .ray_kernel import ball_entry


@helper
def cast_sphere(center, radius, sx, sy, sz, ux, uy, uz, cast_radius, dimension):
    """Centre travel, contact point and normal of a ball of ``cast_radius`` moving from s
    along u (unit, or zero for a zero-length cast) against the ball: the ray against the
    ball of radius + cast_radius; the normal points from the target toward the centre."""
    mx, my, mz = sx - center[0], sy - center[1], sz - center[2]
    t = ball_entry(mx, my, mz, ux, uy, uz, radius + cast_radius)
    if t == INF:
        return INF, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    tx, ty, tz = mx + t * ux, my + t * uy, mz + t * uz
    length = np.sqrt(tx * tx + ty * ty + tz * tz)
    if length == 0.0:
        # The cast starts at the target's centre: face back along the cast (or up).
        nx, ny, nz = -ux, -uy, -uz
        if nx == 0.0 and ny == 0.0 and nz == 0.0:
            if dimension == 3:
                nz = 1.0
            else:
                ny = 1.0
    else:
        nx, ny, nz = tx / length, ty / length, tz / length
    px = center[0] + radius * nx
    py = center[1] + radius * ny
    pz = center[2] + radius * nz
    return t, px, py, pz, nx, ny, nz


@njit(cache=True, nogil=True, error_model="numpy")
def sphere_cast(arguments, placement, starts, ends, radius, out, start, stop):
    center, target_radius, dimension = arguments
    hit, distance, center_at_contact, point, normal = out
    starts, ends, point, normal = (
        starts.reshape(starts.size),
        ends.reshape(ends.size),
        point.reshape(point.size),
        normal.reshape(normal.size),
    )
    center_at_contact = center_at_contact.reshape(center_at_contact.size)
    block = np.empty((15, BLOCK))
    bad = 0
    for begin in range(start, stop, BLOCK):
        count = stop - begin if stop - begin < BLOCK else BLOCK  # no min() to compile
        read_block(starts, ends, begin, count, block)
        read_values(radius, begin, count, block, 14)
        for j in range(count):
            sx, sy, sz = block[0, j], block[1, j], block[2, j]
            ex, ey, ez = block[3, j], block[4, j], block[5, j]
            bad += 0 if finite(sx, sy, sz) and finite(ex, ey, ez) else 1
            ux, uy, uz, length = scaled_unit(ex - sx, ey - sy, ez - sz)
            block[3, j], block[4, j], block[5, j] = ux, uy, uz
            cast_radius = block[14, j]
            lx, ly, lz, lux, luy, luz, local_radius = cast_to_local(
                placement, sx, sy, sz, ux, uy, uz, cast_radius
            )
            t, px, py, pz, nx, ny, nz = cast_sphere(
                center, target_radius, lx, ly, lz, lux, luy, luz, local_radius, dimension
            )
            t, px, py, pz, nx, ny, nz = cast_to_world(placement, t, px, py, pz, nx, ny, nz)
            keep_cast(block, j, t, length, px, py, pz, nx, ny, nz)
        write_cast_hits(block, begin, count, hit, distance, center_at_contact, point, normal)
    return bad
