"""Ray vs Heightfield (EXACT) compiled with numba: one ray per loop iteration.

The same walk as core/heightfield.py, which stays the reference and documents the math:
clip to the footprint box, skip by the max hierarchy (one skip per pyramid level, coarsest
first, then FINE_SKIPS at the block level), walk blocks, and inside a block whose max the
ray comes down to, walk cells Amanatides-Woo and test each cell's two triangles (or its
bilinear patch) on the closed interval the ray spends over it. Every expression is the
reference's, operand for operand, so both give the same bits: a hit decided within the
touching tolerance is decided the same way, and distances, normals and cells agree.

Written as one ray at a time, like PhysX's traceSegment or MuJoCo's mj_rayHfield, so a ray
stops as soon as it hits, and the only state is a few scalars; the numpy reference moves
all rays together one step per iteration instead. Imported lazily: numba is optional.
"""

import math

import numpy as np
from numba import njit, prange

from ..heightfield import BLOCK, FINE_SKIPS, TINY

# Below this many rays the serial kernel runs (no thread start-up).
PARALLEL_MIN_RAYS = 2048
# Rays per parallel work item: one call of the serial loop each (few calls, and pieces
# small enough to balance rays of very different cost between the threads).
PIECE = 256

_OPTIONS = {"cache": True, "error_model": "numpy", "nogil": True}


# numpy's NaN semantics, for the few places a NaN may reach: np.minimum/np.maximum
# propagate it, np.fmin/np.fmax ignore it.
@njit(**_OPTIONS)
def _minimum(a, b):
    return a if (a <= b or a != a) else b


@njit(**_OPTIONS)
def _maximum(a, b):
    return a if (a >= b or a != a) else b


@njit(**_OPTIONS)
def _fmin(a, b):
    return a if (a <= b or b != b) else b


@njit(**_OPTIONS)
def _fmax(a, b):
    return a if (a >= b or b != b) else b


@njit(**_OPTIONS)
def _clip(index, size):
    """np.take(mode="clip") bounds (memory safety only; the walk stays inside)."""
    return min(max(index, 0), size - 1)


@njit(**_OPTIONS)
def _node_index(count, stride, size, U, V):
    """Index of the padded node at grid point (U, V) in a level of ``count`` nodes (see
    Heightfield.hierarchy and _node_tops); out-of-range and NaN points clip as numpy's
    float-to-index trick does."""
    column = np.floor(U * (1.0 / size))
    row = np.floor(V * (1.0 / size))
    k = row * stride + (column + (stride + 1))
    if k >= count - 1 or k != k:
        return count - 1
    if k <= 0:
        return 0
    return int(k)


@njit(**_OPTIONS)
def _slab(p0, dp, lo, hi):
    inverse = 1.0 / dp
    ta = (lo - p0) * inverse
    tb = (hi - p0) * inverse
    if dp == 0:
        inside = p0 >= lo and p0 <= hi
        return (-np.inf, np.inf) if inside else (np.inf, -np.inf)
    return _minimum(ta, tb), _maximum(ta, tb)


@njit(**_OPTIONS)
def _cell_triangles(h00, h10, h01, h11, anti, a, i, j, U0, V0, oz, du, dv, dz, ta, tb, tol):
    """(hit, t, grad_u, grad_v) of cell (i, j)'s two triangles on [ta, tb], corner heights
    h00 ... h11, split along u + v = 1 if ``anti`` (then ``a`` is 1.0, else 0.0)
    (Heightfield._test_triangles, expression for expression)."""
    ua = U0 + ta * du - i
    va = V0 + ta * dv - j
    curl = (h00 - h10) + (h11 - h01)
    a1 = h11 - h01
    b1 = h01 - h00
    if anti:
        eu = 1.0 - 2.0 * a
        c1 = h00 - a * curl
        b1 = b1 + a * curl
        sigma = -curl * eu
        wa = eu * ua - va + a
        dw = eu * du - dv
    else:
        eu = 1.0
        c1 = h00
        sigma = -curl
        wa = ua - va
        dw = du - dv
    la = (oz + ta * dz - c1) - a1 * ua - b1 * va
    slope = dz - a1 * du - b1 * dv
    lb = tb - ta
    lm = _fmin(_fmax(-wa / dw, 0.0), lb)
    ga = la - sigma * _maximum(wa, 0.0)
    gm = la + slope * lm - sigma * _maximum(wa + dw * lm, 0.0)
    gb = la + slope * lb - sigma * _maximum(wa + dw * lb, 0.0)
    if not (_fmin(_fmin(ga, gm), gb) <= tol):
        return False, 0.0, 0.0, 0.0
    at_start = ga <= tol
    early = at_start or gm <= tol
    if at_start:
        distance = 0.0
    elif early:
        distance = lm * _minimum(ga / (ga - gm), 1.0)
    else:
        distance = lm + (lb - lm) * _minimum(gm / (gm - gb), 1.0)
    middle = 0.5 * lm if (early and lm > 0) else 0.5 * (lm + lb)
    on_first = 1.0 if wa + dw * middle > 0 else 0.0
    grad_u = a1 + on_first * sigma * eu
    grad_v = b1 - on_first * sigma
    return True, ta + distance, grad_u, grad_v


@njit(**_OPTIONS)
def _cell_bilinear(h00, h10, h01, h11, i, j, U0, V0, oz, du, dv, dz, ta, tb, tol):
    """(hit, t, grad_u, grad_v) of cell (i, j)'s bilinear patch on [ta, tb], corner
    heights h00 ... h11 (Heightfield._test_bilinear, expression for expression)."""
    a, b, c = h10 - h00, h01 - h00, (h00 - h10) + (h11 - h01)
    ua = U0 + ta * du - i
    va = V0 + ta * dv - j
    g0 = oz + ta * dz - (h00 + a * ua + b * va + c * ua * va)
    g1 = dz - (a * du + b * dv + c * (ua * dv + va * du))
    g2 = -c * du * dv
    length = tb - ta
    g_end = g0 + length * (g1 + length * g2)
    vertex = _fmin(_fmax(-g1 / (2.0 * g2), 0.0), length)
    g_vertex = g0 + vertex * (g1 + vertex * g2)
    if not (_fmin(_fmin(g0, g_end), g_vertex) <= tol):
        return False, 0.0, 0.0, 0.0
    if g0 <= tol:
        distance = 0.0
    else:
        discriminant = g1 * g1 - 4.0 * g2 * g0
        real = discriminant >= 0
        q = -0.5 * (g1 + math.copysign(math.sqrt(_maximum(discriminant, 0.0)), g1))
        r1, r2 = q / g2, g0 / q
        if not (real and r1 >= 0 and r1 <= length):
            r1 = np.inf
        if not (real and r2 >= 0 and r2 <= length):
            r2 = np.inf
        root = _minimum(r1, r2)
        if root < np.inf:
            distance = root
        elif g_vertex <= tol:
            distance = vertex
        else:
            distance = length
    u = ua + distance * du
    v = va + distance * dv
    return True, ta + distance, a + c * v, b + c * u


@njit(**_OPTIONS)
def _clip_ray(U0, V0, oz, du, dv, dz, max_distance, nx, ny, zmin, zmax):
    """(t0, t1, face) of Heightfield._clip for one ray."""
    enter_x, leave_x = _slab(U0, du, 0.0, nx - 1.0)
    enter_y, leave_y = _slab(V0, dv, 0.0, ny - 1.0)
    to_top = (zmax - oz) / dz
    below = oz <= zmax
    if dz < 0:
        enter_z = to_top
    else:
        enter_z = -np.inf if below else np.inf
    if dz > 0:
        leave_z = to_top
    else:
        leave_z = np.inf if (below or dz < 0) else -np.inf
    t0 = _maximum(_maximum(enter_x, enter_y), _maximum(enter_z, 0.0))
    t1 = _minimum(_minimum(leave_x, leave_y), _minimum(leave_z, max_distance))
    to_bottom = (zmin - oz) / dz if dz < 0 else np.inf
    t1 = _minimum(t1, _maximum(to_bottom, t0))
    if t0 == 0.0:
        face = 0
    elif t0 == enter_x:
        face = 1
    elif t0 == enter_y:
        face = 2
    else:
        face = 3
    return t0, t1, face


@njit(**_OPTIONS)
def _trace_rows(start, stop, ox, oy, oz_, ex, ey, ez, limit, field, distance, normal, cell):
    """Rays start ... stop - 1: Heightfield._cast for each, one ray at a time. One function
    for the whole walk, so that the arrays are unpacked once and no call inside the loop
    takes an array (each would cost reference counting)."""
    x0, y0, dx, dy, nx, ny = field[0], field[1], field[2], field[3], field[4], field[5]
    h, anti, has_anti, bilinear = field[6], field[7], field[8], field[9]
    zmin, zmax, tol = field[10], field[11], field[12]
    reach_nodes, reach_offset, reach_count, reach_stride, reach_size = field[13:18]
    block_max = field[18]
    inner_nodes, inner_offset, inner_count, inner_stride, inner_size = field[19:24]
    levels = reach_offset.shape[0]
    inner_levels = inner_offset.shape[0]
    blocks = block_max.shape[0]
    nbx = -(-(nx - 1) // BLOCK)
    nby = -(-(ny - 1) // BLOCK)
    for row in range(start, stop):
        oz = oz_[row]
        dz = ez[row]
        U0 = (ox[row] - x0) / dx
        V0 = (oy[row] - y0) / dy
        du = ex[row] / dx
        dv = ey[row] / dy
        t0, t1, face = _clip_ray(U0, V0, oz, du, dv, dz, limit[row], nx, ny, zmin, zmax)
        t = np.inf
        grad_u = 0.0
        grad_v = 0.0
        cell_i = -1
        cell_j = -1
        # -- _start_walk: one skip per pyramid level, coarsest first, then FINE_SKIPS at
        # the block level --------------------------------------------------------------
        tc = t0
        if t0 <= t1:
            inv_dz = 1.0 / dz if dz < 0 else 0.0
            inv_chebyshev = (1.0 - 1e-9) / _maximum(abs(du), abs(dv))
            for step in range(levels - 1 + FINE_SKIPS):
                level = levels - 1 - step if step < levels - 1 else 0
                size = reach_size[level]
                at = _minimum(tc, t1)
                k = _node_index(
                    reach_count[level], reach_stride[level], size, U0 + at * du, V0 + at * dv
                )
                top = reach_nodes[reach_offset[level] + k]
                if dz >= 0:
                    down = np.inf if oz + tc * dz > top else tc
                else:
                    down = (top - oz) * inv_dz
                tc = _maximum(tc, _minimum(tc + size * inv_chebyshev, down))
        if t0 <= t1 and tc <= t1:
            # -- _walk: blocks, then the cells of each block the ray comes down into ------
            # Rays parallel to grid lines: +-TINY toward the middle (see _start_walk).
            if du == 0:
                du = -TINY if U0 > 0.5 * (nx - 1) else TINY
            if dv == 0:
                dv = -TINY if V0 > 0.5 * (ny - 1) else TINY
            inv_du = 1.0 / du
            inv_dv = 1.0 / dv
            px = 1.0 if du > 0 else 0.0
            py = 1.0 if dv > 0 else 0.0
            sx = 1 if du > 0 else -1
            sy = 1 if dv > 0 else -1
            # 1 / dz for descending rays, else 0, computed as _enter_block does.
            negative = min(dz, 0.0)
            inv_dz = negative / (negative * negative + (1.0 if dz >= 0 else 0.0))
            inv_chebyshev = (1.0 - 1e-9) / _maximum(abs(du), abs(dv))
            column = np.floor((U0 + tc * du) * (1.0 / BLOCK))
            line = np.floor((V0 + tc * dv) * (1.0 / BLOCK))
            walking = abs(column) < np.inf and abs(line) < np.inf
            if walking:
                Ib = int(min(max(column, 0.0), nbx - 1.0)) * BLOCK
                Jb = int(min(max(line, 0.0), nby - 1.0)) * BLOCK
            while walking:
                # -- one block ------------------------------------------------------------
                tbx = (Ib + px * BLOCK - U0) * inv_du
                tby = (Jb + py * BLOCK - V0) * inv_dv
                te = _maximum(_minimum(_minimum(tbx, tby), t1), tc)
                zlow = oz + _minimum(tc * dz, te * dz)
                top = block_max[_clip((Jb // BLOCK) * nbx + Ib // BLOCK, blocks)]
                if zlow <= top + tol:
                    # -- _enter_block: from where the ray comes down to the block max ------
                    to_top = (top + tol - oz) / dz
                    ta = _fmax(tc, to_top) if dz < 0 else tc
                    tf = _minimum(te, to_top) if dz > 0 else te
                    ta = _minimum(ta, tf)
                    for level in range(inner_levels):
                        size = inner_size[level]
                        k = _node_index(
                            inner_count[level],
                            inner_stride[level],
                            size,
                            U0 + ta * du,
                            V0 + ta * dv,
                        )
                        node = inner_nodes[inner_offset[level] + k]
                        ta = _maximum(ta, _minimum(ta + size * inv_chebyshev, (node - oz) * inv_dz))
                    ta = _minimum(ta, tf)
                    column = np.floor(U0 + ta * du)
                    line = np.floor(V0 + ta * dv)
                    if not (abs(column) < np.inf and abs(line) < np.inf):
                        break
                    i = int(min(max(column, Ib), min(Ib + BLOCK, nx - 1) - 1))
                    j = int(min(max(line, Jb), min(Jb + BLOCK, ny - 1) - 1))
                    # -- its cells, Amanatides-Woo, exits from the integer indices ---------
                    found = False
                    while True:
                        cbx = (i + px - U0) * inv_du
                        cby = (j + py - V0) * inv_dv
                        tb = _maximum(_minimum(_minimum(cbx, cby), tf), ta)
                        k = j * nx + i
                        if bilinear:
                            found, t, grad_u, grad_v = _cell_bilinear(
                                h[k],
                                h[k + 1],
                                h[k + nx],
                                h[k + nx + 1],
                                i,
                                j,
                                U0,
                                V0,
                                oz,
                                du,
                                dv,
                                dz,
                                ta,
                                tb,
                                tol,
                            )
                        else:
                            a = anti[j * (nx - 1) + i] if has_anti else 0.0
                            found, t, grad_u, grad_v = _cell_triangles(
                                h[k],
                                h[k + 1],
                                h[k + nx],
                                h[k + nx + 1],
                                has_anti,
                                a,
                                i,
                                j,
                                U0,
                                V0,
                                oz,
                                du,
                                dv,
                                dz,
                                ta,
                                tb,
                                tol,
                            )
                        if found:
                            break
                        if cbx <= cby:
                            i += sx
                        else:
                            j += sy
                        ta = tb
                        if tb >= tf:
                            break
                    if found:
                        cell_i = i
                        cell_j = j
                        break
                if not (te < t1):
                    break
                if tbx <= tby:
                    Ib += sx * BLOCK
                else:
                    Jb += sy * BLOCK
                tc = te
            if cell_i < 0:
                t = np.inf
                grad_u = 0.0
                grad_v = 0.0
        # -- Heightfield._normal, and the side walls -------------------------------------
        normal_u = -grad_u / dx
        normal_v = -grad_v / dy
        length = math.sqrt(normal_u * normal_u + normal_v * normal_v + 1.0)
        n_x, n_y, n_z = normal_u / length, normal_v / length, 1.0 / length
        if t == t0 and (face == 1 or face == 2):
            n_x = -np.sign(ex[row]) if face == 1 else 0.0
            n_y = -np.sign(ey[row]) if face == 2 else 0.0
            n_z = 0.0
        distance[row] = t
        normal[0, row] = n_x
        normal[1, row] = n_y
        normal[2, row] = n_z
        cell[row, 0] = cell_i
        cell[row, 1] = cell_j


@njit(parallel=True, **_OPTIONS)
def _cast_parallel(ox, oy, oz, ex, ey, ez, limit, field, distance, normal, cell):
    n = ox.shape[0]
    pieces = (n + PIECE - 1) // PIECE
    for piece in prange(pieces):
        start = piece * PIECE
        _trace_rows(
            start,
            min(start + PIECE, n),
            ox,
            oy,
            oz,
            ex,
            ey,
            ez,
            limit,
            field,
            distance,
            normal,
            cell,
        )


@njit(**_OPTIONS)
def _cast_serial(ox, oy, oz, ex, ey, ez, limit, field, distance, normal, cell):
    _trace_rows(0, ox.shape[0], ox, oy, oz, ex, ey, ez, limit, field, distance, normal, cell)


def _pack(levels):
    """Hierarchy levels [(size, flat nodes, stride), ...] as flat arrays: every level's
    nodes one after another (no copy for a single level), and per level its offset, node
    count, stride and size."""
    nodes = levels[0][1] if len(levels) == 1 else np.concatenate([n for _, n, _ in levels])
    counts = np.array([n.shape[0] for _, n, _ in levels], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    strides = np.array([s for _, _, s in levels], dtype=np.int64)
    sizes = np.array([s for s, _, _ in levels], dtype=np.float64)
    return np.ascontiguousarray(nodes, dtype=np.float64), offsets, counts, strides, sizes


def prepare(field):
    """The field in the kernel's form, a tuple (cached on the field): grid placement and
    size, heights, diagonals, surface, height range, tolerance, then the skip pyramid,
    the block maxima and the cell-level skips of Heightfield.hierarchy, unchanged."""
    data = getattr(field, "_kernel_data", None)
    if data is None:
        block_max, reach, inner_reach = field.hierarchy
        ny, nx = field.heights.shape
        anti = field._anti
        data = (
            float(field.origin[0]),  # 0
            float(field.origin[1]),
            float(field.spacing[0]),
            float(field.spacing[1]),
            int(nx),  # 4
            int(ny),
            np.ascontiguousarray(field._flat),  # 6
            np.zeros(1) if anti is None else np.ascontiguousarray(anti),
            anti is not None,  # 8
            field.surface == "BILINEAR",
            float(field.zmin),  # 10
            float(field.zmax),
            float(field.tolerance),  # 12
            *_pack(reach),  # 13..17
            np.ascontiguousarray(block_max, dtype=np.float64),  # 18
            *_pack(inner_reach),  # 19..23
        )
        field._kernel_data = data
    return data


def intersect(field, origin, direction, max_distance):
    """Heightfield._intersect_components, compiled: origin and direction as lists of three
    1D arrays (unit directions), max_distance (n,) or a scalar. Returns (distance,
    [normal x, y, z], cell (n, 2))."""
    n = origin[0].shape[0]
    distance = np.empty(n)
    normal = np.empty((3, n))
    cell = np.empty((n, 2), dtype=np.int64)
    columns = [np.ascontiguousarray(c, dtype=np.float64) for c in (*origin, *direction)]
    limit = np.ascontiguousarray(np.broadcast_to(max_distance, (n,)), dtype=np.float64)
    kernel = _cast_parallel if n >= PARALLEL_MIN_RAYS else _cast_serial
    kernel(*columns, limit, prepare(field), distance, normal, cell)
    return distance, list(normal), cell
