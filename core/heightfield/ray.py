"""Ray vs Heightfield: the numpy reference of raycast (ray_kernel.py compiles it).

The clip: a ray's interval in the footprint box between the heights (the solid: under the
top, down to where a descending ray is below every height and so inside); the walk
(walk.py) finds the first hit in it, the cell tests in surfaces.py decide each cell, and
grid.py holds the heights, tolerances and hierarchy. A surface's rays below it walk the
mirror image (shape.py's docstring).
"""

from __future__ import annotations

import numpy as np

from .grid import slab
from .surfaces import surface_at
from .walk import Rays, Result, walk


def intersect(field, origin, direction, max_distance):
    """raycast's (distance, normal, cell) for component lists with unit directions."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return _intersect(field, origin, direction, max_distance)


def _intersect(field, origin, direction, max_distance):
    (x0, y0), (dx, dy) = field.origin, field.spacing
    rays = Rays(origin, direction, x0, y0, dx, dy)
    n = rays.U0.shape[0]
    max_distance = np.broadcast_to(max_distance, (n,))
    result = Result(n)
    if not field.solid:
        _cast_surface(field, rays, max_distance, result)
        normal = field._normal(result.grad_u, result.grad_v)
        # The up-facing normal, turned to face the ray (n.d <= 0).
        facing = np.where(_dot(normal, direction) > 0.0, -1.0, 1.0)
        normal = [x * facing for x in normal]
        return result.distance, normal, np.stack([result.i, result.j], axis=1)
    t0, t1, face = _clip(field, rays, max_distance)
    todo = np.flatnonzero(t0 <= t1)
    if todo.size:
        walk(field._above, field._test, rays, todo, t0, t1, result)
    return solid_answer(field, rays, t0, face, result)


def solid_answer(field, rays, t0, face, result):
    """The solid's (distance, normal, cell) from the search's ``result`` on the clipped
    interval starting at ``t0``, entered through ``face`` (_clip)."""
    normal = field._normal(result.grad_u, result.grad_v)
    # First point in the solid on a side wall: horizontal outward normal.
    wall = (result.distance == t0) & ((face == 1) | (face == 2))
    if wall.any():
        sx = np.where(face == 1, -np.sign(rays.du), 0.0)
        sy = np.where(face == 2, -np.sign(rays.dv), 0.0)
        normal = [
            np.where(wall, sx, normal[0]),
            np.where(wall, sy, normal[1]),
            np.where(wall, 0.0, normal[2]),
        ]
    cell = np.stack([result.i, result.j], axis=1)
    return result.distance, normal, cell


def _clip(field, rays, max_distance):
    """The ray's interval [t0, t1] in the footprint box under the top (the largest
    cell top), and the box face it enters by (0: origin inside, 1: x wall, 2: y wall,
    3: top)."""
    ny, nx = field.heights.shape
    ex, lx = slab(rays.U0, rays.du, 0.0, nx - 1.0, field._edge_slack[0])
    ey, ly = slab(rays.V0, rays.dv, 0.0, ny - 1.0, field._edge_slack[1])
    top = field._above.top
    to_top = (top - rays.oz) / rays.dz
    below = rays.oz <= top
    ez = np.where(rays.dz < 0, to_top, np.where(below, -np.inf, np.inf))
    lz = np.where(rays.dz > 0, to_top, np.where(below | (rays.dz < 0), np.inf, -np.inf))
    t0 = np.maximum(np.maximum(ex, ey), np.maximum(ez, 0.0))
    t1 = np.minimum(np.minimum(lx, ly), np.minimum(lz, max_distance))
    # A descending ray in the footprint is in the solid once below the min height, so
    # the search ends there (this keeps t1 finite for vertical rays too).
    to_bottom = np.where(rays.dz < 0, (field.zmin - rays.oz) / rays.dz, np.inf)
    t1 = np.minimum(t1, np.maximum(to_bottom, t0))
    face = np.where(t0 == 0.0, 0, np.where(t0 == ex, 1, np.where(t0 == ey, 2, 3)))
    return t0, t1, face


def _cast_surface(field, rays, max_distance, result):
    """The surface alone: rays above it walk the terrain, rays below it walk the mirror
    image (z and the heights negated) exactly as rays above; gradients come back
    negated."""
    ny, nx = field.heights.shape
    above, mirror = field._above, field._mirror
    ex, lx = slab(rays.U0, rays.du, 0.0, nx - 1.0, field._edge_slack[0])
    ey, ly = slab(rays.V0, rays.dv, 0.0, ny - 1.0, field._edge_slack[1])
    ez, lz = slab(rays.oz, rays.dz, -mirror.top, above.top)
    t0 = np.maximum(np.maximum(ex, ey), np.maximum(ez, 0.0))
    t1 = np.minimum(np.minimum(lx, ly), np.minimum(lz, max_distance))
    todo = t0 <= t1
    # The side a ray starts on: entering the height range through its top or bottom,
    # above or below; else the sign of z - h where it enters (|z - h| <= tol is a hit
    # at t0 from either side).
    below = rays.dz > 0
    level = np.flatnonzero(todo & ~((t0 == ez) & (ez > 0)))
    if level.size:
        t = t0.take(level)
        h = surface_at(
            field._above,
            field.surface,
            rays.U0.take(level) + t * rays.du.take(level),
            rays.V0.take(level) + t * rays.dv.take(level),
        )[0]
        below[level] = rays.oz.take(level) + t * rays.dz.take(level) < h
    from_above = np.flatnonzero(todo & ~below)
    from_below = np.flatnonzero(todo & below)
    if from_above.size:
        walk(above, field._test, rays, from_above, t0, t1, result)
    if from_below.size:
        walk(mirror, field._test, rays.mirrored(), from_below, t0, t1, result)
        result.grad_u[from_below] *= -1.0
        result.grad_v[from_below] *= -1.0


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
