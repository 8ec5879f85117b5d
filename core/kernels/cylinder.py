"""Compiled ray vs finite cylinder, capped (a solid) or open (a tube): the one-ray form of
core/cylinder.py, whose docstring has the math (the side's interval from the 2D ray-circle
problem, closest approach first, overlapped with the slab between the cap planes).

Arguments (Cylinder._kernel_arguments): (p0, frame rows u, v, w as a 3x3 array, height,
radius, capped).
"""

import numpy as np
from numba import njit

from ..cylinder import ON_WALL
from .rays import (
    INF,
    finite,
    load,
    normal_to_world,
    segment_blocked,
    segment_ray,
    store_ray_hit,
    to_local,
    transform,
    transform_transposed,
    unit,
)

MISS = (INF, 0.0, 0.0, 0.0)


@njit(inline="always")
def ray_cylinder(p0, frame, height, radius, capped, ox, oy, oz, ux, uy, uz):
    """Distance and normal of one ray (unit direction) against the cylinder: the outward
    normal of the solid, or for the tube the wall's normal facing the ray."""
    x0, y0, z0 = transform(frame, ox - p0[0], oy - p0[1], oz - p0[2])
    dx, dy, dz = transform(frame, ux, uy, uz)
    between_caps = z0 >= 0.0 and z0 <= height
    if capped and between_caps and x0 * x0 + y0 * y0 <= radius * radius:
        return 0.0, 0.0, 0.0, 0.0  # origin inside or on the solid

    # Infinite cylinder: the 2D ray-circle problem along the radial direction of length a.
    a = np.sqrt(dx * dx + dy * dy)
    along_axis = a == 0.0
    inverse_a = 1.0 / max(a, 1e-300)
    ex, ey = dx * inverse_a, dy * inverse_a
    closest = -(x0 * ex + y0 * ey)
    px, py = x0 + closest * ex, y0 + closest * ey
    half_chord_squared = radius * radius - (px * px + py * py)
    crosses_wall = half_chord_squared >= 0.0
    half_chord = np.sqrt(half_chord_squared) if crosses_wall else 0.0
    side_enter = (closest - half_chord) * inverse_a
    side_leave = (closest + half_chord) * inverse_a

    if not capped:
        # Open tube: the first wall crossing at or after 0 between the cap planes.
        on_wall = abs(np.sqrt(x0 * x0 + y0 * y0) - radius) <= ON_WALL * radius
        if on_wall and between_caps:
            t = 0.0
        elif along_axis or not crosses_wall:
            return MISS
        elif side_enter >= 0.0 and 0.0 <= z0 + side_enter * dz <= height:
            t = side_enter
        elif side_leave >= 0.0 and 0.0 <= z0 + side_leave * dz <= height:
            t = side_leave
        else:
            return MISS
        hit_x, hit_y = x0 + t * dx, y0 + t * dy
        facing = -1.0 if hit_x * dx + hit_y * dy > 0.0 else 1.0  # the normal faces the ray
        scale = facing / max(np.sqrt(hit_x * hit_x + hit_y * hit_y), 1e-300)
        nx, ny, nz = transform_transposed(frame, hit_x * scale, hit_y * scale, 0.0)
        return t, nx, ny, nz

    if not crosses_wall:
        return MISS
    if along_axis:  # inside the infinite cylinder for all t
        side_enter, side_leave = -INF, INF
    # Slab between the caps; a ray parallel to them is inside it for all t or never.
    if dz == 0.0:
        if not between_caps:
            return MISS
        slab_enter, slab_leave = -INF, INF
    else:
        inverse_dz = 1.0 / dz
        to_bottom = -z0 * inverse_dz
        to_top = to_bottom + height * inverse_dz
        slab_enter, slab_leave = min(to_bottom, to_top), max(to_bottom, to_top)
    enter = max(side_enter, slab_enter)
    leave = min(side_leave, slab_leave)
    if not (enter <= leave and leave >= 0.0):
        return MISS
    t = max(enter, 0.0)
    # Normal: the cap's -sign(dz) w when the slab set the entry, else radial.
    if slab_enter >= side_enter:
        nx, ny, nz = transform_transposed(frame, 0.0, 0.0, 1.0 if dz < 0.0 else -1.0)
    else:
        hit_x, hit_y = x0 + t * dx, y0 + t * dy
        scale = 1.0 / max(np.sqrt(hit_x * hit_x + hit_y * hit_y), 1e-300)
        nx, ny, nz = transform_transposed(frame, hit_x * scale, hit_y * scale, 0.0)
    return t, nx, ny, nz


@njit(cache=True, nogil=True)
def raycast(arguments, placement, origins, directions, max_distance, out, start, stop):
    p0, frame, height, radius, capped = arguments
    hit, distance, point, normal = out
    step = 1 if max_distance.shape[0] == origins.shape[0] else 0  # per-ray limits or one
    bad = 0
    for i in range(start, stop):
        ox, oy, oz = load(origins, i)
        dx, dy, dz = load(directions, i)
        ux, uy, uz = unit(dx, dy, dz)
        if not (finite(ox, oy, oz) and finite(dx, dy, dz)) or (ux == 0 and uy == 0 and uz == 0):
            bad += 1
            continue
        lx, ly, lz, lux, luy, luz, stretch = to_local(placement, ox, oy, oz, ux, uy, uz)
        t, nx, ny, nz = ray_cylinder(p0, frame, height, radius, capped, lx, ly, lz, lux, luy, luz)
        nx, ny, nz = normal_to_world(placement, nx, ny, nz)
        limit = max_distance[i * step]
        store_ray_hit(
            hit,
            distance,
            point,
            normal,
            i,
            t / stretch,
            nx,
            ny,
            nz,
            ox,
            oy,
            oz,
            ux,
            uy,
            uz,
            limit,
            capped,
        )
    return bad


@njit(cache=True, nogil=True)
def occluded(arguments, placement, starts, ends, trim, out, start, stop):
    """Segments start ... stop - 1 (core/occlusion.py): out[0][i] True where the cylinder
    (or tube) meets the segment trimmed by ``trim[0]`` of its length at both ends."""
    p0, frame, height, radius, capped = arguments
    (blocked,) = out
    bad = 0
    for i in range(start, stop):
        sx, sy, sz = load(starts, i)
        ex, ey, ez = load(ends, i)
        if not (finite(sx, sy, sz) and finite(ex, ey, ez)):
            bad += 1
            continue
        ox, oy, oz, ux, uy, uz, limit, length = segment_ray(sx, sy, sz, ex, ey, ez, trim[0], 3)
        lx, ly, lz, lux, luy, luz, stretch = to_local(placement, ox, oy, oz, ux, uy, uz)
        t = ray_cylinder(p0, frame, height, radius, capped, lx, ly, lz, lux, luy, luz)[0]
        blocked[i] = segment_blocked(t / stretch, limit, length, capped)
    return bad
