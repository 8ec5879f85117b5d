"""Compiled ray vs sphere/circle and sphere cast vs sphere: the one-ray form of core/sphere.py
(its docstring has the math: closest approach first, then the half chord).

Arguments (Sphere._kernel_arguments): (center as a 3-vector, z = 0 for a circle, radius,
dimension).
"""

import numpy as np
from numba import njit

from .rays import (
    BLOCK,
    INF,
    cast_to_local,
    cast_to_world,
    finite,
    helper,
    keep_cast,
    keep_hit,
    load,
    normal_to_world,
    ray_in_block,
    read_block,
    read_rays,
    read_values,
    scaled_unit,
    segment_blocked,
    segment_ray,
    to_local,
    write_cast_hits,
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
    """Segments start ... stop - 1 (core/occlusion.py): out[0][i] True where the ball meets
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
