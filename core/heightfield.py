"""Ray vs a heightfield terrain, cast exactly: a solid column or the surface as drawn.

The terrain. ``heights[j, i]`` is z at ``(x0 + i dx, y0 + j dy)``. Work in grid units
``U = (x - x0) / dx``, ``V = (y - y0) / dy``; cell (i, j) is ``[i, i+1] x [j, j+1]`` with local
coordinates ``u = U - i``, ``v = V - j`` and corner heights h00, h10, h01, h11. Its surface
is two planar triangles split along ``u = v`` (or ``u + v = 1`` where ``diagonals`` is True),
or the bilinear patch ``h00 + a u + b v + c u v`` (a = h10 - h00, b = h01 - h00,
c = h00 - h10 - h01 + h11).

Two models. ``solid=True``: the solid is everything at or below the surface inside the
footprint ``[0, nx-1] x [0, ny-1]``, down to -inf; a ray's hit is its first point in it (an
origin inside hits at 0; a ray entering through the side below the edge hits a wall).
``solid=False``: only the surface as drawn, hit from either side, no walls, nothing inside;
the normal faces the ray. A ray below the surface is a ray above the mirrored terrain
(z -> -z, heights -> -heights): the same walk serves both sides, each side with its own
hierarchy (the mirror's max is minus the min). Which side a ray starts on is fixed once,
where it enters the footprint's height range: through its top (above), its bottom
(below), or elsewhere by the sign of z - h there; the walk keeps it, as a ray cannot
change sides without crossing the surface, which is a hit.

Math. Along a ray ``p(t) = o + t d`` let ``g(t) = z(t) - h(U(t), V(t))``; a ray above the
surface hits it at the first t with ``g <= 0`` inside the footprint (for the solid that is
also the first point in the solid). Clip the ray to the footprint box between the heights
(the box entry ``t0`` is a side wall, the top or the origin). Inside one cell ``g`` is
piecewise linear with at most one kink, where the ray crosses the diagonal (``w = u - v`` is
linear in t, so the kink is at ``t_m = t_a - w_a / w'``); on each piece the first root of a
linear function is ``t_a + g(t_a) / -g'``, with no cancellation since g(t_a) > 0 > g'. For
BILINEAR, ``g(t_a + s) = g0 + g1 s + g2 s^2`` with ``g2 = -c du dv``: the smallest root in
the cell's interval, from the stable quadratic ``q = -(g1 + sign(g1) sqrt(g1^2 - 4 g2 g0))
/ 2``, roots ``q / g2`` and ``g0 / q``. Because the surface is continuous and the cells a
ray visits cover its whole path, testing each visited cell on its closed interval
``[t_enter, t_exit]`` cannot miss: a ray through a vertex or along a grid line is tested
at that point by the cells on both sides.

Walk (EXACT). Amanatides & Woo: a ray in cell i leaves it at ``t = (i + [d > 0] - U0) / du``,
computed afresh from the integer index each step (no accumulated error; the footprint clip
and the blocks use the same expression, so a walk never leaves its block or the grid), and
steps to the neighbour on the axis that leaves first; a tie steps one axis, and the next
step covers the zero-length remainder. A max hierarchy (Jolt's HeightFieldShape, Tevs et
al.'s maximum mipmaps) skips empty space above the terrain (and, mirrored, below it):
* skips: a ray at a point of a node of s x s cells stays within the node's 3 x 3
  neighbourhood for a horizontal travel of s cells, and meets nothing there while above
  the neighbourhood's max, so it may jump to where it comes down to that max or has
  travelled s cells: one skip per pyramid level (s = 8, 16, ...) coarsest first, then two
  at s = 8 before the walk, and one at s = 1 where a block's cell walk starts;
* blocks of BLOCK x BLOCK cells: a ray walks blocks, and walks a block's cells only where
  its lowest z over the block is at or below the block max, from where it comes down to it.
All rays move together, one block or cell step per iteration, and the active set is
compacted as rays finish, so there is no Python loop over rays.

MARCH keeps seed 004 for comparison (solid only): samples half a cell apart along the ray
until one lies below the terrain, then 32 bisection steps, reading the terrain height
afresh at every midpoint (the seed compared against a stale height). It misses peaks
thinner than a step.

Tolerance. ``g <= tol`` counts as touching, with a tolerance of each cell's own:
``tol = 2^-40 max(|h00|, |h10|, |h01|, |h11|, dx, dy)``. The ray's z and the height under
it at a rounded t are off by a few ulps of the heights there (and of the spacing, the
scale of a flat terrain at 0), and a ray that grazes a spike tip, an edge or a flat
terrain exactly would otherwise be decided by that rounding. Being local, a spike of 1e12
widens the tolerance of its own four cells only: hits elsewhere do not move. The hierarchy
stores each cell's max + its tolerance (so a node's max bounds every cell test in it), and
the clip box's top is the largest of these.

Footprint edges. A ray exactly parallel to a grid axis is inside the footprint's extent
on that axis when its (rounded) grid coordinate is within ``2^-50 (|x0| / dx + |x1| / dx +
nx)`` of ``[0, nx-1]`` (x1 the last grid line): a vertical ray aimed at the last grid line
``x0 + (nx-1) dx``, computed in float64, may land a few ulps outside.
"""

from __future__ import annotations

import numpy as np

from .shapes import as_choice, as_pair

BLOCK = 8  # cells per side of a hierarchy block (a power of two)
FINE_SKIPS = 2  # skips at the block level after one at each coarser level (see _start_walk)
CELL_SKIPS = (1,)  # node sizes (cells) of the skips that start a block's cell walk
TINY = 1e-300  # direction component used for rays parallel to grid lines (see _start_walk)
SURFACES = ("TRIANGLES", "BILINEAR")
METHODS = ("EXACT", "MARCH")
MARCH_BISECTIONS = 32


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
        raise ValueError(f"heights must be finite: heights[{j}, {i}] (row {j}) is {heights[j, i]}")
    heights.setflags(write=False)
    return heights


def _as_diagonals(value, cells_shape):
    if value is None:
        return None
    diagonals = np.asarray(value)
    if diagonals.shape != cells_shape:
        raise ValueError(
            f"diagonals must have shape {cells_shape} (ny-1, nx-1), got {diagonals.shape}"
        )
    if diagonals.dtype != bool:
        if not np.isin(diagonals, (0, 1)).all():
            j, i = np.argwhere(~np.isin(diagonals, (0, 1)))[0]
            raise ValueError(
                f"diagonals must be booleans: diagonals[{j}, {i}] (row {j}) is {diagonals[j, i]!r}"
            )
        diagonals = diagonals.astype(bool)
    diagonals = np.array(diagonals, dtype=bool)
    diagonals.setflags(write=False)
    return diagonals


def _pool_max(level):
    """Max over 2 x 2 nodes (an odd last row or column is pooled alone)."""
    ny, nx = level.shape
    padded = np.full((ny + ny % 2, nx + nx % 2), -np.inf)
    padded[:ny, :nx] = level
    return np.maximum(
        np.maximum(padded[0::2, 0::2], padded[0::2, 1::2]),
        np.maximum(padded[1::2, 0::2], padded[1::2, 1::2]),
    )


def _neighbourhood_max(level):
    """Max over each node's 3 x 3 neighbourhood (clamped at the border)."""
    for axis in (0, 1):
        source = level
        level = source.copy()
        lower = (slice(None),) * axis + (slice(None, -1),)
        upper = (slice(None),) * axis + (slice(1, None),)
        np.maximum(level[upper], source[lower], out=level[upper])
        np.maximum(level[lower], source[upper], out=level[lower])
    return level


def _block_reduce(cells, block, ufunc):
    """ufunc (np.maximum/np.minimum) over each block of block x block cells (the last row
    or column of blocks may be smaller)."""
    reduced = cells
    for axis in (1, 0):
        reduced = ufunc.reduceat(reduced, np.arange(0, reduced.shape[axis], block), axis=axis)
    return np.ascontiguousarray(reduced)


def _cell_max(heights):
    """The largest corner height of each cell, (ny-1, nx-1)."""
    return np.maximum(
        np.maximum(heights[:-1, :-1], heights[:-1, 1:]),
        np.maximum(heights[1:, :-1], heights[1:, 1:]),
    )


class _Terrain:
    """The terrain as the walk sees it: the heights as given (rays above), or negated for
    rays below a surface (the mirror image), with each cell's tolerance and the max
    hierarchy (built on first use)."""

    def __init__(self, heights, cell_tolerance, anti):
        self.nx = heights.shape[1]
        self.flat = np.ascontiguousarray(heights).ravel()
        self.anti = anti
        self.cell_top = _cell_max(heights) + cell_tolerance
        self.top = float(self.cell_top.max())  # the clip box's top
        # Each cell's tolerance at its first vertex's index j nx + i, as the walk gathers.
        tol = np.zeros(heights.shape)
        tol[:-1, :-1] = cell_tolerance
        self.tol = tol.ravel()
        self._hierarchy = None

    @property
    def hierarchy(self):
        """The max hierarchy, built on first use and cached (~20 ms for 1024 x 1024):
        ``block_max``, the largest cell top (max corner height + the cell's tolerance) of
        each block of BLOCK x BLOCK cells (flat, row-major); ``reach``, per level l = 0, 1,
        ... the max over the 3 x 3 neighbourhood of each node of BLOCK 2^l cells, up to the
        last level that is below the top somewhere (coarser ones skip nothing);
        ``inner_reach``, the same for nodes of CELL_SKIPS cells. Each level is (size, nodes,
        stride): the node maxima, padded by a copy of the edge nodes all round and flattened
        (row stride ``stride``), so that node (I, J) for I, J in [-1, across] x [-1, down] is
        ``nodes[J * stride + I + stride + 1]`` with no clamping (see _node_tops)."""
        if self._hierarchy is None:

            def padded(level, size):
                nodes = np.empty((level.shape[0] + 2, level.shape[1] + 2))
                nodes[1:-1, 1:-1] = _neighbourhood_max(level)
                nodes[0], nodes[-1] = nodes[1], nodes[-2]
                nodes[:, 0], nodes[:, -1] = nodes[:, 1], nodes[:, -2]
                return size, nodes.ravel(), nodes.shape[1]

            block_max = _block_reduce(self.cell_top, BLOCK, np.maximum)
            reach, level, size = [], block_max, BLOCK
            while True:
                node = padded(level, size)
                if not reach or node[1].min() < self.top:  # else it skips nothing
                    reach.append(node)
                if max(level.shape) <= 3:
                    break
                level = _pool_max(level)
                size *= 2
            # Below the blocks: nodes of 1, 2, ... BLOCK/2 cells, for the skips that start
            # the cell walk inside a block.
            inner_reach, level, size = [], self.cell_top, 1
            while True:
                if size in CELL_SKIPS:
                    inner_reach.append(padded(level, size))
                size *= 2
                if size > max(CELL_SKIPS):
                    break
                level = _pool_max(level)
            self._hierarchy = (block_max.ravel(), reach, inner_reach)
        return self._hierarchy


class Heightfield:
    """A terrain over a displaced regular grid (see the module docstring): the solid
    column under the surface, or with ``solid=False`` the surface alone.

    heights: (ny, nx), both >= 2; heights[j, i] is z at (x0 + i dx, y0 + j dy).
    spacing: (dx, dy) > 0 (a scalar for both); origin: (x0, y0).
    surface: "TRIANGLES" (two planar triangles per cell, as Blender draws the mesh) or
    "BILINEAR" (the bilinear patch through the cell's corners).
    diagonals: optional bool (ny-1, nx-1) for TRIANGLES: False splits a cell along
    (i, j)-(i+1, j+1), True along (i+1, j)-(i, j+1) (default: all False).
    method: "EXACT" (the cell walk; never misses) or "MARCH" (seed 004, for comparison;
    solid only).
    solid: True (the solid column under the surface in the footprint, down to -inf) or
    False (the surface as drawn: hit from either side, no walls, normal facing the ray).
    Hits report the cell (i, j) they lie in (RayHits.cell).
    """

    dimension = 3
    # Rays per kernel call: the walk loops over steps (with all active rays vectorized), so
    # larger chunks amortize the per-call numpy overhead and the last few steps of few rays
    # (at 100k rays: 1.4x faster than 8192, ~5 % faster than 65536).
    chunk_size = 1 << 17

    def __init__(
        self,
        heights,
        spacing=(1.0, 1.0),
        origin=(0.0, 0.0),
        surface="TRIANGLES",
        diagonals=None,
        method="EXACT",
        solid=True,
    ):
        self.heights = _as_heights(heights)
        self.spacing = as_pair("spacing", spacing, positive=True)
        self.origin = as_pair("origin", origin, positive=False)
        self.surface = as_choice("surface", surface, SURFACES)
        self.method = as_choice("method", method, METHODS)
        ny, nx = self.heights.shape
        self.diagonals = _as_diagonals(diagonals, (ny - 1, nx - 1))
        if not isinstance(solid, (bool, np.bool_)):
            raise ValueError(f"solid must be True or False, got {solid!r}")
        self.solid = bool(solid)
        if self.method == "MARCH" and not self.solid:
            raise ValueError(
                "method MARCH needs solid=True: its search stops at the first sample below "
                "the surface, which has no meaning for a surface hit from below; use EXACT"
            )
        self.zmin = float(self.heights.min())
        self.zmax = float(self.heights.max())
        self._anti = (
            None
            if self.diagonals is None or not self.diagonals.any()
            else self.diagonals.ravel().astype(np.float64)
        )
        # Each cell's own tolerance (module docstring): 2^-40 of its largest |corner height|
        # or the spacing.
        h = self.heights
        magnitude = np.maximum(
            np.maximum(np.abs(h[:-1, :-1]), np.abs(h[:-1, 1:])),
            np.maximum(np.abs(h[1:, :-1]), np.abs(h[1:, 1:])),
        )
        self._cell_tolerance = np.maximum(magnitude, max(self.spacing)) * 2.0**-40
        self._above = _Terrain(h, self._cell_tolerance, self._anti)
        self._below = None  # the mirror image, for rays below a surface (built on first use)
        self._kernel_data = None  # the compiled kernel's arguments (built on first use)
        # A ray exactly parallel to a grid axis may sit a few ulps outside the footprint
        # when aimed at its first or last grid line (module docstring).
        self._edge_slack = tuple(
            2.0**-50 * ((abs(x0) + abs(x0 + (n - 1) * d)) / d + n)
            for x0, d, n in zip(self.origin, self.spacing, (nx, ny))
        )

    # The compiled kernel (core/backend.py, core/kernels/heightfield.py) answers EXACT
    # rays on the numba backend; MARCH stays numpy only.
    kernel_cells = True  # its results carry the cell of each hit

    @property
    def kernel_module(self):
        return "heightfield" if self.method == "EXACT" else None

    def _kernel_arguments(self):
        if self._kernel_data is None:
            from .backend import kernels

            self._kernel_data = kernels("heightfield").arguments(self)
        return self._kernel_data

    def __repr__(self):
        ny, nx = self.heights.shape
        return (
            f"Heightfield({ny}x{nx} heights, spacing={self.spacing}, origin={self.origin}, "
            f"surface={self.surface!r}, method={self.method!r}, solid={self.solid})"
        )

    # -- hierarchy -------------------------------------------------------------------------

    @property
    def hierarchy(self):
        """The max hierarchy of the terrain seen from above (see _Terrain.hierarchy)."""
        return self._above.hierarchy

    @property
    def _mirror(self):
        """The terrain seen from below: heights negated, with their own max hierarchy."""
        if self._below is None:
            self._below = _Terrain(-self.heights, self._cell_tolerance, self._anti)
        return self._below

    # -- the surface -----------------------------------------------------------------------

    def _corners(self, i, j):
        k = j * self.heights.shape[1] + i
        flat = self._above.flat
        nx = self.heights.shape[1]
        return flat.take(k), flat.take(k + 1), flat.take(k + nx), flat.take(k + nx + 1)

    def _planes(self, h00, h10, h01, h11, i, j):
        """Both triangles' planes h = c + a u + b v of each cell (triangle 0 below the
        split line: u >= v, or u + v <= 1 where anti), and where the split is anti."""
        a0 = h10 - h00
        a1 = h11 - h01
        main_b0 = h11 - h10
        main_b1 = h01 - h00
        if self._anti is None:
            return (h00, a0, main_b0), (h00, a1, main_b1), None
        anti = self._anti.take((j * (self.heights.shape[1] - 1) + i).astype(np.intp)) > 0
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
        max_distance = np.broadcast_to(max_distance, (n,))
        result = _Result(n)
        if not self.solid:
            self._cast_surface(rays, max_distance, result)
            normal = self._normal(result.grad_u, result.grad_v)
            # The up-facing normal, turned to face the ray (n.d <= 0).
            facing = np.where(_dot(normal, direction) > 0.0, -1.0, 1.0)
            normal = [x * facing for x in normal]
            return result.distance, normal, np.stack([result.i, result.j], axis=1)
        t0, t1, face = self._clip(rays, max_distance)
        todo = np.flatnonzero(t0 <= t1)
        if todo.size:
            if self.method == "EXACT":
                self._walk(self._above, rays, todo, t0, t1, result)
            else:
                self._march(rays, todo, t0, t1, result)
        normal = self._normal(result.grad_u, result.grad_v)
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

    def _clip(self, rays, max_distance):
        """The ray's interval [t0, t1] in the footprint box under the top (the largest
        cell top), and the box face it enters by (0: origin inside, 1: x wall, 2: y wall,
        3: top)."""
        ny, nx = self.heights.shape
        ex, lx = _slab(rays.U0, rays.du, 0.0, nx - 1.0, self._edge_slack[0])
        ey, ly = _slab(rays.V0, rays.dv, 0.0, ny - 1.0, self._edge_slack[1])
        top = self._above.top
        to_top = (top - rays.oz) / rays.dz
        below = rays.oz <= top
        ez = np.where(rays.dz < 0, to_top, np.where(below, -np.inf, np.inf))
        lz = np.where(rays.dz > 0, to_top, np.where(below | (rays.dz < 0), np.inf, -np.inf))
        t0 = np.maximum(np.maximum(ex, ey), np.maximum(ez, 0.0))
        t1 = np.minimum(np.minimum(lx, ly), np.minimum(lz, max_distance))
        # A descending ray in the footprint is in the solid once below the min height, so
        # the search ends there (this keeps t1 finite for vertical rays too).
        to_bottom = np.where(rays.dz < 0, (self.zmin - rays.oz) / rays.dz, np.inf)
        t1 = np.minimum(t1, np.maximum(to_bottom, t0))
        face = np.where(t0 == 0.0, 0, np.where(t0 == ex, 1, np.where(t0 == ey, 2, 3)))
        return t0, t1, face

    def _cast_surface(self, rays, max_distance, result):
        """The surface alone: rays above it walk the terrain, rays below it walk the mirror
        image (z and the heights negated) exactly as rays above; gradients come back
        negated."""
        ny, nx = self.heights.shape
        above, mirror = self._above, self._mirror
        ex, lx = _slab(rays.U0, rays.du, 0.0, nx - 1.0, self._edge_slack[0])
        ey, ly = _slab(rays.V0, rays.dv, 0.0, ny - 1.0, self._edge_slack[1])
        ez, lz = _slab(rays.oz, rays.dz, -mirror.top, above.top)
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
            h = self._surface_at(
                rays.U0.take(level) + t * rays.du.take(level),
                rays.V0.take(level) + t * rays.dv.take(level),
            )[0]
            below[level] = rays.oz.take(level) + t * rays.dz.take(level) < h
        from_above = np.flatnonzero(todo & ~below)
        from_below = np.flatnonzero(todo & below)
        if from_above.size:
            self._walk(above, rays, from_above, t0, t1, result)
        if from_below.size:
            self._walk(mirror, rays.mirrored(), from_below, t0, t1, result)
            result.grad_u[from_below] *= -1.0
            result.grad_v[from_below] *= -1.0

    # EXACT: block walk, then cell walk inside candidate blocks ----------------------------

    def _walk(self, terrain, rays, todo, t0, t1, result):
        """Every ray walks blocks (coarse) until its lowest z over a block is at or below the
        block max, then that block's cells (fine), then blocks again if it found nothing.
        Each iteration moves every coarse ray one block and every fine ray one cell.
        ``terrain``: the heights seen from above, or the mirror image for rays below a
        surface (then ``rays`` are mirrored too)."""
        ny, nx = self.heights.shape
        block_max, reach, inner_reach = terrain.hierarchy
        nbx = -(-(nx - 1) // BLOCK)
        coarse = _start_walk(rays, todo, t0, t1, nx, ny, reach)
        fine = _State(np.empty((len(FIELDS), 0)))
        test = self._test_bilinear if self.surface == "BILINEAR" else self._test_triangles
        while coarse.size or fine.size:
            entering = None
            if coarse.size:
                s = coarse
                tbx, tby = s.exits(s.Ib, s.Jb, BLOCK)
                te = np.maximum(np.minimum(np.minimum(tbx, tby), s.t1), s.tc)
                zlow = s.oz + np.minimum(s.tc * s.dz, te * s.dz)
                # Ib, Jb are multiples of BLOCK (a power of two): the divisions are exact.
                # (Float floor division costs ~40 ns per element; avoid it.)
                block = _index(s.Jb * (nbx / BLOCK) + s.Ib * (1.0 / BLOCK))
                top = block_max.take(block, mode="clip")
                s.te = te
                s.top = top
                s.step_x = tbx <= tby
                candidate = zlow <= top  # block tops include the cells' tolerances
                entering = s.select(candidate)
                coarse = s.select(~candidate & (te < s.t1))
                coarse.next_block()
            if fine.size:
                s = fine
                tbx, tby = s.exits(s.i, s.j, 1)
                tb = np.maximum(np.minimum(np.minimum(tbx, tby), s.tf), s.ta)
                hit, finish = test(terrain, s, tb, nx)
                if hit.any():
                    found = np.flatnonzero(hit)
                    t, grad_u, grad_v = finish(found)
                    rows = _index(s.rid.take(found))
                    result.distance[rows] = t
                    result.grad_u[rows] = grad_u
                    result.grad_v[rows] = grad_v
                    result.i[rows] = s.i.take(found)
                    result.j[rows] = s.j.take(found)
                step_x = tbx <= tby
                s.i += step_x * s.sx
                s.j += (~step_x) * s.sy
                s.ta = tb
                # The block's cells end where the block ends (same boundary formula), so a
                # ray is through with its block exactly when it reaches the fine end.
                out = tb >= s.tf
                back = s.select(out & ~hit & (s.te < s.t1))
                back.next_block()
                coarse = coarse.join(back)
                fine = s.select(~(hit | out))
            if entering is not None and entering.size:
                self._enter_block(entering, nx, ny, inner_reach)
                fine = fine.join(entering)

    @staticmethod
    def _enter_block(s, nx, ny, inner_reach):
        """Start the cell walk where the ray comes down to the block max (or end it where
        the ray climbs above it), moved on by skips over nodes of a few cells (as in
        _start_walk; descending rays only), in the cell under that point (clamped to the
        block)."""
        to_top = (s.top - s.oz) / s.dz
        # Descending rays start at to_top (NaN or 0 for the others, which fmax ignores).
        start = np.fmax(s.tc, to_top * (s.dz < 0))
        s.tf = np.where(s.dz > 0, np.minimum(s.te, to_top), s.te)
        ta = np.minimum(start, s.tf)
        inv_dz = np.minimum(s.dz, 0.0)
        inv_dz = inv_dz / (inv_dz * inv_dz + (s.dz >= 0))  # 1 / dz if dz < 0, else 0
        inv_chebyshev = (1.0 - 1e-9) / np.maximum(np.abs(s.du), np.abs(s.dv))
        for size, nodes, stride in inner_reach:
            top = _node_tops(nodes, stride, size, s.U0 + ta * s.du, s.V0 + ta * s.dv)
            ta = np.maximum(ta, np.minimum(ta + size * inv_chebyshev, (top - s.oz) * inv_dz))
        s.ta = ta = np.minimum(ta, s.tf)
        s.i = np.minimum(
            np.maximum(np.floor(s.U0 + ta * s.du), s.Ib), np.minimum(s.Ib + BLOCK, nx - 1) - 1
        )
        s.j = np.minimum(
            np.maximum(np.floor(s.V0 + ta * s.dv), s.Jb), np.minimum(s.Jb + BLOCK, ny - 1) - 1
        )

    @staticmethod
    def _gather(terrain, s, nx):
        """Corner heights and tolerance of each ray's cell. The walk keeps cells inside the
        grid (its cell and box boundaries use one formula); mode="clip" only guards memory."""
        k = _index(s.j * nx + s.i)
        flat = terrain.flat
        return (
            flat.take(k, mode="clip"),
            flat.take(k + 1, mode="clip"),
            flat.take(k + nx, mode="clip"),
            flat.take(k + nx + 1, mode="clip"),
            terrain.tol.take(k, mode="clip"),
        )

    def _test_triangles(self, terrain, s, tb, nx):
        """Which rays meet the cell's two triangles on [ta, tb]; ``finish(rows)`` gives their
        distance and height gradient (dh/du, dh/dv).

        With P1 the plane of triangle 1 and w the split line's function (w >= 0 on triangle
        0), the surface is h = P1 + sigma max(w, 0), sigma = (P0 - P1) / w a constant of the
        cell. Along the ray P1 and w are linear, so g = z - h is linear on both sides of the
        kink where w = 0: evaluating it at ta, the kink and tb decides everything."""
        ta = s.ta
        h00, h10, h01, h11, tol = self._gather(terrain, s, nx)
        ua = s.U0 + ta * s.du - s.i
        va = s.V0 + ta * s.dv - s.j
        curl = (h00 - h10) + (h11 - h01)
        a1 = h11 - h01
        b1 = h01 - h00
        if self._anti is None:  # every cell split along u = v: w = u - v
            c1, sigma, eu = h00, -curl, 1.0
            wa = ua - va
            dw = s.du - s.dv
        else:  # split along u + v = 1 where anti: w = 1 - u - v
            anti = self._anti.take(_index(s.j * (nx - 1) + s.i), mode="clip")
            eu = 1.0 - 2.0 * anti
            c1 = h00 - anti * curl
            b1 = b1 + anti * curl
            sigma = -curl * eu
            wa = eu * ua - va + anti
            dw = eu * s.du - s.dv
        la = (s.oz + ta * s.dz - c1) - a1 * ua - b1 * va
        slope = s.dz - a1 * s.du - b1 * s.dv
        lb = tb - ta
        lm = np.fmin(np.fmax(-wa / dw, 0.0), lb)  # the kink, within [0, lb] (NaN -> 0)
        ga = la - sigma * np.maximum(wa, 0.0)
        gm = la + slope * lm - sigma * np.maximum(wa + dw * lm, 0.0)
        gb = la + slope * lb - sigma * np.maximum(wa + dw * lb, 0.0)
        # Touching within tol counts on a cell's own stretch of the ray only: where that is
        # a single point (the ray runs along the cell's edge line), the neighbour holding
        # the same point decides, so a crossing there is found exactly.
        hit = np.fmin(np.fmin(ga, gm), gb) <= tol * (lb > 0)

        def finish(rows):
            g_a, g_m, g_b = ga.take(rows), gm.take(rows), gb.take(rows)
            l_m, l_b = lm.take(rows), lb.take(rows)
            tol_ = tol.take(rows)
            first = _piece_root(g_a, g_m, 0.0, l_m, tol_, l_m > 0)
            early = first < np.inf
            distance = np.where(early, first, _piece_root(g_m, g_b, l_m, l_b, tol_, True))
            # Which triangle: the sign of w inside the piece the hit lies on.
            middle = np.where(early & (l_m > 0), 0.5 * l_m, 0.5 * (l_m + l_b))
            w_a, d_w = wa.take(rows), _take(dw, rows)
            on_first = (w_a + d_w * middle > 0).astype(np.float64)
            sig = sigma.take(rows)
            grad_u = a1.take(rows) + on_first * sig * _take(eu, rows)
            grad_v = b1.take(rows) - on_first * sig
            return ta.take(rows) + distance, grad_u, grad_v

        return hit, finish

    def _test_bilinear(self, terrain, s, tb, nx):
        """Which rays meet the cell's bilinear patch on [ta, tb]; ``finish(rows)`` gives their
        distance and height gradient. Along the ray g = z - h is the quadratic
        g0 + g1 s + g2 s^2 in s = t - ta: it reaches tol on [0, L] exactly when its least
        value there (at 0, at L or at the vertex -g1 / 2 g2) does."""
        ta = s.ta
        h00, h10, h01, h11, tol = self._gather(terrain, s, nx)
        a, b, c = h10 - h00, h01 - h00, (h00 - h10) + (h11 - h01)
        ua = s.U0 + ta * s.du - s.i
        va = s.V0 + ta * s.dv - s.j
        g0 = s.oz + ta * s.dz - (h00 + a * ua + b * va + c * ua * va)
        g1 = s.dz - (a * s.du + b * s.dv + c * (ua * s.dv + va * s.du))
        g2 = -c * s.du * s.dv
        length = tb - ta
        g_end = g0 + length * (g1 + length * g2)
        vertex = np.fmin(np.fmax(-g1 / (2.0 * g2), 0.0), length)
        g_vertex = g0 + vertex * (g1 + vertex * g2)
        hit = np.fmin(np.fmin(g0, g_end), g_vertex) <= tol * (length > 0)  # see triangles

        def finish(rows):
            q0, q1, q2 = g0.take(rows), g1.take(rows), g2.take(rows)
            span = length.take(rows)
            discriminant = q1 * q1 - 4.0 * q2 * q0
            real = discriminant >= 0
            # Stable roots: q = -(g1 + sign(g1) sqrt(disc)) / 2, roots q / g2 and g0 / q.
            q = -0.5 * (q1 + np.copysign(np.sqrt(np.maximum(discriminant, 0.0)), q1))
            r1, r2 = q / q2, q0 / q
            r1 = np.where(real & (r1 >= 0) & (r1 <= span), r1, np.inf)
            r2 = np.where(real & (r2 >= 0) & (r2 <= span), r2, np.inf)
            root = np.minimum(r1, r2)
            # Within the tolerance only: at the start (touching there, or not descending
            # from there), a tangent touch at the vertex, or the interval end.
            tol_ = tol.take(rows)
            touch_at_start = (q0 <= 0.0) | ((q0 <= tol_) & ((q1 >= 0.0) | ~np.isfinite(root)))
            near = np.where(g_vertex.take(rows) <= tol_, vertex.take(rows), span)
            distance = np.where(touch_at_start, 0.0, np.where(np.isfinite(root), root, near))
            u = ua.take(rows) + distance * s.du.take(rows)
            v = va.take(rows) + distance * s.dv.take(rows)
            c_ = c.take(rows)
            return ta.take(rows) + distance, a.take(rows) + c_ * v, b.take(rows) + c_ * u

        return hit, finish

    # MARCH: seed 004, bug fixed -----------------------------------------------------------

    def _march(self, rays, todo, t0, t1, result):
        """Seed 004 vectorized: steps of half a cell from the box entry until a sample is
        at or below the surface, then 32 bisections of the last bracket."""
        step = 0.5 * min(self.spacing)
        nx = self.heights.shape[1]
        cell_tolerance = self._above.tol
        rid = todo
        lo = t0[rid]
        end = t1[rid]

        def below(rows, t):
            U = rays.U0[rows] + t * rays.du[rows]
            V = rays.V0[rows] + t * rays.dv[rows]
            h, _, _, i, j = self._surface_at(U, V)
            return rays.oz[rows] + t * rays.dz[rows] <= h + cell_tolerance.take(j * nx + i)

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
        _, grad_u, grad_v, i, j = self._surface_at(
            rays.U0[rid] + t * rays.du[rid], rays.V0[rid] + t * rays.dv[rid]
        )
        result.distance[rid] = t
        result.grad_u[rid] = grad_u
        result.grad_v[rid] = grad_v
        result.i[rid] = i
        result.j[rid] = j


def _index(values):
    """Float arrays holding non-negative integers below 2^51 as int64 indices: adding
    1.5 * 2^52 puts the integer in the low mantissa bits (twice as fast as astype)."""
    return (values + 6755399441055744.0).view(np.int64) - 0x4338000000000000


def _node_tops(nodes, stride, size, U, V):
    """Padded node maxima (see Heightfield.hierarchy) at grid points (U, V) in the footprint
    (up to rounding: the padding takes nodes -1 and across, no clamps needed); the offset
    and the float-to-index trick of _index are one constant. mode="clip" only guards
    memory."""
    column = np.floor(U * (1.0 / size))
    row = np.floor(V * (1.0 / size))
    k = (row * stride + (column + (stride + 1 + 6755399441055744.0))).view(np.int64)
    return nodes.take(k - 0x4338000000000000, mode="clip")


def _piece_root(g_start, g_end, start, end, tol, touch_at_start):
    """First point of [start, end] where the linear g (g_start, g_end at the ends) is
    within ``tol`` of the surface or below it, inf where none: the start if g <= 0 there;
    where g descends to 0 (start + length g_start / (g_start - g_end), no cancellation) or
    to the end when it stops within (0, tol]; the start when g starts within tol and does
    not descend (if ``touch_at_start``). A crossing is found exactly, not at the edge of
    the tolerance band."""
    descending = (g_end < g_start) & (g_end <= tol)
    crossing = start + (end - start) * np.minimum(g_start / (g_start - g_end), 1.0)
    touch = np.where((g_start <= tol) & touch_at_start, start, np.inf)
    return np.where(g_start <= 0.0, start, np.where(descending, crossing, touch))


def _take(value, rows):
    """value[rows] for an array, value itself for a scalar."""
    return value.take(rows) if isinstance(value, np.ndarray) else value


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _slab(p0, dp, lo, hi, slack=0.0):
    """Interval of t where p0 + t dp lies in [lo, hi] (all t or none when dp == 0, then
    with ``slack`` either side)."""
    inverse = 1.0 / dp  # as in _State.exits, so both find the same boundary distances
    ta = (lo - p0) * inverse
    tb = (hi - p0) * inverse
    inside = (p0 >= lo - slack) & (p0 <= hi + slack)
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

    def mirrored(self):
        """The same rays with z negated: a ray below the surface above the mirror image."""
        mirror = object.__new__(_Rays)
        mirror.__dict__.update(self.__dict__, oz=-self.oz, dz=-self.dz)
        return mirror


class _Result:
    def __init__(self, n):
        self.distance = np.full(n, np.inf)
        self.grad_u = np.zeros(n)
        self.grad_v = np.zeros(n)
        self.i = np.full(n, -1, dtype=np.int64)
        self.j = np.full(n, -1, dtype=np.int64)


# Walk state: one row per field, one column per active ray, so that keeping a subset of the
# rays is one ``take``. Cell and block indices are stored as floats (exact integers).
FIELDS = (
    "rid",
    "U0",
    "V0",
    "du",
    "dv",
    "oz",
    "dz",
    "t1",
    "inv_du",
    "inv_dv",
    "px",
    "py",
    "sx",
    "sy",
    "Ib",
    "Jb",
    "tc",
    "te",
    "top",
    "step_x",
    "i",
    "j",
)
# A block walk's ``tc`` (where it is) and ``top`` (its block's max) become the cell walk's
# ``ta`` and ``tf`` when it enters a block: fewer rows to copy when the sets are compacted.
ALIASES = {"ta": "tc", "tf": "top"}


class _State:
    """Rows of the walk state of the active rays (see FIELDS)."""

    __slots__ = ("rows",)

    def __init__(self, rows):
        self.rows = rows

    @property
    def size(self):
        return self.rows.shape[1]

    def select(self, mask):
        # mode="clip" skips the bounds checks (1.4x faster; the indices are valid).
        return _State(self.rows.take(np.flatnonzero(mask), axis=1, mode="clip"))

    def join(self, other):
        if not other.size:
            return self
        if not self.size:
            return other
        return _State(np.concatenate((self.rows, other.rows), axis=1))

    def exits(self, i, j, size):
        """Distances at which the ray leaves the column starting at cell i and the row
        starting at cell j, each ``size`` cells wide: the line i + size (moving up) or i
        (moving down), as (line - U0) / du; +inf (never NaN) when parallel to the lines."""
        tbx = (i + self.px * size - self.U0) * self.inv_du
        tby = (j + self.py * size - self.V0) * self.inv_dv
        return tbx, tby

    def next_block(self):
        """Step to the next block along the axis the ray leaves its block first."""
        step_x = self.step_x
        self.Ib += step_x * self.sx * BLOCK
        self.Jb += (1.0 - step_x) * self.sy * BLOCK
        self.tc = self.te


for _name, _row in [(name, row) for row, name in enumerate(FIELDS)] + [
    (alias, FIELDS.index(name)) for alias, name in ALIASES.items()
]:
    setattr(
        _State,
        _name,
        property(
            lambda self, row=_row: self.rows[row],
            lambda self, value, row=_row: self.rows.__setitem__(row, value),
        ),
    )


def _start_walk(rays, todo, t0, t1, nx, ny, reach):
    """Walk state of the rays ``todo``, started at t0 and moved on by the max hierarchy: a
    ray at a point of node (I, J) of level l (BLOCK 2^l cells) stays within the node's 3 x 3
    neighbourhood for a horizontal travel of at least BLOCK 2^l cells (Chebyshev, grid
    units) and meets nothing there while above the neighbourhood's max, so it may skip to
    where it comes down to that max or has travelled that far. One skip per level from the
    coarsest down, then FINE_SKIPS at the block level; the block walk starts from there."""
    everything = todo.size == t0.size
    U0, V0, du, dv, oz, dz = (
        getattr(rays, name) if everything else getattr(rays, name).take(todo)
        for name in ("U0", "V0", "du", "dv", "oz", "dz")
    )
    end = t1 if everything else t1.take(todo)
    tc = t0 if everything else t0.take(todo)
    # Descending rays come down to a height h at (h - oz) / dz; the others never come down
    # (0 here: no skip), and skip a whole travel only while above h (the few, separately).
    inv_dz = np.where(dz < 0, 1.0 / np.where(dz < 0, dz, -1.0), 0.0)
    level_rays = np.flatnonzero(dz >= 0)
    inv_chebyshev = (1.0 - 1e-9) / np.maximum(np.abs(du), np.abs(dv))
    levels = list(range(len(reach) - 1, 0, -1)) + [0] * FINE_SKIPS
    for level in levels:
        size, nodes, stride = reach[level]
        at = np.minimum(tc, end)  # a skip may overshoot the end; look up nodes up to there
        top = _node_tops(nodes, stride, size, U0 + at * du, V0 + at * dv)
        down = (top - oz) * inv_dz
        if level_rays.size:
            r = level_rays
            down[r] = np.where(oz[r] + tc[r] * dz[r] > top[r], np.inf, tc[r])
        tc = np.maximum(tc, np.minimum(tc + size * inv_chebyshev, down))
    keep = np.flatnonzero(tc <= end)
    if keep.size < todo.size:
        todo, tc = todo.take(keep), tc.take(keep)
        U0, V0, du, dv, oz, dz, end = (a.take(keep) for a in (U0, V0, du, dv, oz, dz, end))
    state = _State(np.empty((len(FIELDS), todo.size)))
    s = state
    s.rid, s.U0, s.V0, s.du, s.dv, s.oz, s.dz, s.t1, s.tc = todo, U0, V0, du, dv, oz, dz, end, tc
    for axis, start, cells in (("u", s.U0, nx - 1), ("v", s.V0, ny - 1)):
        d = getattr(s, "d" + axis)
        parallel = d == 0
        if parallel.any():
            # A ray parallel to the grid lines gets the direction component +-TINY, toward
            # the middle of the grid: it crosses the lines ahead at |line - U0| / TINY >=
            # 1e300, i.e. never (the line it may run on is behind it, as its start cell is
            # the one ahead of that line, clamped into the grid), and never at NaN; its
            # position moves by t * TINY, far below any ulp.
            d[parallel] = np.where(start[parallel] > 0.5 * cells, -TINY, TINY)
        setattr(s, "inv_d" + axis, 1.0 / d)
    s.px = s.du > 0
    s.py = s.dv > 0
    s.sx = 2.0 * s.px - 1.0
    s.sy = 2.0 * s.py - 1.0
    nbx = -(-(nx - 1) // BLOCK)
    nby = -(-(ny - 1) // BLOCK)
    s.Ib = np.minimum(np.maximum(np.floor((s.U0 + tc * s.du) * (1.0 / BLOCK)), 0), nbx - 1) * BLOCK
    s.Jb = np.minimum(np.maximum(np.floor((s.V0 + tc * s.dv) * (1.0 / BLOCK)), 0), nby - 1) * BLOCK
    return state
