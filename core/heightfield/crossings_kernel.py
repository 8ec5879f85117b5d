"""Compiled raycast_all records of a TRIANGLES terrain: the one-ray form of
core/heightfield/crossings.py, which stays the reference and documents the math.

Per ray: the footprint and the stretch within the heights' range (as the reference), the
breakpoints there (the first and last point over the footprint, the stretch's ends, each
grid line and diagonal crossed) sorted with exact duplicates dropped, g = z - h at each,
and the records (crossings between breakpoints, touches at them, a solid's walls) in the
reference's order, operand for operand, so both backends give the same records bit for
bit. Run twice per batch: once counting the records, once writing them where the counts
put them (``write``).
"""

import numpy as np
from numba import njit

from ..kernel_common import clamp, helper, maximum, minimum, slab
from .walk import TINY


@helper
def _surface(heights, anti_of, has_anti, nx, ny, U, V):
    """surfaces.surface_at for TRIANGLES at one point: height, gradient and cell."""
    i = np.int64(clamp(np.floor(U), 0.0, nx - 2.0))
    j = np.int64(clamp(np.floor(V), 0.0, ny - 2.0))
    u = U - i
    v = V - j
    k = j * nx + i
    h00, h10, h01, h11 = heights[k], heights[k + 1], heights[k + nx], heights[k + nx + 1]
    a0 = h10 - h00
    a1 = h11 - h01
    main_b0 = h11 - h10
    main_b1 = h01 - h00
    anti = has_anti and anti_of[j * (nx - 1) + i] > 0
    if anti:
        b0, b1, c1 = main_b1, main_b0, h01 + h10 - h11
        w = 1.0 - u - v
    else:
        b0, b1, c1 = main_b0, main_b1, h00
        w = u - v
    if w >= 0:
        return h00 + a0 * u + b0 * v, a0, b0, k
    return c1 + a1 * u + b1 * v, a1, b1, k


@helper
def _up_normal(grad_u, grad_v, dx, dy):
    """Heightfield._normal: the up-facing unit normal for a height gradient."""
    nu = -grad_u / dx
    nv = -grad_v / dy
    length = np.sqrt(nu * nu + nv * nv + 1.0)
    return nu / length, nv / length, 1.0 / length


@njit(cache=True, nogil=True, error_model="numpy")
def records(terrain, rays, limit, out, write):
    """Count (``write`` False) or write the records of every ray; returns the count per
    ray. ``terrain``: crossings.CrossingsTerrain; ``rays``: (U0, V0, oz, du, dv, dz and the
    unit world direction x, y, z), arrays of n; ``out``: (ray, distance, normal x, y, z)
    at the offsets of the counts (cumulative)."""
    heights, tol_of, anti_of = terrain.heights, terrain.tol, terrain.anti_of
    has_anti, nx, ny, solid = terrain.has_anti, terrain.nx, terrain.ny, terrain.solid
    low, high = terrain.zmin - terrain.margin, terrain.zmax + terrain.margin
    U0s, V0s, ozs, dus, dvs, dzs, wxs, wys, wzs = rays
    out_ray, out_t, out_nx, out_ny, out_nz = out
    n = U0s.shape[0]
    counts = np.empty(n, dtype=np.int64)
    at = 0
    families = 4 if has_anti else 3
    for r in range(n):
        counts[r] = 0
        U0, V0, oz, du, dv, dz = U0s[r], V0s[r], ozs[r], dus[r], dvs[r], dzs[r]
        ex, lx = slab(U0, du, 1.0 / du, 0.0, nx - 1.0, terrain.slack_x)
        ey, ly = slab(V0, dv, 1.0 / dv, 0.0, ny - 1.0, terrain.slack_y)
        enter, leave = maximum(ex, ey), minimum(lx, ly)
        first = maximum(enter, 0.0)
        last = minimum(leave, limit[r])
        if not first <= last:
            continue
        ez, lz = slab(oz, dz, 1.0 / dz, low, high, 0.0)
        lo, hi = maximum(first, ez), minimum(last, lz)
        inner = lo <= hi
        # -- the breakpoints, sorted, exact duplicates dropped -------------------------
        t, kept = _breakpoints(families, U0, V0, du, dv, first, last, lo, hi, inner)
        # -- g at the breakpoints ------------------------------------------------------
        g = np.empty(kept)
        tol = np.empty(kept)
        for q in range(kept):
            U = U0 + t[q] * du
            V = V0 + t[q] * dv
            h, _, _, k = _surface(heights, anti_of, has_anti, nx, ny, U, V)
            g[q] = (oz + t[q] * dz) - h
            tol[q] = tol_of[k]
        # -- where the ray first comes within the tolerance (crossings._run_start) -------
        run = np.empty(kept, dtype=np.int64)
        for q in range(kept):
            run[q] = -1
            if q > 0:
                reached = g[q] > 0.0 and g[q] <= tol[q] and g[q] < g[q - 1]
                if not solid:
                    reached = reached or (g[q] < 0.0 and g[q] >= -tol[q] and g[q] > g[q - 1])
                if reached:
                    run[q] = run[q - 1] if run[q - 1] >= 0 else q
        # -- the records, in the reference's order --------------------------------------
        found = 0
        if solid and g[0] <= 0.0:  # the first point over the footprint, inside
            found += _emit(out, write, at + found, r, t[0], _wall(ex, enter, du, dv, -1.0))
        for q in range(kept - 1):
            ga, gb = g[q], g[q + 1]
            if solid:
                changes = (ga > 0.0) != (gb > 0.0)
            else:
                changes = (ga > 0.0 and gb <= 0.0) or (ga < 0.0 and gb >= 0.0)
            if changes:
                ratio = minimum(ga / (ga - gb), 1.0)
                ta, tb = t[q], t[q + 1]
                cross = tb if ratio >= 1.0 else ta + (tb - ta) * ratio
                if run[q] >= 0:  # recorded where the ray first came within the tolerance
                    cross = t[run[q]]
                    ta, tb = t[run[q] - 1], t[run[q]]
                normal = _piece_normal(terrain, U0, V0, du, dv, ta, tb)
                found += _emit(out, write, at + found, r, cross, normal)
        for q in range(kept):
            previous = g[q - 1] if q > 0 else np.inf
            following = g[q + 1] if q + 1 < kept else np.inf
            touch = g[q] > 0.0 and g[q] <= tol[q] and previous > g[q] and following >= g[q]
            if not solid:
                previous_below = g[q - 1] if q > 0 else -np.inf
                following_below = g[q + 1] if q + 1 < kept else -np.inf
                touch = touch or (
                    g[q] < 0.0
                    and g[q] >= -tol[q]
                    and previous_below < g[q]
                    and following_below <= g[q]
                )
                touch = touch or (g[q] == 0.0 and q == 0)
            if touch:
                p = run[q] if run[q] >= 0 else q
                end = p - 1 if p > 0 else p
                far = p if p > 0 else (kept - 1 if kept - 1 < p + 1 else p + 1)  # min()
                normal = _piece_normal(terrain, U0, V0, du, dv, t[end], t[far])
                found += _emit(out, write, at + found, r, t[p], normal)
        if solid and g[kept - 1] <= 0.0 and t[kept - 1] == leave:  # out through a side
            found += _emit(out, write, at + found, r, t[kept - 1], _wall(lx, leave, du, dv, 1.0))
        if write:
            for q in range(at, at + found):
                if solid:  # a record where the ray enters over a wall has its normal
                    if out_t[q] == enter and out_t[q] > 0.0:
                        out_nx[q], out_ny[q], out_nz[q] = _wall(ex, enter, du, dv, -1.0)
                else:  # a surface's normal faces the ray
                    along = out_nx[q] * wxs[r] + out_ny[q] * wys[r]
                    along = along + out_nz[q] * wzs[r]
                    if along > 0.0:
                        out_nx[q], out_ny[q], out_nz[q] = -out_nx[q], -out_ny[q], -out_nz[q]
                    else:
                        out_nx[q], out_ny[q], out_nz[q] = out_nx[q], out_ny[q], out_nz[q]
        counts[r] = found
        at += found
    return counts


@helper
def _breakpoints(families, U0, V0, du, dv, first, last, lo, hi, inner):
    """The breakpoints of a ray, sorted, exact duplicates dropped: (t, how many). The first
    and last point over the footprint (last where finite), the ends of the stretch [lo, hi]
    inside the heights' range (where ``inner``), and there every crossing of a line of the
    ``families`` (_family)."""
    total = 1 + (1 if last < np.inf else 0) + (2 if inner else 0)
    lows = np.empty(4)
    numbers = np.empty(4, dtype=np.int64)
    for f in range(families):
        f0, df = _family(f, U0, V0, du, dv)
        fa, fb = f0 + lo * df, f0 + hi * df
        lows[f] = np.floor(minimum(fa, fb)) + 1.0
        numbers[f] = 0
        if inner and df != 0:
            numbers[f] = np.int64(maximum(np.ceil(maximum(fa, fb)) - lows[f], 0.0))
        total += numbers[f]
    t = np.empty(total)
    m = 0
    t[m] = first
    m += 1
    if last < np.inf:
        t[m] = last
        m += 1
    if inner:
        t[m] = lo
        t[m + 1] = hi
        m += 2
    # The points above in order (a stable insertion sort: equal values keep the order
    # they were listed in, as the reference's stable lexsort keeps them)...
    for q in range(1, m):
        value = t[q]
        p = q
        while p > 0 and value < t[p - 1]:
            t[p] = t[p - 1]
            p -= 1
        t[p] = value
    # ... merged with each family's crossings, which come in order along the ray
    # (offset up where df > 0, down where df < 0; the rounding of (k - f0) / df, then
    # the clip to [lo, hi], keeps the order): the smallest head first, on a tie the
    # earlier list (the points above, then family 0, 1, ...), as a stable sort of
    # all of them listed in that order (np.sort, whose compile would cost more than the merge).
    merged = np.empty(total)
    taken = np.empty(4, dtype=np.int64)
    for f in range(families):
        taken[f] = 0
    listed = 0
    for q in range(total):
        best = -1
        best_value = 0.0
        if listed < m:
            best_value = t[listed]
        for f in range(families):
            if taken[f] < numbers[f]:
                f0, df = _family(f, U0, V0, du, dv)
                offset = taken[f] if df > 0 else numbers[f] - 1 - taken[f]
                value = (lows[f] + offset - f0) / df
                value = minimum(maximum(value, lo), hi)
                if (best < 0 and listed >= m) or value < best_value:
                    best = f
                    best_value = value
        merged[q] = best_value
        if best < 0:
            listed += 1
        else:
            taken[best] += 1
    t = merged
    kept = 1
    for q in range(1, total):
        if t[q] != t[kept - 1]:
            t[kept] = t[q]
            kept += 1
    return t, kept


@helper
def _family(f, U0, V0, du, dv):
    """The line family f (U, V, U - V, U + V) as value and rate along the ray."""
    if f == 0:
        return U0, du
    if f == 1:
        return V0, dv
    if f == 2:
        return U0 - V0, du - dv
    return U0 + V0, du + dv


@helper
def _piece_normal(terrain, U0, V0, du, dv, ta, tb):
    """The up-facing normal of the triangle under the piece [ta, tb] of the ray, chosen
    and computed as the walk's cell test does (crossings._triangle_gradient)."""
    heights, anti_of, has_anti = terrain.heights, terrain.anti_of, terrain.has_anti
    nx, ny, dx, dy = terrain.nx, terrain.ny, terrain.dx, terrain.dy
    if du == 0:
        du = -TINY if U0 > 0.5 * (nx - 1.0) else TINY
    if dv == 0:
        dv = -TINY if V0 > 0.5 * (ny - 1.0) else TINY
    middle = 0.5 * (tb - ta)
    i = _cell_along(U0 + (ta + middle) * du, du, nx)
    j = _cell_along(V0 + (ta + middle) * dv, dv, ny)
    k = np.int64(j) * nx + np.int64(i)
    h00, h10, h01, h11 = heights[k], heights[k + 1], heights[k + nx], heights[k + nx + 1]
    ua = U0 + ta * du - i
    va = V0 + ta * dv - j
    curl = (h00 - h10) + (h11 - h01)
    a1 = h11 - h01
    b1 = h01 - h00
    if has_anti:
        anti = anti_of[np.int64(j) * (nx - 1) + np.int64(i)]
        eu = 1.0 - 2.0 * anti
        b1 = b1 + anti * curl
        sigma = -curl * eu
        wa = eu * ua - va + anti
        dw = eu * du - dv
    else:
        eu = 1.0
        sigma = -curl
        wa = ua - va
        dw = du - dv
    on_first = 1.0 if wa + dw * middle > 0 else 0.0
    return _up_normal(a1 + on_first * sigma * eu, b1 - on_first * sigma, dx, dy)


@helper
def _cell_along(U, d, n):
    """crossings._cell_along for one coordinate."""
    cell = np.floor(U) if d > 0 else np.ceil(U) - 1.0
    return clamp(cell, 0.0, n - 2.0)


@helper
def _wall(t_x, t, du, dv, sign):
    """crossings._wall_normal for one ray."""
    if t == t_x:
        return sign * np.sign(du), 0.0, 0.0
    return 0.0, sign * np.sign(dv), 0.0


@helper
def _emit(out, write, q, r, t, normal):
    """Write record q (when writing); returns 1 (one record)."""
    if write:
        out_ray, out_t, out_nx, out_ny, out_nz = out
        out_ray[q] = r
        out_t[q] = t
        out_nx[q], out_ny[q], out_nz[q] = normal
    return 1
