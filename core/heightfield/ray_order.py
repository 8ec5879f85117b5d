"""Memory for the compiled terrain walks (ray_kernel.py, cast_kernel.py): on a terrain too
large for the cache each ray reads a random spot of it, and the walk waits for each read.
From PREFETCH_MIN_CELLS heights the walk asks for what the ray AHEAD rays on will probably
read (_prefetch_ray); from SORT_MIN_CELLS heights, and SORT_MIN_RAYS rays per thread, rays
are also traced in the order of the block they start over (_ordered_rays, then the walk,
then _scatter_hits), so that rays traced one after another read the same heights and
hierarchy nodes from the cache. Neither changes an answer.
"""

from typing import Any

import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..kernel_common import INF, clamp, helper, transform
from .grid import BLOCK

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
def _prefetch_ray(arguments, placement, origins, directions, row):
    """Start loading what ray ``row`` will probably read, a few rays ahead of the walk: the
    heights and the cell-level skip node where it enters the box top and halfway down to
    the lowest height (``arguments``: ray_arguments.RayArguments)."""
    x0, y0, dx, dy = arguments.x0, arguments.y0, arguments.dx, arguments.dy
    nx, ny, heights, nodes = arguments.nx, arguments.ny, arguments.heights, arguments.nodes
    inner = arguments.inner_first[0]
    inner_at = arguments.node_offset[inner]
    inner_stride = arguments.node_stride[inner]
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
    top = arguments.top_above
    enter = (top - oz) / ez if (ez < 0 and oz > top) else 0.0
    bottom = (arguments.zmin - oz) / ez if ez < 0 else enter
    for t in (enter, 0.5 * (enter + bottom)):
        U = U0 + t * du
        V = V0 + t * dv
        if abs(U) < INF and abs(V) < INF:
            i = np.int64(clamp(U, 0.0, nx - 2.0))
            j = np.int64(clamp(V, 0.0, ny - 2.0))
            _prefetch(heights, j * nx + i)
            _prefetch(heights, (j + 1) * nx + i)
            _prefetch(nodes, inner_at + (j + 1) * inner_stride + i + 1)


@helper
def _coherent_order(arguments, placement, origins, start, stop):
    """Rays start ... stop - 1 in the order of the block their origin lies over (a
    counting sort): rays traced one after another then read the same heights and
    hierarchy nodes, which stay in the cache, instead of one random spot of a large
    terrain each."""
    x0, y0, dx, dy = arguments.x0, arguments.y0, arguments.dx, arguments.dy
    nx, ny = arguments.nx, arguments.ny
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
    hit_k, distance_k, point_k, normal_k, cell_k = results
    for k in range(order.shape[0]):
        row = order[k]
        hit[row] = hit_k[k]
        distance[row] = distance_k[k]
        for axis in range(3):
            point[row, axis] = point_k[k, axis]
            normal[row, axis] = normal_k[k, axis]
        cell[row, 0] = cell_k[k, 0]
        cell[row, 1] = cell_k[k, 1]
