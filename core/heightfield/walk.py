"""The exact walk (EXACT): every cell a ray crosses, in order, empty space skipped.

Amanatides & Woo: a ray in cell i leaves it at ``t = (i + [d > 0] - U0) / du``,
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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .grid import BLOCK, as_index

FINE_SKIPS = 2  # skips at the block level after one at each coarser level (see start_walk)
TINY = 1e-300  # direction component used for rays parallel to grid lines (see start_walk)


def walk(terrain, test, rays, todo, t0, t1, result):
    """Every ray walks blocks (coarse) until its lowest z over a block is at or below the
    block max, then that block's cells (fine), then blocks again if it found nothing.
    Each iteration moves every coarse ray one block and every fine ray one cell.
    ``terrain``: the heights seen from above, or the mirror image for rays below a
    surface (then ``rays`` are mirrored too); ``test``: surfaces.test_triangles or
    test_bilinear."""
    ny, nx = terrain.ny, terrain.nx
    block_max, reach, inner_reach = terrain.hierarchy
    nbx = -(-(nx - 1) // BLOCK)
    coarse = start_walk(rays, todo, t0, t1, nx, ny, reach)
    fine = _State(np.empty((len(FIELDS), 0)))
    while coarse.size or fine.size:
        entering = None
        if coarse.size:
            s = coarse
            tbx, tby = s.exits(s.Ib, s.Jb, BLOCK)
            te = np.maximum(np.minimum(np.minimum(tbx, tby), s.t1), s.tc)
            zlow = s.oz + np.minimum(s.tc * s.dz, te * s.dz)
            # Ib, Jb are multiples of BLOCK (a power of two): the divisions are exact.
            # (Float floor division is slow; avoid it.)
            block = as_index(s.Jb * (nbx / BLOCK) + s.Ib * (1.0 / BLOCK))
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
                rows = as_index(s.rid.take(found))
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
            _enter_block(entering, nx, ny, inner_reach)
            fine = fine.join(entering)


def _enter_block(s, nx, ny, inner_reach):
    """Start the cell walk where the ray comes down to the block max (or end it where
    the ray climbs above it), moved on by skips over nodes of a few cells (as in
    start_walk; descending rays only), in the cell under that point (clamped to the
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
        top = node_tops(nodes, stride, size, s.U0 + ta * s.du, s.V0 + ta * s.dv)
        ta = np.maximum(ta, np.minimum(ta + size * inv_chebyshev, (top - s.oz) * inv_dz))
    s.ta = ta = np.minimum(ta, s.tf)
    s.i = np.minimum(
        np.maximum(np.floor(s.U0 + ta * s.du), s.Ib), np.minimum(s.Ib + BLOCK, nx - 1) - 1
    )
    s.j = np.minimum(
        np.maximum(np.floor(s.V0 + ta * s.dv), s.Jb), np.minimum(s.Jb + BLOCK, ny - 1) - 1
    )


def node_tops(nodes, stride, size, U, V):
    """Padded node maxima (see grid.Terrain.hierarchy) at grid points (U, V) in the footprint
    (up to rounding: the padding takes nodes -1 and across, no clamps needed); the offset
    and the float-to-index trick of grid.as_index are one constant. mode="clip" only guards
    memory."""
    column = np.floor(U * (1.0 / size))
    row = np.floor(V * (1.0 / size))
    k = (row * stride + (column + (stride + 1 + 6755399441055744.0))).view(np.int64)
    return nodes.take(k - 0x4338000000000000, mode="clip")


class Rays:
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
        mirror = object.__new__(Rays)
        mirror.__dict__.update(self.__dict__, oz=-self.oz, dz=-self.dz)
        return mirror


class Result:
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

    if TYPE_CHECKING:
        # The FIELDS and ALIASES rows, properties set up below the class.
        def __getattr__(self, name: str) -> np.ndarray: ...
        def __setattr__(self, name: str, value: np.ndarray) -> None: ...

    @property
    def size(self):
        return self.rows.shape[1]

    def select(self, mask):
        # mode="clip" skips the bounds checks (faster; the indices are valid).
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
        property(  # mypy cannot infer these lambdas' types (their default row argument)
            lambda self, row=_row: self.rows[row],  # type: ignore[misc]
            lambda self, value, row=_row: self.rows.__setitem__(row, value),  # type: ignore[misc]
        ),
    )


def start_walk(rays, todo, t0, t1, nx, ny, reach):
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
        top = node_tops(nodes, stride, size, U0 + at * du, V0 + at * dv)
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
