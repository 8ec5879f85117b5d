"""The loops of the sphere's and the cylinder's ray and line-of-sight kernels, each around
the shape's one-ray function (``one_ray(arguments, origin, unit direction) -> (t, normal)``
in the shape's local space, passed in: numba compiles the loop with the function it is
given, and LLVM inlines that).

A ray kernel flattens its (N, 3) arrays first (``rows.reshape(rows.size)``, a view: the
helpers take those and index ``3 * j + axis``, a stride LLVM knows, so it turns the copies
between rows and the block into SIMD shuffles, faster than ``rows[begin + j, axis]``; a direct
reshape, not a function of ours: that would be one more to compile) and loops over blocks of
``BLOCK`` rays: ``read_rays`` copies a block's rows into columns, makes the directions unit and
counts bad rays; per ray ``ray_in_block``, ``to_local`` (the shape's local space), the one-ray
function, ``normal_to_world`` and ``keep_hit``; then ``write_ray_hits`` writes the block's
results.
"""

import numpy as np
from numba import njit

from .kernel_common import (
    BLOCK,
    finite,
    keep_hit,
    load,
    normal_to_world,
    ray_in_block,
    read_rays,
    segment_blocked,
    segment_ray,
    to_local,
    write_ray_hits,
)


def loop(function):
    """A loop that a kernel's entry point calls once: inlined by numba (``inline="always"``)
    into that entry point's own code, so LLVM optimizes it once there (as a :func:`helper`
    it is a function of its own, which LLVM optimizes before inlining it and again after:
    a longer first compile). With one call site per kernel, numba processes it once
    either way."""
    # numba's options without a Python wrapper are missing from its type stubs.
    return njit(  # type: ignore[call-overload]
        inline="always", no_cpython_wrapper=True, no_cfunc_wrapper=True, error_model="numpy"
    )(function)


@loop
def ray_blocks(
    one_ray, arguments, solid, placement, origins, directions, max_distance, out, start, stop
):
    """A shape's raycast kernel (module docstring): rays start ... stop - 1 by blocks,
    each through ``one_ray(arguments, origin, unit direction) -> (t, normal)`` in the
    shape's local space; ``solid`` as write_ray_hits takes it. Returns the bad rays."""
    hit, distance, point, normal = out
    origins, directions, point, normal = (
        origins.reshape(origins.size),
        directions.reshape(directions.size),
        point.reshape(point.size),
        normal.reshape(normal.size),
    )
    block = np.empty((11, BLOCK))
    bad = 0
    for begin in range(start, stop, BLOCK):
        count = stop - begin if stop - begin < BLOCK else BLOCK  # no min() to compile
        bad += read_rays(origins, directions, begin, count, block)
        for j in range(count):
            ox, oy, oz, ux, uy, uz = ray_in_block(block, j)
            lx, ly, lz, lux, luy, luz, stretch = to_local(placement, ox, oy, oz, ux, uy, uz)
            t, nx, ny, nz = one_ray(arguments, lx, ly, lz, lux, luy, luz)
            nx, ny, nz = normal_to_world(placement, nx, ny, nz)
            keep_hit(block, j, t / stretch, nx, ny, nz)
        write_ray_hits(block, begin, count, max_distance, solid, hit, distance, point, normal)
    return bad


@loop
def segments_blocked(
    one_ray, arguments, solid, dimension, placement, starts, ends, trim, out, start, stop
):
    """A shape's occluded kernel: segments start ... stop - 1, out[0][i] True where the
    shape meets segment i trimmed by ``trim[0]`` of its length at both ends (segment_ray,
    then ``one_ray`` as for ray_blocks, segment_blocked). Returns the bad segments."""
    (blocked,) = out
    bad = 0
    for i in range(start, stop):
        sx, sy, sz = load(starts, i)
        ex, ey, ez = load(ends, i)
        if not (finite(sx, sy, sz) and finite(ex, ey, ez)):
            bad += 1
            continue
        ox, oy, oz, ux, uy, uz, limit, length = segment_ray(
            sx, sy, sz, ex, ey, ez, trim[0], dimension
        )
        lx, ly, lz, lux, luy, luz, stretch = to_local(placement, ox, oy, oz, ux, uy, uz)
        t = one_ray(arguments, lx, ly, lz, lux, luy, luz)[0]
        blocked[i] = segment_blocked(t / stretch, limit, length, solid)
    return bad
