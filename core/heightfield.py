"""Ray vs a heightfield terrain: the solid column under a displaced grid, cast exactly.

The terrain. ``heights[j, i]`` is z at ``(x0 + i dx, y0 + j dy)``. Work in grid units
``U = (x - x0) / dx``, ``V = (y - y0) / dy``; cell (i, j) is ``[i, i+1] x [j, j+1]`` with local
coordinates ``u = U - i``, ``v = V - j`` and corner heights h00, h10, h01, h11. Its surface
is two planar triangles split along ``u = v`` (or ``u + v = 1`` where ``diagonals`` is True),
or the bilinear patch ``h00 + a u + b v + c u v`` (a = h10 - h00, b = h01 - h00,
c = h00 - h10 - h01 + h11). The solid is everything at or below the surface inside the
footprint ``[0, nx-1] x [0, ny-1]``, down to -inf.

Math. Along a ray ``p(t) = o + t d`` let ``g(t) = z(t) - h(U(t), V(t))``: the ray is in the
solid where ``g <= 0`` inside the footprint, and the hit is the first such t. Clip the ray to
the footprint box (top at max height; the box entry ``t0`` is a side wall, the top or the
origin). Inside one cell ``g`` is piecewise linear with at most one kink, where the ray
crosses the diagonal (``w = u - v`` is linear in t, so the kink is at ``t_m = t_a - w_a /
w'``); on each piece the first root of a linear function is ``t_a + g(t_a) / -g'``, with no
cancellation since g(t_a) > 0 > g'. For BILINEAR, ``g(t_a + s) = g0 + g1 s + g2 s^2`` with
``g2 = -c du dv``: the smallest root in the cell's interval, from the stable quadratic
``q = -(g1 + sign(g1) sqrt(g1^2 - 4 g2 g0)) / 2``, roots ``q / g2`` and ``g0 / q``.
Because the surface is continuous and the cells a ray visits cover its whole path, testing
each visited cell on its closed interval ``[t_enter, t_exit]`` cannot miss: a ray through a
vertex or along a grid line is tested at that point by the cells on both sides.

Walk (EXACT). Amanatides & Woo: a ray in cell i leaves it at ``t = (i + [d > 0] - U0) / du``,
computed afresh from the integer index each step (no accumulated error), and steps to the
neighbour on the axis that leaves first; a tie steps one axis, and the next step covers the
zero-length remainder. A min/max hierarchy (as in Jolt's HeightFieldShape and Tevs et al.'s
maximum mipmaps) skips empty space: blocks of ``BLOCK`` x ``BLOCK`` cells with the min/max
of their vertex heights; a ray walks blocks, and only where its lowest z over the block is
at or below the block's max does it walk that block's cells, starting where it first comes
down to the block max. All rays move together, one step per iteration, and the active set
is compacted as rays finish, so there is no Python loop over rays.

MARCH keeps seed 004 for comparison: samples half a cell apart along the ray until one lies
below the terrain, then 32 bisection steps, reading the terrain height afresh at every
midpoint (the seed compared against a stale height). It misses peaks thinner than a step.

Tolerance. ``g <= tol`` counts as touching, with ``tol = 2^-40`` of the height scale: the
height under a point computed from a rounded t is off by a few ulps, and a ray that grazes
a spike tip or an edge exactly would otherwise be decided by that rounding.
"""
from __future__ import annotations

import numpy as np

from .shapes import as_positive

BLOCK = 8  # cells per side of a hierarchy block
SURFACES = ("TRIANGLES", "BILINEAR")
METHODS = ("EXACT", "MARCH")
MARCH_BISECTIONS = 32


def _as_choice(name, value, allowed):
    if not isinstance(value, str) or value.upper() not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value.upper()


def _as_pair(name, value, positive):
    """Two finite floats (a scalar is used for both); > 0 when ``positive``."""
    try:
        pair = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be two numbers: {error}") from None
    if pair.ndim == 0:
        pair = np.array([pair, pair])
    if pair.shape != (2,):
        raise ValueError(f"{name} must be two numbers (x, y), got shape {pair.shape}")
    if positive:
        return tuple(as_positive(f"{name}[{axis}]", number) for axis, number in enumerate(pair))
    if not np.isfinite(pair).all():
        raise ValueError(f"{name} must be finite, got {pair.tolist()}")
    return float(pair[0]), float(pair[1])


def _as_heights(value):
    try:
        heights = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"heights must be a 2D array of numbers: {error}") from None
    if heights.ndim != 2:
        raise ValueError(f"heights must be a 2D array (ny, nx), got shape {heights.shape}")
    if heights.shape[0] < 2 or heights.shape[1] < 2:
        raise ValueError(f"heights must be at least 2x2, got shape {heights.shape}")
    finite = np.isfinite(heights)
    if not finite.all():
        j, i = np.argwhere(~finite)[0]
        raise ValueError(f"heights must be finite: heights[{j}, {i}] (row {j}) is "
                         f"{heights[j, i]}")
    heights.setflags(write=False)
    return heights


def _as_diagonals(value, cells_shape):
    if value is None:
        return None
    diagonals = np.asarray(value)
    if diagonals.shape != cells_shape:
        raise ValueError(f"diagonals must have shape {cells_shape} (ny-1, nx-1), "
                         f"got {diagonals.shape}")
    if diagonals.dtype != bool:
        if not np.isin(diagonals, (0, 1)).all():
            j, i = np.argwhere(~np.isin(diagonals, (0, 1)))[0]
            raise ValueError(f"diagonals must be booleans: diagonals[{j}, {i}] (row {j}) is "
                             f"{diagonals[j, i]!r}")
        diagonals = diagonals.astype(bool)
    diagonals = np.array(diagonals, dtype=bool)
    diagonals.setflags(write=False)
    return diagonals


def _block_reduce(heights, block, ufunc):
    """ufunc (np.maximum/np.minimum) of the vertex heights of each block of cells; a block
    holds cells [I*block, (I+1)*block) and so vertices I*block ... (I+1)*block inclusive."""
    reduced = heights
    for axis in (1, 0):
        starts = np.arange(0, reduced.shape[axis] - 1, block)
        part = ufunc.reduceat(reduced, starts, axis=axis)
        # reduceat stops before the next start; add that shared boundary vertex line.
        if axis == 1:
            part[:, :-1] = ufunc(part[:, :-1], reduced[:, starts[1:]])
        else:
            part[:-1] = ufunc(part[:-1], reduced[starts[1:]])
        reduced = part
    return np.ascontiguousarray(reduced)


class Heightfield:
    """A terrain: the solid under a displaced regular grid (see the module docstring)."""

    dimension = 3

    def __init__(self, heights, spacing=(1.0, 1.0), origin=(0.0, 0.0), surface="TRIANGLES",
                 diagonals=None, method="EXACT"):
        self.heights = _as_heights(heights)
        self.spacing = _as_pair("spacing", spacing, positive=True)
        self.origin = _as_pair("origin", origin, positive=False)
        self.surface = _as_choice("surface", surface, SURFACES)
        self.method = _as_choice("method", method, METHODS)
        ny, nx = self.heights.shape
        self.diagonals = _as_diagonals(diagonals, (ny - 1, nx - 1))
        self.zmin = float(self.heights.min())
        self.zmax = float(self.heights.max())
        scale = max(abs(self.zmin), abs(self.zmax), self.zmax - self.zmin)
        self.tolerance = scale * 2.0 ** -40
        self._flat = self.heights.ravel()
        self._anti = None if self.diagonals is None or not self.diagonals.any() \
            else self.diagonals.ravel()
        self._hierarchy = None

    def __repr__(self):
        ny, nx = self.heights.shape
        return (f"Heightfield({ny}x{nx} heights, spacing={self.spacing}, origin={self.origin}, "
                f"surface={self.surface!r}, method={self.method!r})")

    # -- hierarchy -------------------------------------------------------------------------

    @property
    def hierarchy(self):
        """(block max, block min) over BLOCK x BLOCK cells, flattened; built on first use."""
        if self._hierarchy is None:
            self._hierarchy = (_block_reduce(self.heights, BLOCK, np.maximum).ravel(),
                               _block_reduce(self.heights, BLOCK, np.minimum).ravel())
        return self._hierarchy

    # -- the surface -----------------------------------------------------------------------

    def _corners(self, i, j):
        k = j * self.heights.shape[1] + i
        flat = self._flat
        nx = self.heights.shape[1]
        return flat.take(k), flat.take(k + 1), flat.take(k + nx), flat.take(k + nx + 1)

    def _planes(self, h00, h10, h01, h11, i, j):
        """Both triangles' planes h = c + a u + b v of each cell, and the split line
        w = sigma u - v + kappa (w >= 0 on triangle 0)."""
        a0 = h10 - h00
        a1 = h11 - h01
        main_b0 = h11 - h10
        main_b1 = h01 - h00
        if self._anti is None:
            return (h00, a0, main_b0), (h00, a1, main_b1), None
        anti = self._anti.take(j * (self.heights.shape[1] - 1) + i)
        b0 = np.where(anti, main_b1, main_b0)
        b1 = np.where(anti, main_b0, main_b1)
        c1 = np.where(anti, h01 + h10 - h11, h00)
        return (h00, a0, b0), (c1, a1, b1), anti

    def _local(self, U, V):
        ny, nx = self.heights.shape
        i = np.clip(np.floor(U), 0, nx - 2).astype(np.intp)
        j = np.clip(np.floor(V), 0, ny - 2).astype(np.intp)
        return i, j, U - i, V - j

    def _surface_at(self, U, V):
        """Height, gradient (dh/du, dh/dv) and cell at grid coordinates (U, V) (clamped)."""
        i, j, u, v = self._local(U, V)
        h00, h10, h01, h11 = self._corners(i, j)
        if self.surface == "BILINEAR":
            a, b, c = h10 - h00, h01 - h00, h00 - h10 - h01 + h11
            return h00 + a * u + b * v + c * u * v, a + c * v, b + c * u, i, j
        (c0, a0, b0), (c1, a1, b1), anti = self._planes(h00, h10, h01, h11, i, j)
        w = u - v if anti is None else np.where(anti, 1.0 - u - v, u - v)
        first = w >= 0
        a, b, c = np.where(first, a0, a1), np.where(first, b0, b1), np.where(first, c0, c1)
        return c + a * u + b * v, a, b, i, j

    def height_at(self, x, y):
        """Surface height at world (x, y) (arrays broadcast), NaN outside the footprint."""
        ny, nx = self.heights.shape
        U = (np.asarray(x, dtype=np.float64) - self.origin[0]) / self.spacing[0]
        V = (np.asarray(y, dtype=np.float64) - self.origin[1]) / self.spacing[1]
        U, V = np.broadcast_arrays(U, V)
        height = self._surface_at(U.ravel(), V.ravel())[0].reshape(U.shape)
        return np.where((U >= 0) & (U <= nx - 1) & (V >= 0) & (V <= ny - 1), height, np.nan)

    def _normal(self, grad_u, grad_v):
        nx_, ny_ = -grad_u / self.spacing[0], -grad_v / self.spacing[1]
        length = np.sqrt(nx_ * nx_ + ny_ * ny_ + 1.0)
        return [nx_ / length, ny_ / length, 1.0 / length]

    # -- the ray query ---------------------------------------------------------------------

    def _intersect(self, origins, directions, max_distance):
        found = self._intersect_components(list(origins.T), list(directions.T), max_distance)
        return (found[0], np.stack(found[1], axis=1)) + tuple(found[2:])

    def _intersect_components(self, origin, direction, max_distance):
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return self._cast(origin, direction, max_distance)

    def _cast(self, origin, direction, max_distance):
        ny, nx = self.heights.shape
        (x0, y0), (dx, dy) = self.origin, self.spacing
        rays = _Rays(origin, direction, x0, y0, dx, dy)
        n = rays.U0.shape[0]
        t0, t1, face = self._clip(rays, np.broadcast_to(max_distance, (n,)))
        result = _Result(n)
        todo = np.flatnonzero(t0 <= t1)
        if todo.size:
            if self.method == "EXACT":
                self._walk(rays, todo, t0, t1, result)
            else:
                self._march(rays, todo, t0, t1, result)
        normal = self._normal(result.grad_u, result.grad_v)
        # First point in the solid on a side wall: horizontal outward normal.
        wall = (result.distance == t0) & ((face == 1) | (face == 2))
        if wall.any():
            sx = np.where(face == 1, -np.sign(rays.du), 0.0)
            sy = np.where(face == 2, -np.sign(rays.dv), 0.0)
            normal = [np.where(wall, sx, normal[0]), np.where(wall, sy, normal[1]),
                      np.where(wall, 0.0, normal[2])]
        cell = np.stack([result.i, result.j], axis=1)
        return result.distance, normal, cell

    def _clip(self, rays, max_distance):
        """The ray's interval [t0, t1] in the footprint box under the max height, and the
        box face it enters by (0: origin inside, 1: x wall, 2: y wall, 3: top)."""
        ny, nx = self.heights.shape
        ex, lx = _slab(rays.U0, rays.du, 0.0, nx - 1.0)
        ey, ly = _slab(rays.V0, rays.dv, 0.0, ny - 1.0)
        to_top = (self.zmax - rays.oz) / rays.dz
        below = rays.oz <= self.zmax
        ez = np.where(rays.dz < 0, to_top, np.where(below, -np.inf, np.inf))
        lz = np.where(rays.dz > 0, to_top, np.where(below | (rays.dz < 0), np.inf, -np.inf))
        t0 = np.maximum(np.maximum(ex, ey), np.maximum(ez, 0.0))
        t1 = np.minimum(np.minimum(lx, ly), np.minimum(lz, max_distance))
        face = np.where(t0 == 0.0, 0, np.where(t0 == ex, 1, np.where(t0 == ey, 2, 3)))
        return t0, t1, face

    # EXACT: block walk, then cell walk inside candidate blocks ----------------------------

    def _walk(self, rays, todo, t0, t1, result):
        ny, nx = self.heights.shape
        block_max, _ = self.hierarchy
        nbx = -(-(nx - 1) // BLOCK)
        nby = -(-(ny - 1) // BLOCK)
        tol = self.tolerance
        # Per-ray constants, compacted together as rows of one matrix.
        state = _WalkState(rays, todo, t0, t1)
        U = state.U0 + t0[todo] * state.du
        V = state.V0 + t0[todo] * state.dv
        state.I = np.clip(np.floor(U / BLOCK), 0, nbx - 1).astype(np.intp)
        state.J = np.clip(np.floor(V / BLOCK), 0, nby - 1).astype(np.intp)
        state.tc = t0[todo]
        coarse = state
        while coarse.size:
            # Phase 1: walk blocks until every ray sits in a candidate block or is done.
            candidates = []
            while coarse.size:
                s = coarse
                tbx, tby = s.exits(s.I, s.J, BLOCK)
                te = np.maximum(np.minimum(np.minimum(tbx, tby), s.t1), s.tc)
                zlow = np.minimum(s.oz + s.tc * s.dz, s.oz + te * s.dz)
                top = block_max.take(s.J * nbx + s.I)
                candidate = zlow <= top + tol
                s.te = te
                s.top = top
                s.step_x = tbx <= tby
                if candidate.any():
                    candidates.append(s.select(candidate))
                moving = ~candidate & (te < s.t1)
                coarse = s.select(moving)
                coarse.advance_block(nbx, nby)
            if not candidates:
                break
            fine = _WalkState.concat(candidates)
            # Phase 2: walk the cells of each candidate block.
            left = self._walk_cells(fine, result, nx, ny)
            # Rays that found nothing in their block go on to the next block.
            left = left.select(left.te < left.t1)
            left.advance_block(nbx, nby)
            coarse = left

    def _walk_cells(self, s, result, nx, ny):
        """Cell walk inside each ray's block; records hits, returns the rays without one."""
        tol = self.tolerance
        # Start where the ray comes down to the block max (or end where it climbs above it).
        to_top = (s.top + tol - s.oz) / s.dz
        start = np.where(s.dz < 0, np.maximum(s.tc, to_top), s.tc)
        s.tf = np.where(s.dz > 0, np.minimum(s.te, to_top), s.te)
        s.ta = np.minimum(start, s.tf)
        s.ilo = s.I * BLOCK
        s.jlo = s.J * BLOCK
        s.ihi = np.minimum(s.ilo + BLOCK, nx - 1) - 1
        s.jhi = np.minimum(s.jlo + BLOCK, ny - 1) - 1
        s.i = np.clip(np.floor(s.U0 + s.ta * s.du), s.ilo, s.ihi).astype(np.intp)
        s.j = np.clip(np.floor(s.V0 + s.ta * s.dv), s.jlo, s.jhi).astype(np.intp)
        misses = []
        test = self._test_bilinear if self.surface == "BILINEAR" else self._test_triangles
        while s.size:
            tbx, tby = s.exits(s.i, s.j, 1)
            tb = np.maximum(np.minimum(np.minimum(tbx, tby), s.tf), s.ta)
            hit, t, grad_u, grad_v = test(s, tb, tol)
            if hit.any():
                rows = s.rid[hit]
                result.distance[rows] = t[hit]
                result.grad_u[rows] = grad_u[hit]
                result.grad_v[rows] = grad_v[hit]
                result.i[rows] = s.i[hit]
                result.j[rows] = s.j[hit]
            step_x = tbx <= tby
            s.i = s.i + np.where(step_x, s.sx, 0)
            s.j = s.j + np.where(step_x, 0, s.sy)
            s.ta = tb
            out = ((s.i < s.ilo) | (s.i > s.ihi) | (s.j < s.jlo) | (s.j > s.jhi)
                   | (tb >= s.tf))
            done = ~hit & out
            if done.any():
                misses.append(s.select(done))
            s = s.select(~hit & ~out)
        return _WalkState.concat(misses) if misses else s

    def _test_triangles(self, s, tb, tol):
        """First t in [ta, tb] where the ray is at or below the cell's two triangles."""
        ta = s.ta
        h00, h10, h01, h11 = self._corners(s.i, s.j)
        (c0, a0, b0), (c1, a1, b1), anti = self._planes(h00, h10, h01, h11, s.i, s.j)
        ua = s.U0 + ta * s.du - s.i
        va = s.V0 + ta * s.dv - s.j
        za = s.oz + ta * s.dz
        if anti is None:
            wa = ua - va
            dw = s.du - s.dv
        else:
            wa = np.where(anti, 1.0 - ua - va, ua - va)
            dw = np.where(anti, -s.du - s.dv, s.du - s.dv)
        # Kink where the ray crosses the diagonal; piece 1 on triangle 0 when w >= 0 after ta.
        tm = ta - wa / dw
        cross = (tm > ta) & (tm < tb)
        tm = np.where(cross, tm, tb)
        first = (wa > 0) | ((wa == 0) & (dw >= 0))
        second = first ^ cross
        ca, aa, ba = np.where(first, c0, c1), np.where(first, a0, a1), np.where(first, b0, b1)
        cb, ab, bb = np.where(second, c0, c1), np.where(second, a0, a1), np.where(second, b0, b1)
        ga = za - ca - aa * ua - ba * va
        sa = s.dz - aa * s.du - ba * s.dv
        gb = za - cb - ab * ua - bb * va
        sb = s.dz - ab * s.du - bb * s.dv
        at_start = ga <= tol
        on_first = ga + sa * (tm - ta) <= tol
        on_second = gb + sb * (tb - ta) <= tol
        t_first = np.minimum(ta + ga / -sa, tm)
        t_second = np.where(sb < 0, np.clip(ta + gb / -sb, tm, tb), tm)
        hit = at_start | on_first | on_second
        early = at_start | on_first
        t = np.where(at_start, ta, np.where(on_first, t_first, t_second))
        return hit, t, np.where(early, aa, ab), np.where(early, ba, bb)

    def _test_bilinear(self, s, tb, tol):
        """First t in [ta, tb] where the ray is at or below the cell's bilinear patch."""
        ta = s.ta
        h00, h10, h01, h11 = self._corners(s.i, s.j)
        a, b, c = h10 - h00, h01 - h00, h00 - h10 - h01 + h11
        ua = s.U0 + ta * s.du - s.i
        va = s.V0 + ta * s.dv - s.j
        g0 = s.oz + ta * s.dz - (h00 + a * ua + b * va + c * ua * va)
        g1 = s.dz - (a * s.du + b * s.dv + c * (ua * s.dv + va * s.du))
        g2 = -c * s.du * s.dv
        length = tb - ta
        discriminant = g1 * g1 - 4.0 * g2 * g0
        real = discriminant >= 0
        q = -0.5 * (g1 + np.copysign(np.sqrt(np.maximum(discriminant, 0.0)), g1))
        r1 = q / g2
        r2 = g0 / q
        r1 = np.where(real & (r1 >= 0) & (r1 <= length), r1, np.inf)
        r2 = np.where(real & (r2 >= 0) & (r2 <= length), r2, np.inf)
        root = np.minimum(r1, r2)
        # Within the tolerance: the end of the interval, or a tangent touch at the vertex.
        g_end = g0 + length * (g1 + length * g2)
        vertex = np.clip(-g1 / (2.0 * g2), 0.0, length)
        g_vertex = g0 + vertex * (g1 + vertex * g2)
        root = np.where(np.isfinite(root), root,
                        np.where(g_end <= tol, length, np.where(g_vertex <= tol, vertex, np.inf)))
        at_start = g0 <= tol
        s_hit = np.where(at_start, 0.0, root)
        hit = np.isfinite(s_hit)
        s_hit = np.where(hit, s_hit, 0.0)
        u = ua + s_hit * s.du
        v = va + s_hit * s.dv
        return hit, ta + s_hit, a + c * v, b + c * u

    # MARCH: seed 004, bug fixed -----------------------------------------------------------

    def _march(self, rays, todo, t0, t1, result):
        tol = self.tolerance
        step = 0.5 * min(self.spacing)
        rid = todo
        lo = t0[rid]
        end = t1[rid]

        def below(rows, t):
            U = rays.U0[rows] + t * rays.du[rows]
            V = rays.V0[rows] + t * rays.dv[rows]
            return rays.oz[rows] + t * rays.dz[rows] <= self._surface_at(U, V)[0] + tol

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
        t = np.where(lo == hi, lo, 0.5 * (lo + hi))
        t = np.where(lo == t0[rid], np.where(below(rid, lo), lo, t), t)
        _, grad_u, grad_v, i, j = self._surface_at(rays.U0[rid] + t * rays.du[rid],
                                                   rays.V0[rid] + t * rays.dv[rid])
        result.distance[rid] = t
        result.grad_u[rid] = grad_u
        result.grad_v[rid] = grad_v
        result.i[rid] = i
        result.j[rid] = j


def _slab(p0, dp, lo, hi):
    """Interval of t where p0 + t dp lies in [lo, hi] (all t or none when dp == 0)."""
    ta = (lo - p0) / dp
    tb = (hi - p0) / dp
    inside = (p0 >= lo) & (p0 <= hi)
    parallel = dp == 0
    enter = np.where(parallel, np.where(inside, -np.inf, np.inf), np.minimum(ta, tb))
    leave = np.where(parallel, np.where(inside, np.inf, -np.inf), np.maximum(ta, tb))
    return enter, leave


class _Rays:
    """One chunk of rays in grid units: U = U0 + t du, V = V0 + t dv, z = oz + t dz, where t
    stays the world distance along the unit direction."""

    def __init__(self, origin, direction, x0, y0, dx, dy):
        self.U0 = (np.asarray(origin[0], dtype=np.float64) - x0) / dx
        self.V0 = (np.asarray(origin[1], dtype=np.float64) - y0) / dy
        self.oz = np.asarray(origin[2], dtype=np.float64)
        self.du = np.asarray(direction[0], dtype=np.float64) / dx
        self.dv = np.asarray(direction[1], dtype=np.float64) / dy
        self.dz = np.asarray(direction[2], dtype=np.float64)


class _Result:
    def __init__(self, n):
        self.distance = np.full(n, np.inf)
        self.grad_u = np.zeros(n)
        self.grad_v = np.zeros(n)
        self.i = np.full(n, -1, dtype=np.int64)
        self.j = np.full(n, -1, dtype=np.int64)


class _WalkState:
    """Per-ray walk state of the active rays; ``select`` keeps a subset of every array."""

    CONSTANTS = ("rid", "U0", "V0", "du", "dv", "oz", "dz", "t1", "inv_du", "inv_dv",
                 "inf_u", "inf_v", "px", "py", "sx", "sy")

    def __init__(self, rays=None, rows=None, t0=None, t1=None):
        if rays is None:
            return
        self.rid = rows
        for name in ("U0", "V0", "du", "dv", "oz", "dz"):
            setattr(self, name, getattr(rays, name)[rows])
        self.t1 = t1[rows]
        # Exit distance through a grid line: (line - U0) * inv_du + inf_u, which is +inf
        # (never NaN) for a ray parallel to those lines.
        for axis in ("u", "v"):
            d = getattr(self, "d" + axis)
            parallel = d == 0
            setattr(self, "inv_d" + axis, np.where(parallel, 0.0, 1.0 / np.where(parallel, 1.0, d)))
            setattr(self, "inf_" + axis, np.where(parallel, np.inf, 0.0))
        self.px = (self.du > 0).astype(np.intp)
        self.py = (self.dv > 0).astype(np.intp)
        self.sx = np.where(self.du > 0, 1, -1).astype(np.intp)
        self.sy = np.where(self.dv > 0, 1, -1).astype(np.intp)

    @property
    def size(self):
        return self.rid.shape[0]

    def select(self, mask):
        picked = _WalkState()
        for name, value in vars(self).items():
            setattr(picked, name, value[mask])
        return picked

    @staticmethod
    def concat(states):
        if len(states) == 1:
            return states[0]
        joined = _WalkState()
        for name in vars(states[0]):
            setattr(joined, name, np.concatenate([getattr(s, name) for s in states]))
        return joined

    def exits(self, i, j, size):
        """Distances at which the ray leaves column block i and row block j of ``size``."""
        tbx = ((i + self.px) * size - self.U0) * self.inv_du + self.inf_u
        tby = ((j + self.py) * size - self.V0) * self.inv_dv + self.inf_v
        return tbx, tby

    def advance_block(self, nbx, nby):
        """Step to the next block along the axis the ray leaves first."""
        self.I = self.I + np.where(self.step_x, self.sx, 0)
        self.J = self.J + np.where(self.step_x, 0, self.sy)
        self.tc = self.te
        inside = (self.I >= 0) & (self.I < nbx) & (self.J >= 0) & (self.J < nby)
        if not inside.all():
            for name, value in vars(self.select(inside)).items():
                setattr(self, name, value)
