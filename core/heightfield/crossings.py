"""Every crossing of a ray with a terrain (raycast_all), solid or surface.

Math. Between two consecutive points where the ray crosses a grid line (U or V an
integer) or a cell diagonal (U - V an integer; U + V where cells are split the other way),
the ray stays over one triangle, so ``g(t) = z(t) - h(U(t), V(t))`` is linear there.
Evaluate g at these breakpoints: the ray crosses the surface between breakpoints k and
k + 1 where g changes sign (for the solid g <= 0 counts as inside; a surface is also
reached where g comes to 0 from either side), at ``t_k + (t_k+1 - t_k) g_k /
(g_k - g_k+1)`` (no cancellation: the two have opposite signs, or g_k is 0), with the
normal of that piece's triangle. A local minimum of g within (0, tol] at a breakpoint (on a
surface also a local maximum within [-tol, 0)) is a touch, one record, as the walk
counts it a hit (grid.py: each cell's tolerance). As the walk, a crossing or touch that
the ray comes within the tolerance of first (a run of breakpoints with 0 < g <= tol, g
falling) is recorded at the run's first breakpoint, with the normal of the piece before
it; a piece's triangle is chosen as the walk's cell test chooses it (_triangle_gradient),
so on a vertex or an edge raycast_all's first record has raycast's triangle (TRIANGLES;
BILINEAR records stay where they are); where rounding decides (a split line, a border
vertex, a graze) all_hits makes the first record raycast's hit itself (shape.py's
first_record_from_raycast). g cannot change sign where z is outside the
heights' range, so breakpoints are listed only over the stretch of the ray inside it.

The solid (``solid=True``) is the footprint's column under the surface: along the ray,
inside where the ray is over the footprint and g <= 0. Going down through the surface is
an entry, up an exit (both with the up-facing normal: out of the solid); the first point
over the footprint is an entry where g <= 0 there (the origin, or a side wall with its
horizontal outward normal), the last (where the ray leaves the footprint before
max_distance) an exit where g <= 0 there (the wall it leaves by, normal along the ray).
The surface (``solid=False``) has one record per crossing or touch, its normal facing the
ray.

BILINEAR: only grid lines bound the pieces; inside a cell ``g(ta + s) = g(ta) + g1 s +
g2 s^2`` (surfaces.py), so the vertex ``s = -g1 / 2 g2`` of each piece is a breakpoint
too. Then g is monotone between breakpoints: a sign change holds one root, the stable
quadratic's root inside the piece (the linear estimate where rounding leaves none), and a
touch is a breakpoint extremum as for triangles; normals from the patch's gradient there.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .grid import slab
from .surfaces import surface_at
from .walk import TINY, Rays

# Breakpoints per batch: rays are taken in groups whose breakpoints stay below this (a
# ray over a 1024 x 1024 terrain may cross ~4000 lines).
MAX_BREAKPOINTS = 1 << 20


class CrossingsTerrain(NamedTuple):
    """A TRIANGLES terrain as crossings_kernel.records reads it, by name."""

    heights: np.ndarray  # flat, row-major
    tol: np.ndarray  # each cell's tolerance, at its first vertex's index (grid.tolerances)
    anti_of: np.ndarray  # per cell, 1.0 where split along u + v = 1
    has_anti: bool  # whether any cell is (else anti_of is one 0.0)
    nx: int
    ny: int
    dx: float
    dy: float
    zmin: float
    zmax: float
    margin: float  # the heights' range is widened by this (twice the largest tolerance)
    slack_x: float  # the footprint's slack in x and y (Heightfield._edge_slack)
    slack_y: float
    solid: bool


def records(field, origin, direction, max_distance, kernel):
    """raycast_all's records (ray rows, distances, normals) for component lists with unit
    directions: every crossing of the surface, by the compiled ``kernel`` queries.py chose
    (TRIANGLES only), or the numpy reference where it is None."""
    (x0, y0), (dx, dy) = field.origin, field.spacing
    rays = Rays(origin, direction, x0, y0, dx, dy)
    limit = np.broadcast_to(max_distance, rays.U0.shape)
    if kernel is not None:
        return _compiled_crossings(field, rays, direction, limit, kernel)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return crossings(field, rays, direction, limit)


def kernel_arguments(field):
    """The terrain as crossings_kernel.records takes it (Heightfield.kernel_arguments):
    heights and tolerances flat (the arrays ``field`` holds), diagonals (1.0 where anti; a
    placeholder where none), has diagonals, nx, ny, dx, dy, zmin, zmax, the tolerances'
    margin on the height range, the footprint slack in x and y, solid."""
    ny, nx = field.heights.shape
    anti = field._anti
    return CrossingsTerrain(
        heights=field._above.flat,
        tol=field._above.tol,
        anti_of=np.zeros(1) if anti is None else anti,
        has_anti=anti is not None,
        nx=nx,
        ny=ny,
        dx=float(field.spacing[0]),
        dy=float(field.spacing[1]),
        zmin=field.zmin,
        zmax=field.zmax,
        margin=2.0 * float(field._above.tol.max()),
        slack_x=float(field._edge_slack[0]),
        slack_y=float(field._edge_slack[1]),
        solid=field.solid,
    )


def _compiled_crossings(field, rays, direction, limit, kernel):
    """crossings() by the compiled ``kernel`` (crossings_kernel.py's records, the same
    records bit for bit): a pass counting each ray's records, then one writing them."""
    terrain = field.kernel_arguments("raycast_all")
    # Fresh writable copies, whether broadcast or not: one type for the kernel, which
    # compiles once (backend.py).
    arrays = tuple(
        np.array(np.broadcast_to(a, rays.U0.shape), dtype=np.float64)
        for a in (rays.U0, rays.V0, rays.oz, rays.du, rays.dv, rays.dz, *direction, limit)
    )
    ray_arrays, limit = arrays[:9], arrays[9]
    empty = (np.empty(0, dtype=np.int64), *(np.empty(0) for _ in range(4)))
    counts = kernel(terrain, ray_arrays, limit, empty, False)
    total = int(counts.sum())
    out = (np.empty(total, dtype=np.int64), *(np.empty(total) for _ in range(4)))
    kernel(terrain, ray_arrays, limit, out, True)
    return out[0], out[1], list(out[2:])


def crossings(field, rays, direction, limit):
    """raycast_all records of ``field`` (a Heightfield) for ``rays``
    (walk.Rays; ``direction`` their unit directions in world components) up to ``limit``:
    (ray rows, distances, normals as 3 arrays)."""
    ny, nx = field.heights.shape
    ex, lx = slab(rays.U0, rays.du, 0.0, nx - 1.0, field._edge_slack[0])
    ey, ly = slab(rays.V0, rays.dv, 0.0, ny - 1.0, field._edge_slack[1])
    enter, leave = np.maximum(ex, ey), np.minimum(lx, ly)
    first = np.maximum(enter, 0.0)  # the first and last point over the footprint
    last = np.minimum(leave, limit)
    active = first <= last
    # The stretch where z is within the heights' range (widened by the tolerances).
    margin = 2.0 * float(field._above.tol.max())
    ez, lz = slab(rays.oz, rays.dz, field.zmin - margin, field.zmax + margin)
    lo, hi = np.maximum(first, ez), np.minimum(last, lz)
    inner = active & (lo <= hi)
    families = [(rays.U0, rays.du), (rays.V0, rays.dv)]
    if field.surface == "TRIANGLES":
        families.append((rays.U0 - rays.V0, rays.du - rays.dv))
    if field.surface == "TRIANGLES" and field._anti is not None:
        families.append((rays.U0 + rays.V0, rays.du + rays.dv))
    lines = []
    for f0, df in families:
        fa, fb = f0 + lo * df, f0 + hi * df
        low = np.floor(np.minimum(fa, fb)) + 1.0
        count = np.where(inner & (df != 0), np.maximum(np.ceil(np.maximum(fa, fb)) - low, 0), 0)
        lines.append((f0, df, low, count.astype(np.int64)))
    per_ray = np.full(len(rays.U0), 4, dtype=np.int64)  # first, last, the stretch's ends
    for _, _, _, count in lines:
        per_ray += count
    records = []
    group_start = 0
    total = np.cumsum(per_ray)
    while group_start < len(per_ray):
        done = total[group_start - 1] if group_start else 0
        group_end = max(
            int(np.searchsorted(total, done + MAX_BREAKPOINTS, side="right")), group_start + 1
        )
        rows = np.arange(group_start, group_end)
        records.append(
            _group(
                field, rays, direction, rows, lines, (enter, leave, ex, lx), (first, last, lo, hi)
            )
        )
        group_start = group_end
    ray, distance, normal_x, normal_y, normal_z = (np.concatenate(a) for a in zip(*records))
    return ray, distance, [normal_x, normal_y, normal_z]


def _group(field, rays, direction, rows, lines, footprint, stretch):
    """The records of the rays ``rows`` (see crossings): ``footprint`` holds where each
    ray enters and leaves the footprint and its x slab, ``stretch`` the first and last
    point over it and the part of that within the heights' range."""
    enter, leave, ex, lx = footprint
    first, last, lo, hi = stretch
    active = first <= last
    terrain = field._above
    nx = terrain.nx
    # -- breakpoints: first, last, the stretch's ends, the lines crossed in between --------
    ray_parts, t_parts = [], []
    for t, keep in ((first, active), (last, active & (last < np.inf)), (lo, lo <= hi)):
        keep = rows[keep[rows]]
        ray_parts.append(keep)
        t_parts.append(t[keep])
    hi_rows = rows[(lo <= hi)[rows]]
    ray_parts.append(hi_rows)
    t_parts.append(hi[hi_rows])
    for f0, df, low, count in lines:
        counts = count[rows]
        ray = np.repeat(rows, counts)
        offset = np.arange(len(ray)) - np.repeat(np.cumsum(counts) - counts, counts)
        line = low[ray] + offset
        t = (line - f0[ray]) / df[ray]
        ray_parts.append(ray)
        t_parts.append(np.minimum(np.maximum(t, lo[ray]), hi[ray]))
    ray, t = _sorted(np.concatenate(ray_parts), np.concatenate(t_parts))
    bilinear = field.surface == "BILINEAR"
    if bilinear:  # each piece's extremum too: g is then monotone between breakpoints
        k = np.flatnonzero(ray[1:] == ray[:-1])
        g1, g2, _ = _bilinear_piece(field, rays, ray[k], t[k], t[k + 1])
        vertex = -g1 / (2.0 * g2)
        inside = np.flatnonzero((vertex > 0.0) & (vertex < t[k + 1] - t[k]))
        ray, t = _sorted(
            np.concatenate((ray, ray[k[inside]])),
            np.concatenate((t, t[k[inside]] + vertex[inside])),
        )
    # -- g at the breakpoints ------------------------------------------------------------
    U = rays.U0[ray] + t * rays.du[ray]
    V = rays.V0[ray] + t * rays.dv[ray]
    z = rays.oz[ray] + t * rays.dz[ray]
    h, _, _, i, j = surface_at(terrain, field.surface, U, V)
    g = z - h
    tol = terrain.tol[j * nx + i]
    same_next = np.zeros(len(ray), dtype=bool)
    same_next[:-1] = ray[1:] == ray[:-1]
    same_previous = np.zeros(len(ray), dtype=bool)
    same_previous[1:] = same_next[:-1]
    g_next = np.where(same_next, np.roll(g, -1), np.inf)
    g_previous = np.where(same_previous, np.roll(g, 1), np.inf)
    g_previous_below = np.where(same_previous, np.roll(g, 1), -np.inf)
    # -- crossings between breakpoints k and k + 1 ---------------------------------------
    if field.solid:  # in the solid where g <= 0: entries and exits
        changes = (g > 0.0) != (g_next > 0.0)
    else:  # reaching the surface from either side (a start on it is added below)
        changes = ((g > 0.0) & (g_next <= 0.0)) | ((g < 0.0) & (g_next >= 0.0))
    k = np.flatnonzero(same_next & changes)
    ga, gb, ta, tb = g[k], g[k + 1], t[k], t[k + 1]
    ratio = np.minimum(ga / (ga - gb), 1.0)
    cross_ray = ray[k]
    if bilinear:  # the root of the piece's quadratic, near the linear estimate
        ratio = _bilinear_root(field, rays, cross_ray, ta, tb, ga, ratio)
    cross_t = np.where(ratio >= 1.0, tb, ta + (tb - ta) * ratio)
    # A ray that comes within the tolerance of the surface before it crosses or touches
    # it is recorded where it first comes within it (the start of that run of
    # breakpoints), with the normal of the piece that brings it there: as the walk's cell
    # test decides (surfaces._piece_root), so a ray through a vertex or along an edge has
    # raycast's triangle. (BILINEAR pieces: each record where it is.)
    run = np.full(len(g), -1) if bilinear else _run_start(g, g_previous, tol, same_previous)
    if not field.solid:
        run = np.maximum(run, _run_start(-g, -g_previous_below, tol, same_previous))
    early = run[k] >= 0
    start = np.where(early, run[k], k)
    cross_t = np.where(early, t[start], cross_t)
    piece_start = np.where(early, t[start - 1], ta)
    piece_end = np.where(early, t[start], tb)
    cross_normal = _surface_normal(field, rays, cross_ray, piece_start, piece_end, cross_t)
    # -- touches at breakpoints -----------------------------------------------------------
    touch = (g > 0.0) & (g <= tol) & (g_previous > g) & (g_next >= g)
    if not field.solid:
        g_next_below = np.where(same_next, np.roll(g, -1), -np.inf)
        touch |= (g < 0.0) & (g >= -tol) & (g_previous_below < g) & (g_next_below <= g)
        touch |= (g == 0.0) & ~same_previous  # the ray starts over the footprint on it
    k_touch = np.flatnonzero(touch)
    # where the run down to the touch starts, the piece before it (or the piece after
    # the touch, at the ray's first breakpoint)
    at = np.where(run[k_touch] >= 0, run[k_touch], k_touch)
    piece_end = np.where(same_previous[at], at - 1, at)
    piece_far = np.where(same_previous[at], at, np.where(same_next[at], at + 1, at))
    touch_ray = ray[k_touch]
    touch_normal = _surface_normal(field, rays, touch_ray, t[piece_end], t[piece_far], t[at])
    k_touch = at
    parts = [(cross_ray, cross_t, cross_normal), (touch_ray, t[k_touch], touch_normal)]
    if field.solid:
        # The first point over the footprint: an entry where g <= 0 there.
        starting = np.flatnonzero(~same_previous & (g <= 0.0))
        start_ray = ray[starting]
        parts.insert(0, (start_ray, t[starting], _wall_normal(rays, start_ray, ex, enter, -1.0)))
        # The footprint's far side before max_distance: an exit where g <= 0 there.
        ending = np.flatnonzero(~same_next & (g <= 0.0))
        ending = ending[t[ending] == leave[ray[ending]]]
        end_ray = ray[ending]
        parts.append((end_ray, t[ending], _wall_normal(rays, end_ray, lx, leave, 1.0)))
        # A record where the ray enters over a wall (not at its origin) has the wall's normal.
        for index, (part_ray, part_t, normal) in enumerate(parts):
            on_wall = (part_t == enter[part_ray]) & (part_t > 0.0)
            if on_wall.any():
                wall = _wall_normal(rays, part_ray, ex, enter, -1.0)
                parts[index] = (
                    part_ray,
                    part_t,
                    [np.where(on_wall, w, n) for w, n in zip(wall, normal)],
                )
    else:  # a surface's normal faces the ray
        for index, (part_ray, part_t, normal) in enumerate(parts):
            along = normal[0] * direction[0][part_ray] + normal[1] * direction[1][part_ray]
            along = along + normal[2] * direction[2][part_ray]
            facing = np.where(along > 0.0, -1.0, 1.0)
            parts[index] = (part_ray, part_t, [x * facing for x in normal])
    return (
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        *(np.concatenate([p[2][axis] for p in parts]) for axis in range(3)),
    )


def _run_start(g, g_previous, tol, same_previous):
    """For each breakpoint q where the ray has come down to within the tolerance above
    the surface (0 < g <= tol, below g at the breakpoint before), the first breakpoint
    of the run of such breakpoints ending at q; -1 elsewhere."""
    reached = same_previous & (g > 0.0) & (g <= tol) & (g < g_previous)
    index = np.arange(len(g))
    before = np.maximum.accumulate(np.where(reached, -1, index))
    return np.where(reached, before + 1, -1)


def _sorted(ray, t):
    """Breakpoints sorted by (ray, t), exact duplicates dropped."""
    order = np.lexsort((t, ray))
    ray, t = ray[order], t[order]
    distinct = np.ones(len(ray), dtype=bool)
    distinct[1:] = (ray[1:] != ray[:-1]) | (t[1:] != t[:-1])
    return ray[distinct], t[distinct]


def _bilinear_piece(field, rays, ray, ta, tb):
    """The patch under the piece [ta, tb] of each ray (its cell from the piece's middle)
    along it: g(ta + s) = g(ta) + g1 s + g2 s^2 (surfaces.test_bilinear), and (u, v at ta,
    a, b, c) for its gradient."""
    terrain = field._above
    ny, nx = terrain.ny, terrain.nx
    middle = 0.5 * (ta + tb)
    U0, V0, du, dv = rays.U0[ray], rays.V0[ray], rays.du[ray], rays.dv[ray]
    i = np.clip(np.floor(U0 + middle * du), 0, nx - 2)
    j = np.clip(np.floor(V0 + middle * dv), 0, ny - 2)
    k = (j * nx + i).astype(np.intp)
    flat = terrain.flat
    h00, h10, h01, h11 = flat[k], flat[k + 1], flat[k + nx], flat[k + nx + 1]
    a, b, c = h10 - h00, h01 - h00, (h00 - h10) + (h11 - h01)
    ua = U0 + ta * du - i
    va = V0 + ta * dv - j
    g1 = rays.dz[ray] - (a * du + b * dv + c * (ua * dv + va * du))
    g2 = -c * du * dv
    return g1, g2, (ua, va, a, b, c)


def _bilinear_root(field, rays, ray, ta, tb, ga, ratio):
    """Where the monotone quadratic piece reaches 0, as a fraction of [ta, tb]: the root
    of the stable quadratic (surfaces.test_bilinear) within the piece, the one nearest the
    linear estimate ``ratio`` (kept where rounding leaves none inside)."""
    g1, g2, _ = _bilinear_piece(field, rays, ray, ta, tb)
    length = tb - ta
    discriminant = g1 * g1 - 4.0 * g2 * ga
    q = -0.5 * (g1 + np.copysign(np.sqrt(np.maximum(discriminant, 0.0)), g1))
    best = ratio
    distance = np.full(len(ray), np.inf)
    for root in (q / g2, ga / q):
        fraction = root / length
        usable = (fraction >= 0.0) & (fraction <= 1.0) & (discriminant >= 0.0)
        closer = usable & (np.abs(fraction - ratio) < distance)
        best = np.where(closer, fraction, best)
        distance = np.where(closer, np.abs(fraction - ratio), distance)
    return best


def _surface_normal(field, rays, ray, ta, tb, t):
    """The up-facing normal at ``t`` of the surface under the piece [ta, tb] of each ray
    (its triangle, or its bilinear patch, from the piece's middle)."""
    if field.surface == "BILINEAR":
        _, _, (ua, va, a, b, c) = _bilinear_piece(field, rays, ray, ta, tb)
        u = ua + (t - ta) * rays.du[ray]
        v = va + (t - ta) * rays.dv[ray]
        return field._normal(a + c * v, b + c * u)
    return field._normal(*_triangle_gradient(field._above, rays, ray, ta, tb))


def _triangle_gradient(terrain, rays, ray, ta, tb):
    """The height gradient (dh/du, dh/dv) of the triangle under the piece [ta, tb] of
    each ray, chosen and computed as the walk's cell test does (surfaces.test_triangles):
    a direction component 0 taken as +-TINY toward the grid's middle (walk.start_walk),
    the cell the ray moves through at the piece's middle, the triangle by the sign of the
    split line's function there (w > 0: triangle 0), the gradient from triangle 1's plane
    and the kink. So a piece on a cell's edge or split line, or a vertical ray on a
    vertex, gets the triangle the walk gets."""
    nx, ny = terrain.nx, terrain.ny
    U0, V0 = rays.U0[ray], rays.V0[ray]
    du = _nudged(rays.du[ray], U0, nx - 1.0)
    dv = _nudged(rays.dv[ray], V0, ny - 1.0)
    middle = 0.5 * (tb - ta)
    i = _cell_along(U0 + (ta + middle) * du, du, nx)
    j = _cell_along(V0 + (ta + middle) * dv, dv, ny)
    k = (j * nx + i).astype(np.intp)
    flat = terrain.flat
    h00, h10, h01, h11 = flat[k], flat[k + 1], flat[k + nx], flat[k + nx + 1]
    ua = U0 + ta * du - i
    va = V0 + ta * dv - j
    curl = (h00 - h10) + (h11 - h01)
    a1 = h11 - h01
    b1 = h01 - h00
    if terrain.anti is None:
        sigma, eu = -curl, 1.0
        wa = ua - va
        dw = du - dv
    else:
        anti = terrain.anti[(j * (nx - 1) + i).astype(np.intp)]
        eu = 1.0 - 2.0 * anti
        b1 = b1 + anti * curl
        sigma = -curl * eu
        wa = eu * ua - va + anti
        dw = eu * du - dv
    on_first = (wa + dw * middle > 0).astype(np.float64)
    return a1 + on_first * sigma * eu, b1 - on_first * sigma


def _nudged(d, start, cells):
    """A direction component with 0 replaced as walk.start_walk does (+-TINY)."""
    return np.where(d == 0, np.where(start > 0.5 * cells, -TINY, TINY), d)


def _cell_along(U, d, n):
    """The cell a ray moving at rate d is in at grid coordinate U: on a grid line, the
    one it moves into; clamped to the grid's n - 1 cells."""
    cell = np.where(d > 0, np.floor(U), np.ceil(U) - 1.0)
    return np.clip(cell, 0, n - 2)


def _wall_normal(rays, ray, t_x, t, sign):
    """The normal of the footprint's side the ray crosses at ``t``: the x side where ``t``
    is the x slab's, else the y side; ``sign`` -1 for the side it enters by (outward,
    against the ray), +1 for the side it leaves by (outward, along the ray)."""
    x_side = t[ray] == t_x[ray]
    return [
        np.where(x_side, sign * np.sign(rays.du[ray]), 0.0),
        np.where(x_side, 0.0, sign * np.sign(rays.dv[ray])),
        np.zeros(len(ray)),
    ]
