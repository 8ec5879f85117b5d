"""The grid of a heightfield terrain: validation, each cell's tolerance, the max hierarchy.

The terrain. ``heights[j, i]`` is z at ``(x0 + i dx, y0 + j dy)``. Work in grid units
``U = (x - x0) / dx``, ``V = (y - y0) / dy``; cell (i, j) is ``[i, i+1] x [j, j+1]`` with local
coordinates ``u = U - i``, ``v = V - j`` and corner heights h00, h10, h01, h11. Its surface
is two planar triangles split along ``u = v`` (or ``u + v = 1`` where ``diagonals`` is True),
or the bilinear patch ``h00 + a u + b v + c u v`` (a = h10 - h00, b = h01 - h00,
c = h00 - h10 - h01 + h11).

Tolerance. ``g <= tol`` counts as touching, with a tolerance of each cell's own:
``tol = 2^-40 max(|h00|, |h10|, |h01|, |h11|, dx, dy)``. The ray's z and the height under
it at a rounded t are off by a few ulps of the heights there (and of the spacing, the
scale of a flat terrain at 0), and a ray that grazes a spike tip, an edge or a flat
terrain exactly would otherwise be decided by that rounding. Being local, a spike of 1e12
widens the tolerance of its own four cells only: hits elsewhere do not move. The hierarchy
stores each cell's max + its tolerance (so a node's max bounds every cell test in it), and
the clip box's top is the largest of these.

Hierarchy (Jolt's HeightFieldShape, Tevs et al.'s maximum mipmaps): each cell's top (its
largest corner + its tolerance), the max over blocks of BLOCK x BLOCK cells, and per
pyramid level the max over each node's 3 x 3 neighbourhood, which walk.py uses to skip
empty space. A ray below a surface sees the mirror image (heights negated): its own
Terrain, whose maxima are minus the minima.
"""

from __future__ import annotations

import numpy as np

BLOCK = 8  # cells per side of a hierarchy block (a power of two)
CELL_SKIPS = (1,)  # node sizes (cells) of the skips that start a block's cell walk


def as_heights(value):
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


def as_diagonals(value, cells_shape):
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


TOUCH = 2.0**-40  # a cell's tolerance, as a fraction of its scale (module docstring)


def tolerances(heights, spacing):
    """Each cell's touching tolerance, 2^-40 of its largest |corner height| or the spacing
    (module docstring), stored flat at the cell's first vertex's index ``j nx + i`` (as the
    walk gathers it; the last row and column hold 0)."""
    h = heights
    magnitude = np.maximum(
        np.maximum(np.abs(h[:-1, :-1]), np.abs(h[:-1, 1:])),
        np.maximum(np.abs(h[1:, :-1]), np.abs(h[1:, 1:])),
    )
    tol = np.zeros(h.shape)
    tol[:-1, :-1] = np.maximum(magnitude, max(spacing)) * TOUCH
    tol = tol.ravel()
    tol.setflags(write=False)
    return tol


def as_index(values):
    """Float arrays holding non-negative integers below 2^51 as int64 indices: adding
    1.5 * 2^52 puts the integer in the low mantissa bits (faster than astype)."""
    return (values + 6755399441055744.0).view(np.int64) - 0x4338000000000000


class Terrain:
    """The terrain as the walk sees it: the heights as given (rays above), or negated for
    rays below a surface (the mirror image), with each cell's tolerance and the max
    hierarchy (built on first use)."""

    def __init__(self, heights, tol, anti):
        self.ny, self.nx = heights.shape
        self.flat = np.ascontiguousarray(heights).ravel()
        self.tol = tol  # see tolerances()
        self.anti = anti  # (ny-1) * (nx-1) floats, 1.0 where a cell is split anti, or None
        self.top = float(self._cell_tops().max())  # the clip box's top
        self._hierarchy = None

    def held_arrays(self) -> list:
        """The arrays it holds now (the hierarchy only once built; the tolerances are
        shared with the mirror image)."""
        arrays = [self.flat, self.tol]
        if self._hierarchy is not None:
            block_max, reach, inner_reach = self._hierarchy
            arrays += [block_max] + [nodes for _, nodes, _ in (*reach, *inner_reach)]
        return arrays

    def mirrored(self):
        """The terrain seen from below: heights negated (tolerances and splits shared)."""
        return Terrain(-self.flat.reshape(self.ny, self.nx), self.tol, self.anti)

    def _cell_tops(self):
        """Each cell's largest corner height plus its tolerance, (ny-1, nx-1)."""
        tol = self.tol.reshape(self.ny, self.nx)[:-1, :-1]
        return _cell_max(self.flat.reshape(self.ny, self.nx)) + tol

    @property
    def hierarchy(self):
        """The max hierarchy, built on first use and cached:
        ``block_max``, the largest cell top (max corner height + the cell's tolerance) of
        each block of BLOCK x BLOCK cells (flat, row-major); ``reach``, per level l = 0, 1,
        ... the max over the 3 x 3 neighbourhood of each node of BLOCK 2^l cells, up to the
        last level that is below the top somewhere (coarser ones skip nothing);
        ``inner_reach``, the same for nodes of CELL_SKIPS cells. Each level is (size, nodes,
        stride): the node maxima, padded by a copy of the edge nodes all round and flattened
        (row stride ``stride``), so that node (I, J) for I, J in [-1, across] x [-1, down] is
        ``nodes[J * stride + I + stride + 1]`` with no clamping (see walk.node_tops)."""
        if self._hierarchy is None:

            def padded(level, size):
                nodes = np.empty((level.shape[0] + 2, level.shape[1] + 2))
                nodes[1:-1, 1:-1] = _neighbourhood_max(level)
                nodes[0], nodes[-1] = nodes[1], nodes[-2]
                nodes[:, 0], nodes[:, -1] = nodes[:, 1], nodes[:, -2]
                return size, nodes.ravel(), nodes.shape[1]

            cell_tops = self._cell_tops()
            block_max = _block_reduce(cell_tops, BLOCK, np.maximum)
            reach: list[tuple[int, np.ndarray, int]] = []
            level, size = block_max, BLOCK
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
            inner_reach, level, size = [], cell_tops, 1
            while True:
                if size in CELL_SKIPS:
                    inner_reach.append(padded(level, size))
                size *= 2
                if size > max(CELL_SKIPS):
                    break
                level = _pool_max(level)
            self._hierarchy = (block_max.ravel(), reach, inner_reach)
        return self._hierarchy


def slab(p, d, low, high, slack=0.0):
    """The interval [enter, leave] of t where p + t d lies in [low, high]; where d == 0 all
    t when p is within ``slack`` of [low, high], else none (enter > leave). The kernels'
    kernel_common.slab, operand for operand."""
    inverse = 1.0 / d  # as in walk._State.exits, so both find the same boundary distances
    ta = (low - p) * inverse
    tb = (high - p) * inverse
    inside = (p >= low - slack) & (p <= high + slack)
    parallel = d == 0
    enter = np.where(parallel, np.where(inside, -np.inf, np.inf), np.minimum(ta, tb))
    leave = np.where(parallel, np.where(inside, np.inf, -np.inf), np.maximum(ta, tb))
    return enter, leave
