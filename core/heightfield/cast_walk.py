"""The sphere cast's walk over the terrain (numpy, all casts together; cast.py's docstring
has the traversal): stretch by stretch, the blocks and then the cells whose box grown by R
the path meets before the best contact so far, their pieces tested in the order of that
bound (cast_cells.py). cast_walk_kernel.py is the one-cast form of it.
"""

from __future__ import annotations

import numpy as np

from .cast_cells import cell_entries, dot
from .grid import BLOCK, slab

STRETCH = 8.0  # cells of horizontal travel (Chebyshev, grid units) per stretch
PAIRS = 1 << 18  # (cast, cell) pairs per batch of piece tests (keeps temporaries small)


def _expand(counts):
    """(owner, k): for each item, its ``counts`` entries numbered k = 0, 1, ..."""
    counts = counts.astype(np.int64)
    owner = np.repeat(np.arange(counts.size), counts)
    first = np.cumsum(counts) - counts
    return owner, np.arange(owner.size) - first[owner]


def _batches(counts, budget=PAIRS):
    """Slices of the items whose summed counts stay near ``budget`` (at least one item)."""
    total = np.cumsum(counts)
    begin = 0
    while begin < counts.size:
        base = total[begin - 1] if begin else 0
        end = int(np.searchsorted(total, base + budget, side="right"))
        end = max(end, begin + 1)
        yield slice(begin, end)
        begin = end


def _box_entry(g, cast, rows, xa, xb, ya, yb, bottom, top, ta, tb):
    """The part [enter, leave] of [ta, tb] where the centres of ``rows`` may be within R of
    the pieces in the box [xa, xb] x [ya, yb] x [bottom, top] (a block's or a cell's; bottom
    -inf where the solid's walls reach down): in the box grown by R and, for a finite box,
    in the ball of radius R + half its diagonal around its middle (tighter for large R).
    No contact with those pieces outside it."""
    R = cast.R[rows]
    s, u = [x[rows] for x in cast.s], [x[rows] for x in cast.u]
    ex, lx = slab(s[0], u[0], xa - R, xb + R)
    ey, ly = slab(s[1], u[1], ya - R, yb + R)
    ez, lz = slab(s[2], u[2], bottom - R, top + R)
    enter = np.maximum(np.maximum(ex, ey), np.maximum(ez, ta))
    leave = np.minimum(np.minimum(lx, ly), np.minimum(lz, tb))
    bounded = bottom > -np.inf
    half = [0.5 * (xb - xa), 0.5 * (yb - ya), np.where(bounded, 0.5 * (top - bottom), 0.0)]
    reach = np.where(bounded, R + np.sqrt(dot(half, half)), np.inf)  # unbounded: no ball
    offset = [s[0] - (xa + half[0]), s[1] - (ya + half[1]), s[2] - (top - half[2])]
    closest = -dot(offset, u)
    miss = [x + closest * y for x, y in zip(offset, u)]
    spare = np.sqrt(reach * reach - dot(miss, miss))  # NaN: the path misses the ball
    enter = np.fmax(enter, closest - spare)
    leave = np.fmin(leave, closest + spare)
    return np.where(spare >= 0.0, enter, np.inf), leave


def walk(geometry, cast, rows, t0, t1, best, cell):
    """The first entry of each cast ``rows`` on [t0, t1] into best (and its cell into
    cell), stretch by stretch, all casts together."""
    g = geometry
    ux, uy = cast.u[0][rows], cast.u[1][rows]
    chebyshev = np.maximum(np.abs(ux) / g.dx, np.abs(uy) / g.dy)
    with np.errstate(divide="ignore"):
        step = STRETCH / chebyshev  # inf for vertical casts: one stretch
    ta = t0
    while rows.size:
        tb = np.minimum(ta + step, t1)
        _stretch(g, cast, rows, ta, tb, best, cell)
        going = (best[rows] > tb) & (tb < t1)
        rows, ta, tb, t1, step = (x[going] for x in (rows, ta, tb, t1, step))
        ta = tb


def _stretch(g, cast, rows, ta, tb, best, cell):
    """Test the cells within R of the casts' path over [ta, tb] (module docstring): blocks
    and cells whose box (grown by R) the path meets in [ta, tb] before the best contact so
    far, the cells of each cast in the order the path meets their boxes."""
    R = cast.R[rows]
    ca, cb = cast.at(rows, ta), cast.at(rows, tb)
    i_low, i_high = g.cell_range(
        np.minimum(ca[0], cb[0]) - R, np.maximum(ca[0], cb[0]) + R, g.x0, g.dx, g.nx - 1
    )
    j_low, j_high = g.cell_range(
        np.minimum(ca[1], cb[1]) - R, np.maximum(ca[1], cb[1]) + R, g.y0, g.dy, g.ny - 1
    )
    box = (i_low, i_high, j_low, j_high)
    # Blocks meeting the box, culled by the block max (min).
    bi_low, bi_high = np.floor(i_low / BLOCK), np.floor(i_high / BLOCK)
    bj_low, bj_high = np.floor(j_low / BLOCK), np.floor(j_high / BLOCK)
    across = bi_high - bi_low + 1
    owner, k = _expand(across * (bj_high - bj_low + 1))
    bi = bi_low[owner] + k % across[owner]
    bj = bj_low[owner] + k // across[owner]
    cast_rows = rows[owner]
    first_i, first_j = bi * BLOCK, bj * BLOCK
    last_i = np.minimum(first_i + BLOCK, g.nx - 1)
    last_j = np.minimum(first_j + BLOCK, g.ny - 1)
    block = (bj * g.nbx + bi).astype(np.intp)
    enter, leave = _box_entry(
        g,
        cast,
        cast_rows,
        g.x0 + first_i * g.dx,
        g.x0 + last_i * g.dx,
        g.y0 + first_j * g.dy,
        g.y0 + last_j * g.dy,
        g.block_min[block],
        g.block_max[block],
        ta[owner],
        tb[owner],
    )
    keep = np.flatnonzero((enter <= leave) & (enter <= best[cast_rows]))
    if not keep.size:
        return
    # Each cast's blocks in the order of their bound: the first, then 3, 12, ... more,
    # skipping those whose bound passed the best contact found meanwhile.
    owner, enter = owner[keep], enter[keep]
    blocks = np.stack([first_i[keep], first_j[keep], last_i[keep], last_j[keep]])
    order = np.lexsort((enter, owner))
    owner, enter, blocks = owner[order], enter[order], blocks[:, order]
    rank = _rank(owner)
    limit = 1
    while owner.size:
        now = np.flatnonzero(rank < limit)
        _test_blocks(g, cast, rows, ta, tb, owner[now], blocks[:, now], best, cell, box)
        rest = np.flatnonzero((rank >= limit) & (enter <= best[rows[owner]]))
        owner, enter, blocks, rank = owner[rest], enter[rest], blocks[:, rest], rank[rest]
        limit *= 4


def _rank(owner):
    """Each entry's position within its run of equal (sorted) owners."""
    first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    return np.arange(owner.size) - np.repeat(first, np.diff(np.r_[first, owner.size]))


def _test_blocks(g, cast, rows, ta, tb, owner, blocks, best, cell, box):
    """Test the cells of the blocks (first i, first j, last i, last j) within each cast's
    box (i_low, i_high, j_low, j_high), culled as the blocks were."""
    for which, i, j, index in cells_of_blocks(g, owner, blocks, box):
        cast_rows = rows[which]
        enter, leave = _box_entry(
            g,
            cast,
            cast_rows,
            g.x0 + i * g.dx,
            g.x0 + (i + 1) * g.dx,
            g.y0 + j * g.dy,
            g.y0 + (j + 1) * g.dy,
            g.cell_min[index],
            g.cell_max[index],
            ta[which],
            tb[which],
        )
        live = np.flatnonzero((enter <= leave) & (enter <= best[cast_rows]))
        if live.size:
            _test_cells(g, cast, cast_rows[live], i[live], j[live], enter[live], best, cell)


def cells_of_blocks(g, owner, blocks, box):
    """The cells of the blocks (first i, first j, last i, last j) that lie in their owner's
    box (i_low, i_high, j_low, j_high, per owner), in batches of at most PAIRS:
    (owner of each cell, i, j, cell index)."""
    first_i, first_j, last_i, last_j = blocks
    i_low, i_high, j_low, j_high = box
    ci_low = np.maximum(first_i, i_low[owner])
    ci_high = np.minimum(last_i - 1, i_high[owner])
    cj_low = np.maximum(first_j, j_low[owner])
    cj_high = np.minimum(last_j - 1, j_high[owner])
    for sub, i, j in rectangles(ci_low, ci_high, cj_low, cj_high):
        yield owner[sub], i, j, (j * (g.nx - 1) + i).astype(np.intp)


def rectangles(i_low, i_high, j_low, j_high):
    """The cells (or blocks) (i, j) of each item's rectangle [i_low, i_high] x [j_low,
    j_high], row by row, in batches of at most PAIRS: (item of each, i, j)."""
    wide = i_high - i_low + 1
    counts = (wide * (j_high - j_low + 1)).astype(np.int64)
    for part in _batches(counts):
        item, k = _expand(counts[part])
        item = item + part.start
        yield item, i_low[item] + k % wide[item], j_low[item] + k // wide[item]


def _test_cells(g, cast, rows, i, j, enter, best, cell):
    """Test the pieces of cells (i, j) for the casts ``rows`` (grouped by cast), each cast's
    cells in the order of ``enter`` (a lower bound of their contacts): its first cell, then
    the next 3, 12, ... while their bound is at most the best contact found."""
    order = np.lexsort((enter, rows))
    rows, i, j, enter = rows[order], i[order], j[order], enter[order]
    rank = _rank(rows)
    limit = 1
    while rows.size:
        now = rank < limit
        take = np.flatnonzero(now)
        t = cell_entries(g, cast, rows[take], i[take], j[take])
        found = np.flatnonzero(t < np.inf)
        if found.size:
            tested, t = rows[take[found]], t[found]
            index = (j[take[found]] * (g.nx - 1) + i[take[found]]).astype(np.int64)
            before = best[tested]
            np.minimum.at(best, tested, t)
            won = (t == best[tested]) & (t < before)
            cell[tested[won]] = index[won]
        rest = np.flatnonzero(~now & (enter <= best[rows]))
        rows, i, j, enter, rank = (x[rest] for x in (rows, i, j, enter, rank))
        limit *= 4
