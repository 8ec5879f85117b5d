"""The traversal of the compiled ray walk (ray_kernel.py): the one-ray form of walk.py,
which stays the reference and documents the math, expression for expression.

From where the clip puts a ray on the terrain (or on its mirror image, for a ray below a
surface) the pyramid's skips move it on (pyramid_skip, one per level, coarsest first, then
FINE_SKIPS at the block level: ray_kernel.py runs them for a group of rays together); then
``walk`` steps through the blocks, and through the cells of each block the ray comes down
into, Amanatides-Woo with exits recomputed from the integer indices, and tests each cell
with the model's cell test (ray_cells.py: the primitive test of this traversal, passed in,
so a walk is compiled with its model's test only).

``arguments`` is the terrain's ray_arguments.RayArguments; ``terrain`` 0 the terrain as
given, 1 its mirror image (whose heights, block maxima and levels follow the terrain's).
"""

import numpy as np

from ..kernel_common import INF, clamp, fmax, helper, maximum, minimum
from .grid import BLOCK
from .ray_cells import cell_tolerance
from .walk import TINY


@helper
def _node_index(count, stride, size, U, V):
    """Index of the padded node at grid point (U, V) in a level of ``count`` nodes (see
    grid.Terrain.hierarchy and walk.node_tops); a point off the level (or NaN) clips as numpy's
    float-to-index trick does."""
    column = np.floor(U * (1.0 / size))
    row = np.floor(V * (1.0 / size))
    k = row * stride + (column + (stride + 1))
    if k >= count - 1 or k != k:
        return count - 1
    if k <= 0:
        return 0
    return np.int64(k)


@helper
def pyramid_skip(arguments, skip, terrain, U0, V0, du, dv, dz, wz, t1, inv_dz, inv_chebyshev, tc):
    """Skip number ``skip`` of a ray at tc (walk.start_walk): to where it comes down to the
    max of the node around it, or has travelled the node's size (Chebyshev, grid units).
    ``inv_dz``: 1 / dz for a descending ray, else 0; ``inv_chebyshev``: (1 - 1e-9) over
    the larger of |du|, |dv|."""
    levels = arguments.reach_levels[terrain]
    level = arguments.reach_first[terrain] + (levels - 1 - skip if skip < levels - 1 else 0)
    size = arguments.node_size[level]
    at = minimum(tc, t1)
    k = _node_index(
        arguments.node_count[level], arguments.node_stride[level], size, U0 + at * du, V0 + at * dv
    )
    top = arguments.nodes[arguments.node_offset[level] + k]
    if dz >= 0:
        down = INF if wz + tc * dz > top else tc
    else:
        down = (top - wz) * inv_dz
    return maximum(tc, minimum(tc + size * inv_chebyshev, down))


@helper
def walk(cell_test, arguments, terrain, U0, V0, du, dv, dz, wz, t1, tc):
    """walk.walk for one ray over [tc, t1]: the blocks in order, and the cells of each block
    the ray comes down into (its lowest z over the block at or below the block max, which
    includes the cells' tolerances) from where it comes down to that max. Returns (t,
    grad_u, grad_v, i, j) of the first cell ``cell_test`` finds it meets, t = INF and
    i = j = -1 where none."""
    nx, ny = arguments.nx, arguments.ny
    nbx = -(-(nx - 1) // BLOCK)
    nby = -(-(ny - 1) // BLOCK)
    blocks = nbx * nby
    # Rays parallel to grid lines: +-TINY toward the middle (see walk.start_walk).
    if du == 0:
        du = -TINY if U0 > 0.5 * (nx - 1) else TINY
    if dv == 0:
        dv = -TINY if V0 > 0.5 * (ny - 1) else TINY
    inv_du = 1.0 / du
    inv_dv = 1.0 / dv
    px = 1.0 if du > 0 else 0.0
    py = 1.0 if dv > 0 else 0.0
    negative = 0.0 if 0.0 < dz else dz  # 1 / dz for descending rays, else 0: min(dz, 0.0)
    inv_dz = negative / (negative * negative + (1.0 if dz >= 0 else 0.0))
    inv_chebyshev = (1.0 - 1e-9) / maximum(abs(du), abs(dv))
    blocks_at = terrain * blocks
    column = np.floor((U0 + tc * du) * (1.0 / BLOCK))
    line = np.floor((V0 + tc * dv) * (1.0 / BLOCK))
    walking = abs(column) < INF and abs(line) < INF
    Ib = np.int64(clamp(column, 0.0, nbx - 1.0)) * BLOCK if walking else 0
    Jb = np.int64(clamp(line, 0.0, nby - 1.0)) * BLOCK if walking else 0
    while walking:
        tbx = (Ib + px * BLOCK - U0) * inv_du
        tby = (Jb + py * BLOCK - V0) * inv_dv
        te = maximum(minimum(minimum(tbx, tby), t1), tc)
        zlow = wz + minimum(tc * dz, te * dz)
        block = (Jb // BLOCK) * nbx + Ib // BLOCK
        block = 0 if 0 > block else block  # min(max(block, 0), blocks - 1)
        block = blocks - 1 if blocks - 1 < block else block
        top = arguments.block_max[blocks_at + block]
        if zlow <= top:
            ta, tf, i, j, entered = _enter_block(
                arguments, terrain, Ib, Jb, top, tc, te, U0, V0, du, dv, dz, wz, inv_dz,
                inv_chebyshev,
            )  # fmt: skip
            if not entered:
                break
            found, t, grad_u, grad_v, i, j = _walk_cells(
                cell_test, arguments, terrain, i, j, ta, tf, U0, V0, du, dv, dz, wz, inv_du, inv_dv
            )  # fmt: skip
            if found:
                return t, grad_u, grad_v, i, j
        if not (te < t1):
            break
        if tbx <= tby:
            Ib += (1 if du > 0 else -1) * BLOCK
        else:
            Jb += (1 if dv > 0 else -1) * BLOCK
        tc = te
    return INF, 0.0, 0.0, np.int64(-1), np.int64(-1)


@helper
def _enter_block(
    arguments, terrain, Ib, Jb, top, tc, te, U0, V0, du, dv, dz, wz, inv_dz, inv_chebyshev
):
    """walk._enter_block for block (Ib, Jb), which the ray crosses over [tc, te]: from where
    it comes down to the block max ``top``, the cell-level skips, and the cell the ray is
    then over. Returns (ta, tf, i, j, entered): the stretch [ta, tf] to walk from cell (i,
    j); not entered where that point is not finite (the walk ends)."""
    nx, ny = arguments.nx, arguments.ny
    to_top = (top - wz) / dz
    ta = fmax(tc, to_top) if dz < 0 else tc
    tf = minimum(te, to_top) if dz > 0 else te
    ta = minimum(ta, tf)
    inner = arguments.inner_first[terrain]
    for level in range(inner, inner + arguments.inner_levels[terrain]):
        size = arguments.node_size[level]
        k = _node_index(
            arguments.node_count[level],
            arguments.node_stride[level],
            size,
            U0 + ta * du,
            V0 + ta * dv,
        )
        node = arguments.nodes[arguments.node_offset[level] + k]
        ta = maximum(ta, minimum(ta + size * inv_chebyshev, (node - wz) * inv_dz))
    ta = minimum(ta, tf)
    column = np.floor(U0 + ta * du)
    line = np.floor(V0 + ta * dv)
    if not (abs(column) < INF and abs(line) < INF):
        return ta, tf, np.int64(0), np.int64(0), False
    last_i = nx - 1 if nx - 1 < Ib + BLOCK else Ib + BLOCK
    last_j = ny - 1 if ny - 1 < Jb + BLOCK else Jb + BLOCK
    i = np.int64(clamp(column, float(Ib), float(last_i - 1)))
    j = np.int64(clamp(line, float(Jb), float(last_j - 1)))
    return ta, tf, i, j, True


@helper
def _walk_cells(
    cell_test, arguments, terrain, i, j, ta, tf, U0, V0, du, dv, dz, wz, inv_du, inv_dv
):
    """The cells of a block from cell (i, j) over [ta, tf], Amanatides-Woo (each cell's
    exit from its integer indices), each tested on the stretch of the ray over it with its
    own tolerance. Returns (found, t, grad_u, grad_v, i, j) of the first it meets."""
    nx = arguments.nx
    heights, anti_of, has_anti = arguments.heights, arguments.anti_of, arguments.has_anti
    heights_at = terrain * (nx * arguments.ny)  # the mirror's heights follow the terrain's
    px = 1.0 if du > 0 else 0.0
    py = 1.0 if dv > 0 else 0.0
    sx = 1 if du > 0 else -1
    sy = 1 if dv > 0 else -1
    while True:
        cbx = (i + px - U0) * inv_du
        cby = (j + py - V0) * inv_dv
        tb = maximum(minimum(minimum(cbx, cby), tf), ta)
        corner = heights_at + j * nx + i
        h00, h10 = heights[corner], heights[corner + 1]
        h01, h11 = heights[corner + nx], heights[corner + nx + 1]
        tol = cell_tolerance(h00, h10, h01, h11, arguments.spacing)
        split = anti_of[j * (nx - 1) + i] if has_anti else 0.0
        found, t, grad_u, grad_v = cell_test(
            h00, h10, h01, h11, tol, has_anti, split, i, j, U0, V0, wz, du, dv, dz, ta, tb
        )  # fmt: skip
        if found:
            return True, t, grad_u, grad_v, i, j
        if cbx <= cby:
            i += sx
        else:
            j += sy
        ta = tb
        if tb >= tf:
            return False, t, grad_u, grad_v, i, j
