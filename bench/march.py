"""MARCH: seed 004 kept for comparison with the exact walk (solid only, numpy only, raycast
only: ``MarchHeightfield``): samples half a cell apart along the ray
until one lies below the terrain, then 32 bisection steps, reading the terrain height
afresh at every midpoint (the seed compared against a stale height). It misses peaks
thinner than a step.
"""

from __future__ import annotations

import numpy as np

from geometry_queries.core import Heightfield
from geometry_queries.core.heightfield import ray
from geometry_queries.core.heightfield.surfaces import surface_at
from geometry_queries.core.heightfield.walk import Rays, Result

MARCH_BISECTIONS = 32


def march(terrain, surface, spacing, rays, todo, t0, t1, result):
    """Seed 004 vectorized: steps of half a cell from the box entry until a sample is
    at or below the surface, then 32 bisections of the last bracket."""
    step = 0.5 * min(spacing)
    nx = terrain.nx
    tolerance = terrain.tol  # per cell, at its first vertex's index
    rid = todo
    lo = t0[rid]
    end = t1[rid]

    def below(rows, t):
        U = rays.U0[rows] + t * rays.du[rows]
        V = rays.V0[rows] + t * rays.dv[rows]
        h, _, _, i, j = surface_at(terrain, surface, U, V)
        return rays.oz[rows] + t * rays.dz[rows] <= h + tolerance.take(j * nx + i)

    first = below(rid, lo)
    found_rid, found_lo, found_hi = [rid[first]], [lo[first]], [lo[first]]
    keep = ~first
    rid, lo, end = rid[keep], lo[keep], end[keep]
    while rid.size:
        hi = np.minimum(lo + step, end)
        inside = below(rid, hi)
        found_rid.append(rid[inside])
        found_lo.append(lo[inside])
        found_hi.append(hi[inside])
        keep = ~inside & (hi < end)
        rid, lo, end = rid[keep], hi[keep], end[keep]
    rid = np.concatenate(found_rid)
    lo = np.concatenate(found_lo)
    hi = np.concatenate(found_hi)
    for _ in range(MARCH_BISECTIONS):
        middle = 0.5 * (lo + hi)
        inside = below(rid, middle)  # the height at the midpoint, read afresh
        hi = np.where(inside, middle, hi)
        lo = np.where(inside, lo, middle)
    t = 0.5 * (lo + hi)  # the seed's answer: the middle of the last bracket
    _, grad_u, grad_v, i, j = surface_at(
        terrain, surface, rays.U0[rid] + t * rays.du[rid], rays.V0[rid] + t * rays.dv[rid]
    )
    result.distance[rid] = t
    result.grad_u[rid] = grad_u
    result.grad_v[rid] = grad_v
    result.i[rid] = i
    result.j[rid] = j


class MarchHeightfield(Heightfield):
    """A solid Heightfield whose rays MARCH instead of walking the cells exactly."""

    supports = frozenset(("raycast",))
    kernel_family = None  # numpy only

    def intersect(self, origin, direction, max_distance):
        (x0, y0), (dx, dy) = self.origin, self.spacing
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            rays = Rays(origin, direction, x0, y0, dx, dy)
            n = rays.U0.shape[0]
            result = Result(n)
            t0, t1, face = ray._clip(self, rays, np.broadcast_to(max_distance, (n,)))
            todo = np.flatnonzero(t0 <= t1)
            if todo.size:
                march(self._above, self.surface, self.spacing, rays, todo, t0, t1, result)
            return ray.solid_answer(self, rays, t0, face, result)
