"""The compiled sphere cast's walk along one cast's path: the one-cast form of cast_walk.py
(cast.py's docstring has the traversal), in cast_kernel.py's phases: clipping (``clip``),
then per stretch of the path the hierarchy skip (``gather_stretch``) and the cell walk
(``test_stretch``), stretch after stretch (``walk``).

The path is clipped to the footprint box grown by R, then walked in stretches. Per stretch,
the hierarchy skip gathers the cells whose box grown by R (and, for a cast wider than a cell,
the ball around it) the path meets before the best contact so far, blocks of cells culled
first by their heights' slab grown by R; the cell walk tests them in the order the path
meets their boxes (their pieces: cast_cells_kernel.py), and the walk stops once the best
contact is in the stretch. The order of the tests changes nothing but the work: the contact
is the least entry over the pieces. A cell tested in an earlier stretch is not tested again.

Records passed between the phases (cast_kernel.cast_arguments): ``footprint`` = (x0, y0,
dx, dy, nx, ny), ``heights`` = (flat heights, diagonals (1.0 where anti), whether there are
any), ``hierarchy`` = (blocks per row, block extremes, cell extremes); ``grid`` as
cast_cells_kernel.cell_entry takes it.
"""

import numpy as np

from ..kernel_common import INF, fmax, fmin, helper, maximum, minimum, slab
from .cast import MARGIN
from .cast_cells import EARLY
from .cast_cells_kernel import cell_entry
from .grid import BLOCK
from .ray_order import _prefetch

FIRST_CELLS = 64  # the cell list's first room (twice a stretch's need where that is short)
# Cells of horizontal travel per stretch. The reference walks all casts together in
# stretches of 8 cells (numpy's per-call overhead); one cast at a time stops sooner with
# shorter ones: fewer cells are boxed past the contact. (The answer is the least entry over
# the pieces: the stretches change only the work.)
STRETCH = 2.0

# The rows of the walk's cell list (cast_kernel.py allocates it, larger where it is short):
# a stretch's live cells (where the path enters the cell's box, the cell's i and j) and the
# cast's cells tested so far (their index; one array: each np.empty signature costs
# compile time).
ENTER, CELL_I, CELL_J, TESTED, CELL_ROWS = range(5)
# A block's or a cell's pair of extremes (cast_kernel.extremes_float32): the least height
# at 2 k + LOW, the largest at 2 k + HIGH.
LOW, HIGH = 0, 1


@helper
def cell_range(low, high, origin, inverse_spacing, cells):
    """_Geometry.cell_range: first and last cell meeting [low, high], clamped (MARGIN, far
    above the rounding of a product with 1 / spacing, keeps them whole)."""
    first = np.floor((low - origin) * inverse_spacing - MARGIN)
    last = np.floor((high - origin) * inverse_spacing + MARGIN)
    first = minimum(maximum(first, 0.0), cells - 1.0)
    last = minimum(maximum(last, 0.0), cells - 1.0)
    return np.int64(first), np.int64(last)


@helper
def block_box(bi, bj, nx, ny, nbx, block_extremes):
    """Block (bi, bj): its first cell and the end of its cells in i and in j, and its least
    and largest height."""
    first_i, first_j = bi * BLOCK, bj * BLOCK
    end_i = minimum(first_i + BLOCK, nx - 1)
    end_j = minimum(first_j + BLOCK, ny - 1)
    block = bj * nbx + bi
    low = np.float64(block_extremes[2 * block + LOW])
    high = np.float64(block_extremes[2 * block + HIGH])
    return first_i, end_i, first_j, end_j, low, high


@helper
def grown_box_entry(xa, xb, ya, yb, bottom, top, ta, tb, sx, sy, sz, ux, uy, uz, inverse, R):
    """The part [enter, leave] of [ta, tb] in the box grown by R: box_entry without its
    ball (which culls little where R is small beside the box) and without a branch."""
    ex, lx = slab(sx, ux, inverse[0], xa - R, xb + R, 0.0)
    ey, ly = slab(sy, uy, inverse[1], ya - R, yb + R, 0.0)
    ez, lz = slab(sz, uz, inverse[2], bottom - R, top + R, 0.0)
    enter = maximum(maximum(ex, ey), maximum(ez, ta))
    leave = minimum(minimum(lx, ly), minimum(lz, tb))
    return enter, leave


@helper
def box_entry(xa, xb, ya, yb, bottom, top, ta, tb, sx, sy, sz, ux, uy, uz, inverse, R, best):
    """cast_walk._box_entry: the part [enter, leave] of [ta, tb] where the centre may be
    within R of the pieces in the box (in the box grown by R and, for a finite box, in the
    ball of radius R + half its diagonal around its middle); enter inf where never."""
    enter, leave = grown_box_entry(
        xa, xb, ya, yb, bottom, top, ta, tb, sx, sy, sz, ux, uy, uz, inverse, R
    )
    if not (enter <= leave and enter <= best):
        return INF, leave  # the ball only narrows the interval: no need to look
    bounded = bottom > -INF
    hx, hy = 0.5 * (xb - xa), 0.5 * (yb - ya)
    hz = 0.5 * (top - bottom) if bounded else 0.0
    reach = R + np.sqrt(hx * hx + hy * hy + hz * hz) if bounded else INF
    ox, oy, oz = sx - (xa + hx), sy - (ya + hy), sz - (top - hz)
    closest = -(ox * ux + oy * uy + oz * uz)
    mx, my, mz = ox + closest * ux, oy + closest * uy, oz + closest * uz
    spare = np.sqrt(reach * reach - (mx * mx + my * my + mz * mz))
    enter = fmax(enter, closest - spare)
    leave = fmin(leave, closest + spare)
    return (enter if spare >= 0.0 else INF), leave


@helper
def clip(footprint, solid, zmin, zmax, sx, sy, sz, ux, uy, uz, inverse_u, R, length):
    """_Geometry.clip for one cast: [t0, t1] of the path in the footprint box grown by R
    (the solid: below zmax + R; the surface: between zmin - R and zmax + R), within
    [0, length]; empty where t0 > t1."""
    x0, y0, dx, dy, nx, ny = footprint
    x1 = x0 + (nx - 1) * dx
    y1 = y0 + (ny - 1) * dy
    lx, hx = slab(sx, ux, inverse_u[0], x0 - R, x1 + R, 0.0)
    ly, hy = slab(sy, uy, inverse_u[1], y0 - R, y1 + R, 0.0)
    lz, hz = slab(sz, uz, inverse_u[2], -INF if solid else zmin - R, zmax + R, 0.0)
    t0 = maximum(maximum(lx, ly), maximum(lz, 0.0))
    t1 = minimum(minimum(hx, hy), minimum(hz, length))
    return t0, t1


@helper
def walk(
    cells, t0, t1, footprint, heights, hierarchy, grid, solid, scale,
    sx, sy, sz, ux, uy, uz, inverse_u, R,
):  # fmt: skip
    """The least entry on [t0, t1] into the pieces of the cells the path passes within R
    of, stretch by stretch until the best contact lies in the stretch: the entry, its
    cell's index and its piece's code (inf, -1, -1 where none), and 0; or, where a
    stretch's cells do not fit in the cell list, how many columns they need (the caller
    walks again with a larger list: the walk does not own it)."""
    _, _, dx, dy, _, _ = footprint
    best = INF
    best_cell = best_piece = np.int64(-1)  # (no literal into a call)
    recorded = needed = np.int64(0)
    early = EARLY * (R + scale)
    chebyshev = maximum(abs(ux) / dx, abs(uy) / dy)
    stride = STRETCH / chebyshev
    # The ball bound pays only for casts wider than a cell: below, a cell's test is its
    # grown box alone, without a branch.
    ball = R > minimum(dx, dy)
    ta = t0
    while True:
        tb = minimum(ta + stride, t1)
        live, needed = gather_stretch(
            cells, footprint, hierarchy, grid, ta, tb, sx, sy, sz, ux, uy, uz, inverse_u, R,
            best, ball,
        )  # fmt: skip
        if needed:
            break
        best, best_cell, best_piece, recorded = test_stretch(
            cells, live, recorded, best, best_cell, best_piece, footprint, heights, grid, solid,
            sx, sy, sz, ux, uy, uz, R, early,
        )  # fmt: skip
        if not (best > tb and tb < t1):
            break
        ta = tb
    return best, best_cell, best_piece, needed


@helper
def gather_stretch(
    cells, footprint, hierarchy, grid, ta, tb, sx, sy, sz, ux, uy, uz, inverse_u, R, best, ball
):  # fmt: skip
    """The hierarchy skip over the stretch [ta, tb]: the cells whose box grown by R (with
    ``ball``, also the ball around it) the path meets in the stretch before ``best``, in
    blocks culled by their heights' slab grown by R, into the cell list's first columns
    (rows ENTER, CELL_I, CELL_J): their count, and 0; or, where they do not fit, how many
    columns they need."""
    x0, y0, dx, dy, nx, ny = footprint
    nbx, block_extremes, cell_extremes = hierarchy
    _, _, _, _, _, _, inverse_dx, inverse_dy = grid
    # Cells within R of the stretch: its xy box grown by R.
    ax, bx = sx + ta * ux, sx + tb * ux
    ay, by = sy + ta * uy, sy + tb * uy
    i_low, i_high = cell_range(minimum(ax, bx) - R, maximum(ax, bx) + R, x0, inverse_dx, nx - 1)
    j_low, j_high = cell_range(minimum(ay, by) - R, maximum(ay, by) + R, y0, inverse_dy, ny - 1)
    live = 0
    for bj in range(j_low // BLOCK, j_high // BLOCK + 1):
        for bi in range(i_low // BLOCK, i_high // BLOCK + 1):
            first_i, end_i, first_j, end_j, low, high = block_box(
                bi, bj, nx, ny, nbx, block_extremes
            )
            # A block: its heights' slab grown by R only (the cells are in the stretch's box
            # already, and the ball around 8 x 8 cells is far looser than their box).
            enter, leave = slab(sz, uz, inverse_u[2], low - R, high + R, 0.0)
            enter, leave = maximum(enter, ta), minimum(leave, tb)
            if not (enter <= leave and enter <= best):
                continue
            i_first = maximum(first_i, i_low)
            i_last = minimum(end_i - 1, i_high)
            j_first = maximum(first_j, j_low)
            j_last = minimum(end_j - 1, j_high)
            room = live + (i_last - i_first + 1) * (j_last - j_first + 1)
            if room > cells.shape[1]:
                return live, room
            for j in range(j_first, j_last + 1):
                for i in range(i_first, i_last + 1):
                    index = j * (nx - 1) + i
                    low = np.float64(cell_extremes[2 * index + LOW])
                    high = np.float64(cell_extremes[2 * index + HIGH])
                    xa, ya = x0 + i * dx, y0 + j * dy
                    xb, yb = x0 + (i + 1) * dx, y0 + (j + 1) * dy
                    if ball:
                        enter, leave = box_entry(
                            xa, xb, ya, yb, low, high, ta, tb,
                            sx, sy, sz, ux, uy, uz, inverse_u, R, best,
                        )  # fmt: skip
                    else:
                        enter, leave = grown_box_entry(
                            xa, xb, ya, yb, low, high, ta, tb,
                            sx, sy, sz, ux, uy, uz, inverse_u, R,
                        )  # fmt: skip
                    # Written always, kept (counted) where the path may meet its pieces
                    # before the best contact: no branch to mispredict per cell.
                    cells[ENTER, live], cells[CELL_I, live], cells[CELL_J, live] = enter, i, j
                    live += enter <= leave and enter <= best
    return live, 0 * live


@helper
def test_stretch(
    cells, live, recorded, best, best_cell, best_piece, footprint, heights, grid, solid,
    sx, sy, sz, ux, uy, uz, R, early,
):  # fmt: skip
    """The cell walk over a stretch's ``live`` cells (gather_stretch): sorted by where the
    path enters their boxes, each tested (cell_entry) until that entry passes the best
    contact, and recorded (row TESTED, ``recorded`` of them) so that a later stretch does
    not test it again. Returns the best contact (entry, cell index, piece code) and the
    count recorded."""
    _, _, _, _, nx, _ = footprint
    flat, anti_of, has_anti = heights
    # Their heights, read once the stretch's cells are sorted; in the order of enter
    # (stable: ties keep their order).
    for slot in range(live):
        enter, ci, cj = cells[ENTER, slot], cells[CELL_I, slot], cells[CELL_J, slot]
        k = np.int64(cj) * nx + np.int64(ci)
        _prefetch(flat, k)
        _prefetch(flat, k + nx)
        at = slot
        while at > 0 and cells[ENTER, at - 1] > enter:
            cells[ENTER, at] = cells[ENTER, at - 1]
            cells[CELL_I, at] = cells[CELL_I, at - 1]
            cells[CELL_J, at] = cells[CELL_J, at - 1]
            at -= 1
        cells[ENTER, at], cells[CELL_I, at], cells[CELL_J, at] = enter, ci, cj
    for slot in range(live):
        if cells[ENTER, slot] > best:
            break
        ci, cj = np.int64(cells[CELL_I, slot]), np.int64(cells[CELL_J, slot])
        index = cj * (nx - 1) + ci
        # Tested in an earlier stretch: its least entry (over the whole path) is in best
        # already.
        seen = False
        for earlier in range(recorded):
            seen = seen or cells[TESTED, earlier] == index
        if seen:
            continue
        k = cj * nx + ci
        entry, piece = cell_entry(
            ci, cj, flat[k], flat[k + 1], flat[k + nx], flat[k + nx + 1],
            has_anti and anti_of[index] > 0.0, grid, solid,
            sx, sy, sz, ux, uy, uz, R, early, best,
        )  # fmt: skip
        if entry < best:
            best, best_cell, best_piece = entry, index, piece
        if recorded < FIRST_CELLS:  # (past that, a cell may be tested again)
            cells[TESTED, recorded] = index
            recorded += 1
    return best, best_cell, best_piece, recorded
