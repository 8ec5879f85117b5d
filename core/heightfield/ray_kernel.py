"""Compiled ray vs Heightfield (EXACT): the one-ray form of core/heightfield/ (shape.py,
walk.py, surfaces.py), which stays the reference and documents the math.

Per ray, as the reference does for all rays at once: clip to the footprint box, skip by the
max hierarchy (one skip per pyramid level, coarsest first, then FINE_SKIPS at the block
level), walk blocks, and inside each block the ray comes down into, walk cells
Amanatides-Woo (exits recomputed from the integer indices) and test each cell's two
triangles (or its bilinear patch) on the closed stretch of the ray over it, against the
cell's own tolerance. A surface (solid=False) is hit from either side: a ray below it walks
the mirror image (z and the heights negated) with the mirror's hierarchy. Every expression
is the reference's, operand for operand, so both backends give the same bits (float64, no
fastmath: LLVM neither reorders nor fuses), and touching within a tolerance is decided the
same way.

Written like PhysX's traceSegment or MuJoCo's mj_rayHfield: one ray at a time, a few
scalars of state, stopping at the first hit. The whole walk is one function so that no call
inside the loop over rays takes an array (each such call would cost reference counting,
which the threads contend for), compiled per model (``_make_trace``: TRIANGLES or
BILINEAR, solid or surface, ray or segment), each holding only its model's code.

Arguments (Heightfield.kernel_arguments, made by ``arguments``): see ``arguments``.
"""

import math
from typing import Any

import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..kernel_common import (
    INF,
    NAN,
    clamp,
    finite,
    fmax,
    fmin,
    helper,
    maximum,
    minimum,
    normal_to_world,
    segment_blocked,
    segment_ray,
    slab,
    to_local,
    transform,
    unit,
)
from .grid import BLOCK
from .walk import FINE_SKIPS, TINY

# Memory: on a terrain too large for the cache each ray reads a random spot of it. From
# PREFETCH_MIN_CELLS heights the walk asks for what the ray AHEAD rays on will probably
# read (_prefetch_ray); from SORT_MIN_CELLS heights, and SORT_MIN_RAYS rays per thread,
# rays are also traced in the order of the block they start over (_coherent_order).
PREFETCH_MIN_CELLS = 1 << 14
AHEAD = 4
SORT_MIN_CELLS = 1 << 19
SORT_MIN_RAYS = 256


def in_coherent_order(nx, ny, count):
    """Whether ``count`` rays (or sphere casts) on a terrain of nx x ny heights are traced in
    the order of the block they start over (the thresholds above)."""
    return count >= SORT_MIN_RAYS and nx * ny >= SORT_MIN_CELLS


def _prefetch_intrinsic(typingctx, array, index):
    """Ask the CPU to start loading ``array[index]`` into the cache (LLVM's prefetch: read,
    high locality); it never faults and changes no result."""

    def codegen(context, builder, signature, arguments):
        array_type = signature.args[0]
        data = context.make_array(array_type)(context, builder, arguments[0])
        pointer = cgutils.get_item_pointer(
            context, builder, array_type, data, [arguments[1]], wraparound=False
        )
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]),
            "llvm.prefetch.p0",
        )
        flags = [ir.Constant(int32, value) for value in (0, 3, 1)]
        builder.call(function, [builder.bitcast(pointer, byte_pointer), *flags])
        return context.get_dummy_value()

    return types.void(array, index), codegen


_prefetch: Any = intrinsic(_prefetch_intrinsic)  # called as _prefetch(array, index)


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
def _clip_solid(U0, V0, oz, du, dv, dz, limit, nx, ny, zmin, top, slack_x, slack_y):
    """(t0, t1, face) of ray.py's _clip: the stretch in the footprint box under the
    top, and the face entered (0 origin inside, 1 x wall, 2 y wall, 3 top)."""
    enter_x, leave_x = slab(U0, du, 1.0 / du, 0.0, nx - 1.0, slack_x)
    enter_y, leave_y = slab(V0, dv, 1.0 / dv, 0.0, ny - 1.0, slack_y)
    to_top = (top - oz) / dz
    below = oz <= top
    if dz < 0:
        enter_z = to_top
    else:
        enter_z = -INF if below else INF
    if dz > 0:
        leave_z = to_top
    else:
        leave_z = INF if (below or dz < 0) else -INF
    t0 = maximum(maximum(enter_x, enter_y), maximum(enter_z, 0.0))
    t1 = minimum(minimum(leave_x, leave_y), minimum(leave_z, limit))
    to_bottom = (zmin - oz) / dz if dz < 0 else INF
    t1 = minimum(t1, maximum(to_bottom, t0))
    if t0 == 0.0:
        face = 0
    elif t0 == enter_x:
        face = 1
    elif t0 == enter_y:
        face = 2
    else:
        face = 3
    return t0, t1, face


@helper
def _surface_height(h00, h10, h01, h11, anti, bilinear, u, v):
    """Height at (u, v) of a cell (surfaces.surface_at): the bilinear patch, or the
    triangle holding the point (split along u + v = 1 where ``anti``)."""
    if bilinear:
        a, b, c = h10 - h00, h01 - h00, h00 - h10 - h01 + h11
        return h00 + a * u + b * v + c * u * v
    a0 = h10 - h00
    a1 = h11 - h01
    main_b0 = h11 - h10
    main_b1 = h01 - h00
    if anti:
        w = 1.0 - u - v
        b0, b1, c1 = main_b1, main_b0, h01 + h10 - h11
    else:
        w = u - v
        b0, b1, c1 = main_b0, main_b1, h00
    if w >= 0:
        return h00 + a0 * u + b0 * v
    return c1 + a1 * u + b1 * v


@helper
def _cell_tolerance(h00, h10, h01, h11, spacing):
    """The cell's touching tolerance, 2^-40 of its largest |corner height| or the largest
    spacing (grid.tolerances, from the corners at hand: no table to read)."""
    a, b, c, d = abs(h00), abs(h10), abs(h01), abs(h11)
    ab = b if b > a else a  # max(a, b), as Python selects
    cd = d if d > c else c
    magnitude = cd if cd > ab else ab
    magnitude = spacing if spacing > magnitude else magnitude
    return magnitude * 2.0**-40


@helper
def _piece_root(g_start, g_end, start, end, tol, touch_at_start):
    """First point of [start, end] where the linear g is within tol of the surface or
    below it, inf where none (surfaces._piece_root)."""
    if g_start <= 0.0:
        return start
    if g_end < g_start and g_end <= tol:
        return start + (end - start) * minimum(g_start / (g_start - g_end), 1.0)
    if g_start <= tol and touch_at_start:
        return start
    return INF


@helper
def _cell_triangles(h00, h10, h01, h11, tol, anti, a, i, j, U0, V0, oz, du, dv, dz, ta, tb):
    """(hit, t, grad_u, grad_v) of cell (i, j)'s two triangles on [ta, tb]: corner heights
    h00 ... h11, the cell's tolerance, split along u + v = 1 if ``anti`` (``a`` 1.0, else
    0.0) (surfaces.test_triangles, expression for expression)."""
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
    lm = fmin(fmax(-wa / dw, 0.0), lb)
    ga = la - sigma * maximum(wa, 0.0)
    gm = la + slope * lm - sigma * maximum(wa + dw * lm, 0.0)
    gb = la + slope * lb - sigma * maximum(wa + dw * lb, 0.0)
    if not (fmin(fmin(ga, gm), gb) <= tol * (1.0 if lb > 0 else 0.0)):
        return False, 0.0, 0.0, 0.0
    first = _piece_root(ga, gm, 0.0, lm, tol, lm > 0)
    early = first < INF
    distance = first if early else _piece_root(gm, gb, lm, lb, tol, True)
    middle = 0.5 * lm if (early and lm > 0) else 0.5 * (lm + lb)
    on_first = 1.0 if wa + dw * middle > 0 else 0.0
    grad_u = a1 + on_first * sigma * eu
    grad_v = b1 - on_first * sigma
    return True, ta + distance, grad_u, grad_v


@helper
def _cell_bilinear(h00, h10, h01, h11, tol, i, j, U0, V0, oz, du, dv, dz, ta, tb):
    """(hit, t, grad_u, grad_v) of cell (i, j)'s bilinear patch on [ta, tb]
    (surfaces.test_bilinear, expression for expression)."""
    a, b, c = h10 - h00, h01 - h00, (h00 - h10) + (h11 - h01)
    ua = U0 + ta * du - i
    va = V0 + ta * dv - j
    g0 = oz + ta * dz - (h00 + a * ua + b * va + c * ua * va)
    g1 = dz - (a * du + b * dv + c * (ua * dv + va * du))
    g2 = -c * du * dv
    length = tb - ta
    g_end = g0 + length * (g1 + length * g2)
    vertex = fmin(fmax(-g1 / (2.0 * g2), 0.0), length)
    g_vertex = g0 + vertex * (g1 + vertex * g2)
    if not (fmin(fmin(g0, g_end), g_vertex) <= tol * (1.0 if length > 0 else 0.0)):
        return False, 0.0, 0.0, 0.0
    discriminant = g1 * g1 - 4.0 * g2 * g0
    real = discriminant >= 0
    q = -0.5 * (g1 + math.copysign(math.sqrt(maximum(discriminant, 0.0)), g1))
    r1, r2 = q / g2, g0 / q
    if not (real and r1 >= 0 and r1 <= length):
        r1 = INF
    if not (real and r2 >= 0 and r2 <= length):
        r2 = INF
    root = minimum(r1, r2)
    rooted = abs(root) < INF
    if g0 <= 0.0 or (g0 <= tol and (g1 >= 0.0 or not rooted)):
        distance = 0.0
    elif rooted:
        distance = root
    elif g_vertex <= tol:
        distance = vertex
    else:
        distance = length
    u = ua + distance * du
    v = va + distance * dv
    return True, ta + distance, a + c * v, b + c * u


@helper
def _coherent_order(arguments, placement, origins, start, stop):
    """Rays start ... stop - 1 in the order of the block their origin lies over (a
    counting sort): rays traced one after another then read the same heights and
    hierarchy nodes, which stay in the cache, instead of one random spot of a large
    terrain each."""
    x0, y0, dx, dy, nx, ny = arguments[:6]
    nbx = -(-(nx - 1) // BLOCK)
    nby = -(-(ny - 1) // BLOCK)
    count = stop - start
    keys = np.empty(count, dtype=np.int64)
    starts = np.zeros(nbx * nby + 1, dtype=np.int64)
    for r in range(count):
        ox, oy, oz = origins[start + r, 0], origins[start + r, 1], origins[start + r, 2]
        if placement is not None:
            inverse, translation = placement[0], placement[1]
            ox, oy, oz = transform(
                inverse, ox - translation[0], oy - translation[1], oz - translation[2]
            )
        column = (ox - x0) / dx * (1.0 / BLOCK)
        line = (oy - y0) / dy * (1.0 / BLOCK)
        key = 0
        if abs(column) < INF and abs(line) < INF:
            key = np.int64(clamp(line, 0.0, nby - 1.0)) * nbx + np.int64(
                clamp(column, 0.0, nbx - 1.0)
            )
        keys[r] = key
        starts[key + 1] += 1
    for key in range(nbx * nby):
        starts[key + 1] += starts[key]
    order = np.empty(count, dtype=np.int64)
    for r in range(count):
        order[starts[keys[r]]] = start + r
        starts[keys[r]] += 1
    return order


@helper
def _prefetch_ray(
    origins, directions, row, placement, x0, y0, dx, dy, nx, ny, zmin, top, heights, nodes,
    inner_at, inner_stride,
):  # fmt: skip
    """Start loading what ray ``row`` will probably read, a few rays ahead of the walk (on
    a large terrain each ray reads a random spot of it, and the walk would wait for each
    read): the heights and the cell-level skip node where it enters the box top and
    halfway down to the lowest height."""
    ox, oy, oz = origins[row, 0], origins[row, 1], origins[row, 2]
    ex, ey, ez = directions[row, 0], directions[row, 1], directions[row, 2]
    if placement is not None:
        inverse, translation = placement[0], placement[1]
        ox, oy, oz = transform(
            inverse, ox - translation[0], oy - translation[1], oz - translation[2]
        )
        ex, ey, ez = transform(inverse, ex, ey, ez)
    U0 = (ox - x0) / dx
    V0 = (oy - y0) / dy
    du = ex / dx
    dv = ey / dy
    enter = (top - oz) / ez if (ez < 0 and oz > top) else 0.0
    bottom = (zmin - oz) / ez if ez < 0 else enter
    for t in (enter, 0.5 * (enter + bottom)):
        U = U0 + t * du
        V = V0 + t * dv
        if abs(U) < INF and abs(V) < INF:
            i = np.int64(clamp(U, 0.0, nx - 2.0))
            j = np.int64(clamp(V, 0.0, ny - 2.0))
            _prefetch(heights, j * nx + i)
            _prefetch(heights, (j + 1) * nx + i)
            _prefetch(nodes, inner_at + (j + 1) * inner_stride + i + 1)


GROUP = 4  # rays moved on by the hierarchy together (see _make_trace)


@helper
def _skip(
    state, member, skip, tc, reach_first, reach_levels, nodes, node_offset, node_count,
    node_stride, node_size,
):  # fmt: skip
    """Skip ``skip`` of ray ``member`` (walk.start_walk, expression for expression): from
    tc, where it comes down to the max of the node around it, or has travelled the node's
    size (Chebyshev, grid units)."""
    terrain = np.int64(state[member, 12])
    U0, V0, du, dv = state[member, 13], state[member, 14], state[member, 15], state[member, 16]
    dz, wz, t1 = state[member, 17], state[member, 18], state[member, 21]
    inv_dz, inv_chebyshev = state[member, 23], state[member, 24]
    levels = reach_levels[terrain]
    level = reach_first[terrain] + (levels - 1 - skip if skip < levels - 1 else 0)
    size = node_size[level]
    at = minimum(tc, t1)
    k = _node_index(node_count[level], node_stride[level], size, U0 + at * du, V0 + at * dv)
    top = nodes[node_offset[level] + k]
    if dz >= 0:
        down = INF if wz + tc * dz > top else tc
    else:
        down = (top - wz) * inv_dz
    return maximum(tc, minimum(tc + size * inv_chebyshev, down))


# Divisions by zero give inf or NaN as in numpy (the reference divides freely, e.g. by a
# zero direction component) instead of raising; the helpers above are inlined into it.
def _make_trace(bilinear, solid, any_hit):
    """The walk compiled for one model: BILINEAR or TRIANGLES (``bilinear``), solid or surface,
    rays or segments (``any_hit``). The three are constants of the closure, so numba drops
    the branches of the other models before it types the function (its dead-branch pruning)
    and each compiled walk holds only the code its terrain runs."""

    @njit(cache=True, nogil=True, error_model="numpy")
    def trace(arguments, placement, origins, directions, max_distance, out, start, stop):
        """Rays start ... stop - 1, one at a time (ray.py's _intersect for each): returns the
        number of rows with non-finite input or a zero direction.

        ``any_hit``: the rows are segments (``origins`` the starts, ``directions`` the ends,
        ``max_distance[0]`` the fraction trimmed at both ends) and only ``out[0]`` is written,
        True where the segment is blocked (core/reference.py: the ray from the trimmed start
        over the trimmed length, as its numpy reference computes it); the walk is the same,
        it ends at the first cell that meets the segment."""
        x0, y0, dx, dy, nx, ny = arguments[:6]
        heights, spacing, anti_of, has_anti = arguments[6:10]
        zmin, top_above, top_mirror, slack_x, slack_y = arguments[12:17]
        block_max, nodes, node_offset, node_count, node_stride, node_size = arguments[17:23]
        reach_first, reach_levels, inner_first, inner_levels = arguments[23:27]
        cells = nx * ny  # the heights of one terrain (the mirror's follow the terrain's)
        nbx = -(-(nx - 1) // BLOCK)
        nby = -(-(ny - 1) // BLOCK)
        blocks = nbx * nby
        step = 1 if max_distance.shape[0] == origins.shape[0] else 0
        hit = out[0]
        if not any_hit:
            distance, point, normal, cell = out[1], out[2], out[3], out[4]
        prefetching = cells >= PREFETCH_MIN_CELLS
        inner_at = node_offset[inner_first[0]]
        inner_stride = node_stride[inner_first[0]]
        bad = 0
        # Rays go in groups of GROUP: each is set up (clip), then all are moved on by the
        # hierarchy step by step together (_skip: per ray a chain of dependent reads and
        # roundings; the CPU runs the group's chains at once), then each is walked.
        # (One array of state, columns 25 and 26 the skips each ray takes and where they have
        # brought it: each other array would be a compile of np.empty of its own.)
        state = np.empty((GROUP, 27))
        for group_start in range(start, stop, GROUP):
            group = stop - group_start if stop - group_start < GROUP else GROUP
            for member in range(group):
                row = group_start + member
                state[member, 22] = 0.0  # not valid until set up
                if prefetching and not any_hit and row + AHEAD < stop:
                    _prefetch_ray(
                        origins, directions, row + AHEAD, placement, x0, y0, dx, dy, nx, ny,
                        zmin, top_above, heights, nodes, inner_at, inner_stride,
                    )  # fmt: skip
                ox, oy, oz = origins[row, 0], origins[row, 1], origins[row, 2]
                ex, ey, ez = directions[row, 0], directions[row, 1], directions[row, 2]
                segment_length = 1.0
                if any_hit:  # reference.segment_rays, then the trimmed segment as a ray
                    if not (finite(ox, oy, oz) and finite(ex, ey, ez)):
                        bad += 1
                        continue
                    ox, oy, oz, ux, uy, uz, limit, segment_length = segment_ray(
                        ox, oy, oz, ex, ey, ez, max_distance[0], 3
                    )
                else:
                    ux, uy, uz = unit(ex, ey, ez)
                    if not (
                        finite(ox, oy, oz)
                        and finite(ex, ey, ez)
                        and (ex != 0 or ey != 0 or ez != 0)
                    ):
                        bad += 1
                        continue
                    limit = max_distance[row * step]
                lx, ly, lz, lux, luy, luz, stretch = to_local(placement, ox, oy, oz, ux, uy, uz)
                # -- _Rays: grid units -------------------------------------------------------------
                U0 = (lx - x0) / dx
                V0 = (ly - y0) / dy
                du = lux / dx
                dv = luy / dy
                dz = luz
                wz = lz  # the walk's z: negated for a ray below a surface
                terrain = np.int64(0)  # 0: the terrain as given, 1: its mirror image
                face = np.int64(0)
                if solid:
                    t0, t1, face = _clip_solid(
                        U0, V0, lz, du, dv, dz, limit * stretch, nx, ny, zmin, top_above,
                        slack_x, slack_y,
                    )  # fmt: skip
                else:  # ray.py's _cast_surface: the footprint between the mirror's and our tops
                    enter_x, leave_x = slab(U0, du, 1.0 / du, 0.0, nx - 1.0, slack_x)
                    enter_y, leave_y = slab(V0, dv, 1.0 / dv, 0.0, ny - 1.0, slack_y)
                    enter_z, leave_z = slab(lz, dz, 1.0 / dz, -top_mirror, top_above, 0.0)
                    t0 = maximum(maximum(enter_x, enter_y), maximum(enter_z, 0.0))
                    t1 = minimum(minimum(leave_x, leave_y), minimum(leave_z, limit * stretch))
                    below = dz > 0
                    if t0 <= t1 and not (t0 == enter_z and enter_z > 0):
                        U = U0 + t0 * du
                        V = V0 + t0 * dv
                        i = np.int64(clamp(np.floor(U), 0.0, nx - 2.0))
                        j = np.int64(clamp(np.floor(V), 0.0, ny - 2.0))
                        k = j * nx + i
                        anti = has_anti and anti_of[j * (nx - 1) + i] > 0
                        h = _surface_height(
                            heights[k], heights[k + 1], heights[k + nx], heights[k + nx + 1],
                            anti, bilinear, U - i, V - j,
                        )  # fmt: skip
                        below = lz + t0 * dz < h
                    if below:
                        terrain = np.int64(1)
                        wz = -lz
                        dz = -dz
                # the ray's set-up, for the skips and the walk below (column 22: valid)
                state[member, 0] = ox
                state[member, 1] = oy
                state[member, 2] = oz
                state[member, 3] = ux
                state[member, 4] = uy
                state[member, 5] = uz
                state[member, 6] = lux
                state[member, 7] = luy
                state[member, 8] = luz
                state[member, 9] = limit
                state[member, 10] = segment_length
                state[member, 11] = stretch
                state[member, 12] = float(terrain)
                state[member, 13] = U0
                state[member, 14] = V0
                state[member, 15] = du
                state[member, 16] = dv
                state[member, 17] = dz
                state[member, 18] = wz
                state[member, 19] = float(face)
                state[member, 20] = t0
                state[member, 21] = t1
                state[member, 22] = 1.0
                if t0 <= t1:
                    state[member, 23] = 1.0 / dz if dz < 0 else 0.0
                    state[member, 24] = (1.0 - 1e-9) / maximum(abs(du), abs(dv))
            # -- walk.start_walk: one skip per pyramid level, coarsest first, the group's rays
            # step by step together --------------------------------------------------------------
            # (none for a ray not set up or whose clipped stretch is empty)
            most = 0
            for member in range(group):
                skips = 0
                if state[member, 22] != 0.0 and state[member, 20] <= state[member, 21]:
                    skips = reach_levels[np.int64(state[member, 12])] - 1 + FINE_SKIPS
                state[member, 25] = skips
                state[member, 26] = state[member, 20]
                most = skips if skips > most else most
            for skip in range(most):
                for member in range(group):
                    if skip < state[member, 25]:
                        state[member, 26] = _skip(
                            state, member, skip, state[member, 26], reach_first, reach_levels,
                            nodes, node_offset, node_count, node_stride, node_size,
                        )  # fmt: skip
            for member in range(group):
                if state[member, 22] == 0.0:
                    continue
                row = group_start + member
                ox, oy, oz = state[member, 0], state[member, 1], state[member, 2]
                ux, uy, uz = state[member, 3], state[member, 4], state[member, 5]
                lux, luy, luz = state[member, 6], state[member, 7], state[member, 8]
                limit, segment_length, stretch = (
                    state[member, 9],
                    state[member, 10],
                    state[member, 11],
                )
                terrain = np.int64(state[member, 12])
                U0, V0 = state[member, 13], state[member, 14]
                du, dv = state[member, 15], state[member, 16]
                dz, wz, face = state[member, 17], state[member, 18], np.int64(state[member, 19])
                t0, t1 = state[member, 20], state[member, 21]
                tc = state[member, 26]
                t = INF
                grad_u = 0.0
                grad_v = 0.0
                cell_i = np.int64(-1)
                cell_j = np.int64(-1)
                if t0 <= t1 and tc <= t1:
                    # -- walk.walk: blocks, then the cells of each block the ray comes down into
                    # Rays parallel to grid lines: +-TINY toward the middle (see walk.start_walk).
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
                    # 1 / dz for descending rays, else 0, as walk._enter_block
                    negative = 0.0 if 0.0 < dz else dz  # min(dz, 0.0)
                    inv_dz = negative / (negative * negative + (1.0 if dz >= 0 else 0.0))
                    inv_chebyshev = (1.0 - 1e-9) / maximum(abs(du), abs(dv))
                    heights_at = terrain * cells
                    blocks_at = terrain * blocks
                    inner = inner_first[terrain]
                    inner_end = inner + inner_levels[terrain]
                    column = np.floor((U0 + tc * du) * (1.0 / BLOCK))
                    line = np.floor((V0 + tc * dv) * (1.0 / BLOCK))
                    walking = abs(column) < INF and abs(line) < INF
                    Ib = np.int64(clamp(column, 0.0, nbx - 1.0)) * BLOCK if walking else 0
                    Jb = np.int64(clamp(line, 0.0, nby - 1.0)) * BLOCK if walking else 0
                    while walking:
                        # -- one block ----------------------------------------------------------
                        tbx = (Ib + px * BLOCK - U0) * inv_du
                        tby = (Jb + py * BLOCK - V0) * inv_dv
                        te = maximum(minimum(minimum(tbx, tby), t1), tc)
                        zlow = wz + minimum(tc * dz, te * dz)
                        block = (Jb // BLOCK) * nbx + Ib // BLOCK
                        block = 0 if 0 > block else block  # min(max(block, 0), blocks - 1)
                        block = blocks - 1 if blocks - 1 < block else block
                        top = block_max[blocks_at + block]
                        if zlow <= top:  # block tops include the cells' tolerances
                            # -- walk._enter_block: from where the ray comes down to the block max
                            to_top = (top - wz) / dz
                            ta = fmax(tc, to_top) if dz < 0 else tc
                            tf = minimum(te, to_top) if dz > 0 else te
                            ta = minimum(ta, tf)
                            for level in range(inner, inner_end):
                                size = node_size[level]
                                k = _node_index(
                                    node_count[level],
                                    node_stride[level],
                                    size,
                                    U0 + ta * du,
                                    V0 + ta * dv,
                                )
                                node = nodes[node_offset[level] + k]
                                ta = maximum(
                                    ta, minimum(ta + size * inv_chebyshev, (node - wz) * inv_dz)
                                )
                            ta = minimum(ta, tf)
                            column = np.floor(U0 + ta * du)
                            line = np.floor(V0 + ta * dv)
                            if not (abs(column) < INF and abs(line) < INF):
                                break
                            last_i = nx - 1 if nx - 1 < Ib + BLOCK else Ib + BLOCK
                            last_j = ny - 1 if ny - 1 < Jb + BLOCK else Jb + BLOCK
                            i = np.int64(clamp(column, float(Ib), float(last_i - 1)))
                            j = np.int64(clamp(line, float(Jb), float(last_j - 1)))
                            # -- its cells, Amanatides-Woo, exits from the integer indices -------
                            found = False
                            while True:
                                cbx = (i + px - U0) * inv_du
                                cby = (j + py - V0) * inv_dv
                                tb = maximum(minimum(minimum(cbx, cby), tf), ta)
                                corner = heights_at + j * nx + i
                                h00, h10 = heights[corner], heights[corner + 1]
                                h01, h11 = heights[corner + nx], heights[corner + nx + 1]
                                tol = _cell_tolerance(h00, h10, h01, h11, spacing)
                                if bilinear:
                                    found, t, grad_u, grad_v = _cell_bilinear(
                                    h00, h10, h01, h11, tol,
                                    i, j, U0, V0, wz, du, dv, dz, ta, tb,
                                )  # fmt: skip
                                else:
                                    a = anti_of[j * (nx - 1) + i] if has_anti else 0.0
                                    found, t, grad_u, grad_v = _cell_triangles(
                                    h00, h10, h01, h11, tol, has_anti, a,
                                    i, j, U0, V0, wz, du, dv, dz, ta, tb,
                                )  # fmt: skip
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
                        t = INF
                        grad_u = 0.0
                        grad_v = 0.0
                    elif terrain == 1:  # the mirror's gradients, back to the terrain's
                        grad_u = -grad_u
                        grad_v = -grad_v
                if any_hit:  # blocked: a hit within the trimmed segment (a point: inside a solid)
                    hit[row] = segment_blocked(t / stretch, limit, segment_length, solid)
                    continue
                # -- Heightfield._normal; a solid's side walls, a surface's side facing the ray --
                normal_u = -grad_u / dx
                normal_v = -grad_v / dy
                length = math.sqrt(normal_u * normal_u + normal_v * normal_v + 1.0)
                nx_, ny_, nz_ = normal_u / length, normal_v / length, 1.0 / length
                if solid:
                    if t == t0 and (face == 1 or face == 2):
                        nx_ = -np.sign(du) if face == 1 else 0.0
                        ny_ = -np.sign(dv) if face == 2 else 0.0
                        nz_ = 0.0
                elif nx_ * lux + ny_ * luy + nz_ * luz > 0.0:
                    nx_, ny_, nz_ = -nx_, -ny_, -nz_
                nx_, ny_, nz_ = normal_to_world(placement, nx_, ny_, nz_)
                # The result as kernel_common.write_ray_hits writes it: a hit for 0 <= t <= limit;
                # at t = 0 a solid's normal is -direction, a surface keeps its own.
                t = t / stretch
                found = t <= limit and t < INF
                if found and t == 0.0 and solid:
                    nx_, ny_, nz_ = -ux, -uy, -uz
                gate = 1.0 if found else NAN
                t = t if found else INF
                hit[row] = found
                distance[row] = t
                point[row, 0] = ox + (t * gate) * ux
                point[row, 1] = oy + (t * gate) * uy
                point[row, 2] = oz + (t * gate) * uz
                normal[row, 0] = nx_ * gate
                normal[row, 1] = ny_ * gate
                normal[row, 2] = nz_ * gate
                cell[row, 0] = cell_i if found else -1
                cell[row, 1] = cell_j if found else -1
        return bad

    return trace


# Every model's walk (compiled on its first call): (bilinear, solid, any_hit) -> kernel.
_TRACES = {
    (bilinear, solid, any_hit): _make_trace(bilinear, solid, any_hit)
    for bilinear in (False, True)
    for solid in (False, True)
    for any_hit in (False, True)
}


# -- the field in the kernel's form --------------------------------------------------------


def _levels(hierarchies, which):
    """Skip levels (size, nodes, stride) of one or two terrains' hierarchies (``which``:
    1 for the pyramid, 2 for the cell-level skips) in one list, and per terrain its first
    level and level count."""
    levels: list = []
    first: list = []
    count: list = []
    for hierarchy in hierarchies:
        first.append(len(levels))
        count.append(len(hierarchy[which]))
        levels.extend(hierarchy[which])
    return levels, np.array(first, dtype=np.int64), np.array(count, dtype=np.int64)


def arguments(field):
    """The tuple of Heightfield.kernel_arguments: placement and size of the grid
    (x0, y0, dx, dy, nx, ny); heights (flat, the mirror's heights after them for a
    surface), the largest spacing (for the cells' tolerances), diagonals (1.0 where
    anti), has diagonals, BILINEAR, solid; zmin, the terrain's and the mirror's top, the
    footprint slack in x and y; block maxima (the mirror's after them); the skip levels of
    both hierarchies as one flat array of nodes with per-level offset, count, stride and
    size; per terrain its first pyramid level and count, and its first cell-skip level
    and count. The arrays are the reference's own (grid.Terrain), joined only for a surface."""
    terrains = [field._above] if field.solid else [field._above, field._mirror]
    hierarchies = [terrain.hierarchy for terrain in terrains]
    reach, reach_first, reach_levels = _levels(hierarchies, 1)
    inner, inner_first, inner_levels = _levels(hierarchies, 2)
    levels = reach + inner
    inner_first = inner_first + len(reach)
    counts = np.array([nodes.shape[0] for _, nodes, _ in levels], dtype=np.int64)
    ny, nx = field.heights.shape
    anti = field._anti
    return (
        float(field.origin[0]),
        float(field.origin[1]),
        float(field.spacing[0]),
        float(field.spacing[1]),
        int(nx),
        int(ny),
        _joined([terrain.flat for terrain in terrains]),
        float(max(field.spacing)),
        _read_only(np.zeros(1) if anti is None else anti),
        anti is not None,
        field.surface == "BILINEAR",
        field.solid,
        float(field.zmin),
        float(field._above.top),
        0.0 if field.solid else float(field._mirror.top),
        float(field._edge_slack[0]),
        float(field._edge_slack[1]),
        _joined([hierarchy[0] for hierarchy in hierarchies]),
        _joined([nodes for _, nodes, _ in levels]),
        _read_only(np.concatenate(([0], np.cumsum(counts)[:-1])), np.int64),
        _read_only(counts, np.int64),
        _read_only([stride for _, _, stride in levels], np.int64),
        _read_only([size for size, _, _ in levels]),
        _read_only(reach_first, np.int64),
        _read_only(reach_levels, np.int64),
        _read_only(inner_first, np.int64),
        _read_only(inner_levels, np.int64),
    )


def _joined(arrays):
    """One contiguous float64 array of ``arrays`` end to end (no copy for one)."""
    if len(arrays) == 1:
        return _read_only(arrays[0])
    return _read_only(np.concatenate(arrays))


def _read_only(array, dtype=np.float64):
    """A read-only view: the kernel's arguments have one type whether an array is the
    reference's own (read-only heights) or made here (or made read-only by its owner
    later), so the kernel compiles once."""
    view = np.ascontiguousarray(array, dtype=dtype).view()
    view.setflags(write=False)
    return view


def _trace(arguments, any_hit):
    """The compiled walk for the terrain of ``arguments`` (its model: BILINEAR, solid) and
    the query (``any_hit``: occluded)."""
    return _TRACES[(arguments[10], arguments[11], any_hit)]


def raycast(arguments, placement, origins, directions, max_distance, out, start, stop):
    """Rays start ... stop - 1 (see core/backend.py): traced by the terrain's walk in their
    order, or on a large terrain in the order of the block they start over (_ordered_rays,
    then the walk on the gathered rays, then _scatter_hits). Plain Python choosing between
    kernels, so that the first query on a small terrain compiles only its walk."""
    trace = _trace(arguments, False)
    nx, ny = arguments[4], arguments[5]
    if not in_coherent_order(nx, ny, stop - start):
        return trace(arguments, placement, origins, directions, max_distance, out, start, stop)
    order, ordered_origins, ordered_directions, limits = _ordered_rays(
        arguments, placement, origins, directions, max_distance, start, stop
    )
    count = stop - start
    results = (
        np.empty(count, dtype=np.bool_),
        np.empty(count),
        np.empty((count, 3)),
        np.empty((count, 3)),
        np.empty((count, 2), dtype=np.int64),
    )
    bad = trace(
        arguments, placement, ordered_origins, ordered_directions, limits, results, 0, count
    )
    _scatter_hits(order, results, out)
    return bad


@njit(cache=True, nogil=True, error_model="numpy")
def _ordered_rays(arguments, placement, origins, directions, max_distance, start, stop):
    """Rays start ... stop - 1 in the order of the block they start over (_coherent_order),
    so that rays traced one after another read the same heights and nodes from the cache
    instead of one random spot of the terrain each: the order, and the rays and limits
    gathered into it (in short loops of their own, whose memory accesses overlap; inside
    the long walk they would wait one by one). The gathered arrays have the types the
    drivers pass (core/backend.py), so the walk compiles once for both orders. The sphere
    casts gather theirs with it too (cast_kernel.py: starts, ends, radii)."""
    count = stop - start
    per_ray = max_distance.shape[0] == origins.shape[0]
    order = _coherent_order(arguments, placement, origins, start, stop)
    ordered_origins = np.empty((count, 3))
    ordered_directions = np.empty((count, 3))
    limits = np.empty(count if per_ray else 1)
    if not per_ray:
        limits[0] = max_distance[0]
    for k in range(count):
        row = order[k]
        for axis in range(3):
            ordered_origins[k, axis] = origins[row, axis]
            ordered_directions[k, axis] = directions[row, axis]
        if per_ray:
            limits[k] = max_distance[row]
    return order, ordered_origins, ordered_directions, limits


@njit(cache=True, nogil=True, error_model="numpy")
def _scatter_hits(order, results, out):
    """The walk's results of the rays in ``order`` back to their own rows of ``out``."""
    hit, distance, point, normal, cell = out
    for k in range(order.shape[0]):
        row = order[k]
        hit[row] = results[0][k]
        distance[row] = results[1][k]
        for axis in range(3):
            point[row, axis] = results[2][k, axis]
            normal[row, axis] = results[3][k, axis]
        cell[row, 0] = results[4][k, 0]
        cell[row, 1] = results[4][k, 1]


def occluded(arguments, placement, starts, ends, trim, out, start, stop):
    """Segments start ... stop - 1 (see backend.py and queries.py): out[0][row]
    True where the terrain meets the segment, trimmed by ``trim[0]`` of its length at both
    ends: the terrain's any-hit walk, which stops at the first cell that meets it and
    writes nothing but the flag."""
    trace = _trace(arguments, True)
    return trace(arguments, placement, starts, ends, trim, out, start, stop)
