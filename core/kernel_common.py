"""Scalar pieces every compiled kernel shares: the one-ray mirror of the queries' numpy
steps (queries.py, placed.py), the selects standing for numpy's minimum and maximum (one
tie rule), the slab interval and a box's gap, written once.

Every kernel works on one ray at a time in 3D: queries.py hands 2D rows (a circle's plane)
over with z = 0 and takes the first two columns back, which changes no arithmetic (adding 0
is exact). The helpers repeat the numpy reference's operations in the same order (float64,
no fastmath: LLVM may neither reorder nor fuse them), so both backends give the same bits
where the operations are the same (raycast on spheres, circles, cylinders, tubes, once
Placed; a nested Placed is one matrix here and agrees to rounding).

Helpers are compiled as :func:`helper` (LLVM inlines them into each kernel). The blocks of
rays that read_rays, ray_in_block, keep_hit and write_ray_hits work on are described, and
looped over, in kernel_loops.py.
"""

from typing import Any

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

INF = np.inf
NAN = np.nan
BLOCK = 256  # rays per block: its rows stay in the L1 cache


def helper(function):
    """A compiled function that only kernels call, never Python (the way to write every
    per-ray helper, see core/backend.py): compiled once per argument types, without the
    wrappers that would let Python call it (each costs compile time), not cached on its own
    (the kernels calling it are, with its code inside), and inlined by LLVM into each caller
    (``forceinline``: as fast as code written in the loop; calls in the loop would stop
    LLVM's vectorizing), not by numba (``inline="always"`` re-processes the callee at every
    call site: a slower compile for the same time per ray). Never call one from Python: without
    its wrapper that crashes the process (a test calls it from an ``@njit`` function)."""
    # numba's options without a Python wrapper are missing from its type stubs.
    return njit(  # type: ignore[call-overload]
        no_cpython_wrapper=True, no_cfunc_wrapper=True, forceinline=True, error_model="numpy"
    )(function)


def placement(placed=None):
    """The kernels' view of a Placed wrapper: (inverse linear, translation, linear, uniform
    scale or 0), as 3D arrays (a 2D placement is embedded with z unchanged); None when not
    placed, which numba compiles as a kernel of its own without the placement's work."""
    if placed is None:
        return None
    dimension = placed.dimension
    linear = np.eye(3)
    linear[:dimension, :dimension] = placed.linear
    inverse = np.eye(3)
    inverse[:dimension, :dimension] = placed.inverse_linear
    translation = np.zeros(3)
    translation[:dimension] = placed.translation
    scale = placed.uniform_scale if placed.uniform_scale is not None else 0.0
    return (inverse, translation, linear, scale)


def _select(smaller, keep_nan):
    """numpy's NaN rules as a select (no min()/max() to compile per type): the smaller
    (else the larger) of a and b; ``keep_nan``: a NaN operand wins (np.minimum, np.maximum),
    else the other does (np.fmin, np.fmax). One tie rule: on equal operands the first is
    returned. The two flags are constants of the closure: each select keeps only its own
    comparisons."""

    @helper
    def select(a, b):
        first = (a <= b) if smaller else (a >= b)
        nan = (a != a) if keep_nan else (b != b)
        return a if (first or nan) else b

    return select


minimum = _select(smaller=True, keep_nan=True)
maximum = _select(smaller=False, keep_nan=True)
fmin = _select(smaller=True, keep_nan=False)
fmax = _select(smaller=False, keep_nan=False)


@helper
def clamp(x, lo, hi):
    """min(max(x, lo), hi) for floats, as Python (and numba's min and max) select."""
    x = lo if lo > x else x
    return hi if hi < x else x


@helper
def slab(p, d, inverse, low, high, slack):
    """The interval [enter, leave] of t where p + t d lies in [low, high] (``inverse`` =
    1 / d); for d == 0 all t when p is within ``slack`` of [low, high], else none
    (enter > leave)."""
    if d == 0.0:
        if p >= low - slack and p <= high + slack:
            return -INF, INF
        return INF, -INF
    ta = (low - p) * inverse
    tb = (high - p) * inverse
    return minimum(ta, tb), maximum(ta, tb)


@helper
def box_gap_squared(xa, xb, ya, yb, bottom, top, x, y, z):
    """The squared distance from (x, y, z) to the box [xa, xb] x [ya, yb] x [bottom, top]
    (no square root to wait for where it only bounds)."""
    gap_x = maximum(maximum(xa - x, x - xb), 0.0)
    gap_y = maximum(maximum(ya - y, y - yb), 0.0)
    gap_z = maximum(maximum(bottom - z, z - top), 0.0)
    return gap_x * gap_x + gap_y * gap_y + gap_z * gap_z


@helper
def read_block(first, second, begin, count, block):
    """Rows begin..begin+count of two flattened (N, 3) arrays into rows 0-2
    and 3-5 of ``block``, one column per ray: the loop over a block then reads contiguous
    rows, which LLVM turns into SIMD code (faster than reading the (N, 3) rows in it)."""
    first = first[3 * begin : 3 * (begin + count)]
    second = second[3 * begin : 3 * (begin + count)]
    for j in range(count):
        for axis in range(3):
            block[axis, j] = first[3 * j + axis]
            block[3 + axis, j] = second[3 * j + axis]


@helper
def read_rays(origins, directions, begin, count, block):
    """read_block's copy of a block's rays (in the same loop: one function less to compile,
    as fast), the directions (rows 3-5) made unit as core/reference.py's unit_components does,
    bit for bit: x / |x| as x * (1 / sqrt(x.x)), branch-free (SIMD);
    a block with a length out of that formula's range (squared <= 1e-290 or >= 1e290, a
    zero or non-finite direction) is fixed ray by ray afterwards (unit_rows's scaling).
    Returns how many rays are bad (a non-finite origin or direction, a zero direction)."""
    origins = origins[3 * begin : 3 * (begin + count)]
    rows = directions[3 * begin : 3 * (begin + count)]
    bad = 0
    extreme = 0
    for j in range(count):
        ox, oy, oz = origins[3 * j], origins[3 * j + 1], origins[3 * j + 2]
        x, y, z = rows[3 * j], rows[3 * j + 1], rows[3 * j + 2]
        squared = x * x + y * y + z * z
        inverse = 1.0 / np.sqrt(squared)
        block[0, j], block[1, j], block[2, j] = ox, oy, oz
        block[3, j], block[4, j], block[5, j] = x * inverse, y * inverse, z * inverse
        extreme += 0 if squared > 1e-290 and squared < 1e290 else 1
        bad += 0 if finite(ox, oy, oz) else 1
    if extreme:
        bad += unit_extreme_rays(directions, begin, count, block)
    return bad


def rare_helper(function):
    """A :func:`helper` that LLVM does not inline: code that runs rarely (out of the loop's
    way, e.g. read_rays's fix-up of extreme lengths), or whose work dwarfs a call
    (heightfield/cast_cells_kernel.py's nearest point of one cell), called instead, so each kernel's
    module stays small and fast to optimize."""
    # numba's options without a Python wrapper are missing from its type stubs.
    return njit(  # type: ignore[call-overload]
        no_cpython_wrapper=True, no_cfunc_wrapper=True, error_model="numpy"
    )(function)


def _borrowed_intrinsic(typingctx, value_type):
    """``borrowed(value)``: ``value`` (an array, or a tuple or named tuple holding arrays, at
    any depth) with each array a view without its owner (no memory info): numba counts the
    references to an owned array up and down (an atomic operation, which the threads contend
    for) each time a helper taking it is called, and keeps those counts where the helper has
    loops; a view without an owner skips them. It stays valid only while the array itself
    is held by the caller (a kernel's arguments are, for the whole call) and must not
    outlive it (never returned or stored where the array may go)."""

    def codegen(context, builder, signature, arguments):
        return _without_owner(context, builder, signature.args[0], arguments[0])

    return value_type(value_type), codegen


def _without_owner(context, builder, value_type, value):
    """The code of ``borrowed`` for a value of ``value_type``."""
    if isinstance(value_type, types.Array):
        view = context.make_array(value_type)(context, builder, value)
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()
    if isinstance(value_type, types.BaseTuple):
        members: Any = value_type.types  # type: ignore[attr-defined]  # (not in numba's stubs)
        for index, member_type in enumerate(members):
            member = builder.extract_value(value, index)
            member = _without_owner(context, builder, member_type, member)
            value = builder.insert_value(value, member, index)
    return value


borrowed: Any = intrinsic(_borrowed_intrinsic)  # called as borrowed(value)


@rare_helper
def unit_extreme_rays(directions, begin, count, block):
    """read_rays's fix-up of a block with an extreme direction length: those directions
    made unit by unit_rows's scaling (rows 3-5 of ``block``). Returns how many of them
    are bad (a zero or non-finite direction) with a finite origin (read_rays counted the
    others)."""
    bad = 0
    for j in range(count):
        at = 3 * (begin + j)
        x, y, z = directions[at], directions[at + 1], directions[at + 2]
        squared = x * x + y * y + z * z
        if not (squared > 1e-290 and squared < 1e290):
            block[3, j], block[4, j], block[5, j], length = unit_rows(x, y, z)
            valid = finite(x, y, z) and length > 0.0
            bad += 0 if valid or not finite(block[0, j], block[1, j], block[2, j]) else 1
    return bad


@helper
def unit(x, y, z):
    """One direction made unit as core/reference.py's unit_components does, bit for bit (see
    read_rays; the per-ray form, for kernels that walk one ray at a time)."""
    squared = x * x + y * y + z * z
    if squared > 1e-290 and squared < 1e290:
        inverse = 1.0 / np.sqrt(squared)
        return x * inverse, y * inverse, z * inverse
    return unit_rows(x, y, z)[:3]


@helper
def unit_rows(x, y, z):
    """core/reference.py's unit_rows for one row, operation for operation: scaled by the largest
    component (divided), then divided by the length; a zero vector stays 0. Returns the
    unit vector and the length."""
    ax, ay, az = abs(x), abs(y), abs(z)
    scale = ax if ax >= ay else ay  # max(): NaN only where unit_rows gives NaN anyway
    scale = scale if scale >= az else az
    safe = scale if scale > 0.0 else 1.0
    x, y, z = x / safe, y / safe, z / safe
    length = np.sqrt(x * x + y * y + z * z)
    divisor = length if length > 0.0 else 1.0
    return x / divisor, y / divisor, z / divisor, length * scale


@helper
def read_values(values, begin, count, block, row):
    """One value per ray (or one for all, ``values`` of length 1) into ``block[row]``: the
    loop over a block reads them contiguously (an indexed read there stops SIMD)."""
    step = 1 if values.shape[0] > 1 else 0
    for j in range(count):
        block[row, j] = values[(begin + j) * step]


@helper
def finite(x, y, z):
    """All three finite (x - x is 0 for a finite x, NaN for inf and NaN; no overflow)."""
    return (x - x) + (y - y) + (z - z) == 0.0


@helper
def ray_in_block(block, j):
    """Ray ``j`` of a block read by read_rays: origin and unit direction."""
    return block[0, j], block[1, j], block[2, j], block[3, j], block[4, j], block[5, j]


@helper
def keep_hit(block, j, t, nx, ny, nz):
    """Distance and normal of ray ``j`` (rows 6-9) for write_ray_hits."""
    block[6, j], block[7, j], block[8, j], block[9, j] = t, nx, ny, nz


@helper
def scaled_unit(x, y, z):
    """Unit vector and length as unit_rows: scaled by the largest component first, so
    nothing under- or overflows when squared; a zero vector gives (0, 0, 0) and length 0.
    (Multiplied by the reciprocal of the scale, not divided: equal to rounding.) Used for
    every direction: unit_components takes this path only for extreme lengths, but
    branch-free code is what LLVM vectorizes; the two agree to rounding."""
    ax, ay, az = abs(x), abs(y), abs(z)
    scale = ax if ax > ay else ay  # selects, not max(): numba's max() stops SIMD
    scale = scale if scale > az else az
    inverse_scale = 1.0 / scale if scale > 0.0 else 0.0
    x, y, z = x * inverse_scale, y * inverse_scale, z * inverse_scale
    length = np.sqrt(x * x + y * y + z * z)
    inverse = 1.0 / length if length > 0.0 else 0.0
    return x * inverse, y * inverse, z * inverse, length * scale


@helper
def load(rows, i):
    """Row ``i`` of an (N, 3) array as x, y, z (the per-segment kernels of occluded)."""
    return rows[i, 0], rows[i, 1], rows[i, 2]


@helper
def segment_ray(sx, sy, sz, ex, ey, ez, trim_fraction, dimension):
    """core/reference.py's segment_rays and the trim of its _occluded_part for one segment: the
    ray from the trimmed start, its unit direction (the last axis for a zero-length
    segment), the trimmed length to look along, and the segment's length. Divided by the
    scale and the length as segment_rays does (scaled_unit multiplies by reciprocals, which
    agrees only to rounding), so both backends trim the same segment."""
    dx, dy, dz = ex - sx, ey - sy, ez - sz
    ax, ay, az = abs(dx), abs(dy), abs(dz)
    scale = ax if ax > ay else ay
    scale = scale if scale > az else az
    if scale > 0.0:
        dx, dy, dz = dx / scale, dy / scale, dz / scale
    scaled_length = np.sqrt(dx * dx + dy * dy + dz * dz)
    if scaled_length > 0.0:
        ux, uy, uz = dx / scaled_length, dy / scaled_length, dz / scaled_length
    else:
        ux, uy, uz = dx, dy, dz
    length = scaled_length * scale
    if length == 0.0:
        ux, uy, uz = 0.0, 0.0, 0.0
        if dimension == 3:
            uz = 1.0
        else:
            uy = 1.0
    trim = trim_fraction * length
    return sx + trim * ux, sy + trim * uy, sz + trim * uz, ux, uy, uz, length - 2.0 * trim, length


@helper
def segment_blocked(t, limit, length, solid):
    """reference._occluded_part's answer for a hit distance t (world, inf or NaN for none):
    blocked within the trimmed length; a zero-length segment only inside a solid."""
    blocked = t <= limit and t < INF
    if length == 0.0:
        blocked = blocked and solid and t == 0.0
    return blocked


@helper
def transform(m, x, y, z):
    """``m @ (x, y, z)`` for a 3x3 array, summed left to right as linear_combination."""
    return (
        m[0, 0] * x + m[0, 1] * y + m[0, 2] * z,
        m[1, 0] * x + m[1, 1] * y + m[1, 2] * z,
        m[2, 0] * x + m[2, 1] * y + m[2, 2] * z,
    )


@helper
def transform_transposed(m, x, y, z):
    """``m.T @ (x, y, z)``: how normals go back through the inverse transpose."""
    return (
        m[0, 0] * x + m[1, 0] * y + m[2, 0] * z,
        m[0, 1] * x + m[1, 1] * y + m[2, 1] * z,
        m[0, 2] * x + m[1, 2] * y + m[2, 2] * z,
    )


@helper
def to_local(placement, ox, oy, oz, ux, uy, uz):
    """The ray in the shape's local space: origin, unit direction and the stretch ``s``
    (local distance = s * world distance); unchanged when not placed."""
    if placement is None:
        return ox, oy, oz, ux, uy, uz, 1.0
    inverse, translation = placement[0], placement[1]
    lx, ly, lz = transform(inverse, ox - translation[0], oy - translation[1], oz - translation[2])
    dx, dy, dz = transform(inverse, ux, uy, uz)
    stretch = np.sqrt(dx * dx + dy * dy + dz * dz)
    return lx, ly, lz, dx / stretch, dy / stretch, dz / stretch, stretch


@helper
def normal_to_world(placement, nx, ny, nz):
    """A local normal in world space: through the inverse transpose, re-normalized."""
    if placement is None:
        return nx, ny, nz
    x, y, z = transform_transposed(placement[0], nx, ny, nz)
    return unit(x, y, z)


@helper
def cast_to_local(placement, sx, sy, sz, ux, uy, uz, radius):
    """A sphere cast in the local space of a similarity L = k Q (lengths shrink by k): start,
    direction (length 1/k times k: unit), radius; unchanged when not placed."""
    if placement is None:
        return sx, sy, sz, ux, uy, uz, radius
    inverse, translation, k = placement[0], placement[1], placement[3]
    lx, ly, lz = transform(inverse, sx - translation[0], sy - translation[1], sz - translation[2])
    dx, dy, dz = transform(inverse, ux, uy, uz)
    return lx, ly, lz, k * dx, k * dy, k * dz, radius / k


@helper
def cast_to_world(placement, t, px, py, pz, nx, ny, nz):
    """A local contact (travel, point, normal) back in the world."""
    if placement is None:
        return t, px, py, pz, nx, ny, nz
    translation, linear, k = placement[1], placement[2], placement[3]
    px, py, pz = transform(linear, px, py, pz)
    nx, ny, nz = transform(linear, nx, ny, nz)
    return (
        t * k,
        px + translation[0],
        py + translation[1],
        pz + translation[2],
        nx / k,
        ny / k,
        nz / k,
    )


@helper
def write_ray_hits(block, begin, count, max_distance, solid, hit, distance, point, normal):
    """The block's results into the outputs, rays begin..begin+count: a hit when
    0 <= t <= limit (t is inf or NaN for a miss), at t = 0 with normal -direction on a solid
    (a surface keeps its normal); a miss as inf distance and NaN point and normal.
    Branch-free (a gate of 1 or NaN, as core/reference.py): hits and misses mix at random."""
    step = 1 if max_distance.shape[0] > 1 else 0  # read_values's loop (one helper less)
    for j in range(count):
        block[10, j] = max_distance[(begin + j) * step]
    hit = hit[begin : begin + count]
    distance = distance[begin : begin + count]
    point = point[3 * begin : 3 * (begin + count)]
    normal = normal[3 * begin : 3 * (begin + count)]
    for j in range(count):
        t = block[6, j]
        ux, uy, uz = block[3, j], block[4, j], block[5, j]
        nx, ny, nz = block[7, j], block[8, j], block[9, j]
        found = t <= block[10, j] and t < INF
        at_origin = t == 0.0 and solid
        nx, ny, nz = (-ux, -uy, -uz) if at_origin else (nx, ny, nz)
        gate = 1.0 if found else NAN
        t = t if found else INF
        hit[j] = found
        distance[j] = t
        point[3 * j] = block[0, j] + (t * gate) * ux
        point[3 * j + 1] = block[1, j] + (t * gate) * uy
        point[3 * j + 2] = block[2, j] + (t * gate) * uz
        normal[3 * j] = nx * gate
        normal[3 * j + 1] = ny * gate
        normal[3 * j + 2] = nz * gate


@helper
def keep_cast(block, j, t, length, px, py, pz, nx, ny, nz):
    """Centre travel, cast length, contact point and normal of cast ``j`` (rows 6-13)."""
    block[6, j], block[7, j] = t, length
    block[8, j], block[9, j], block[10, j] = px, py, pz
    block[11, j], block[12, j], block[13, j] = nx, ny, nz


@helper
def write_cast(out, row, t, length, sx, sy, sz, ux, uy, uz, px, py, pz, nx, ny, nz):
    """One cast's answer into the outputs ``out`` (hit, distance, center, point, normal),
    for kernels working a cast at a time: a hit when t <= length (t finite), the centre at
    start + t * direction; else inf and NaN. The expressions of write_cast_hits."""
    hit, distance, center, point, normal = out
    found = t <= length and t < INF
    gate = 1.0 if found else NAN
    hit[row] = found
    distance[row] = t if found else INF
    center[row, 0] = sx + (t * gate) * ux
    center[row, 1] = sy + (t * gate) * uy
    center[row, 2] = sz + (t * gate) * uz
    point[row, 0], point[row, 1], point[row, 2] = px * gate, py * gate, pz * gate
    normal[row, 0], normal[row, 1], normal[row, 2] = nx * gate, ny * gate, nz * gate


@helper
def write_cast_hits(block, begin, count, hit, distance, center, point, normal):
    """The block's casts into the outputs: a hit when 0 <= t <= length, with the centre at
    start + t * direction; else inf and NaN. Branch-free like write_ray_hits."""
    hit = hit[begin : begin + count]
    distance = distance[begin : begin + count]
    center = center[3 * begin : 3 * (begin + count)]
    point = point[3 * begin : 3 * (begin + count)]
    normal = normal[3 * begin : 3 * (begin + count)]
    for j in range(count):
        t = block[6, j]
        found = t <= block[7, j] and t < INF
        gate = 1.0 if found else NAN
        hit[j] = found
        distance[j] = t if found else INF
        for axis in range(3):
            center[3 * j + axis] = block[axis, j] + (t * gate) * block[3 + axis, j]
            point[3 * j + axis] = block[8 + axis, j] * gate
            normal[3 * j + axis] = block[11 + axis, j] * gate


@helper
def cast_direction(sx, sy, sz, ex, ey, ez):
    """Unit direction and length of the cast start -> end as core/reference.py's sphere_cast
    takes them (unit_components, then the length as dot(unit, segment)), operand for
    operand: 1/sqrt of the squared length in the normal range, unit_rows's scaling outside
    it (a zero-length cast: direction 0, length 0)."""
    x, y, z = ex - sx, ey - sy, ez - sz
    length_squared = x * x + y * y + z * z
    if length_squared > 1e-290 and length_squared < 1e290:
        inverse = 1.0 / np.sqrt(length_squared)
        ux, uy, uz = x * inverse, y * inverse, z * inverse
    else:
        ax, ay, az = abs(x), abs(y), abs(z)
        scale = ax if ax > ay else ay
        scale = scale if scale > az else az
        scale = scale if scale > 0.0 else 1.0
        ux, uy, uz = x / scale, y / scale, z / scale
        length = np.sqrt(ux * ux + uy * uy + uz * uz)
        length = length if length > 0.0 else 1.0
        ux, uy, uz = ux / length, uy / length, uz / length
    return ux, uy, uz, ux * x + uy * y + uz * z
