"""Per-ray helpers of the compiled kernels, the one-ray mirror of core/rays.py and placed.py.

Every kernel works on one ray at a time in 3D: core/rays.py hands 2D rows (a circle's plane)
over with z = 0 and takes the first two columns back, which changes no arithmetic (adding 0
is exact). The helpers repeat the numpy reference's operations in the same order, so both
backends agree to rounding (float64, no fastmath: LLVM may neither reorder nor fuse them).

Helpers are inlined into each kernel (numba IR inlining: measured 30 % less compile time
than separately compiled helpers). A kernel (see sphere.py) loops over its rays
``range(start, stop)``: it reads a ray with ``load``, checks it with ``finite``, makes the
direction unit with ``unit``, moves the ray to the shape's local space with ``to_local``,
calls its own one-ray function, brings the normal back with ``normal_to_world`` and writes
the result with ``store_ray_hit``.
"""

import numpy as np
from numba import njit

INF = np.inf
NAN = np.nan


def placement(placed=None):
    """The kernels' view of a Placed wrapper (None: not placed): (placed, inverse linear,
    translation, linear, uniform scale), as 3D arrays (a 2D placement is embedded with z
    unchanged)."""
    if placed is None:
        identity = np.eye(3)
        return (False, identity, np.zeros(3), identity, 1.0)
    dimension = placed.dimension
    linear = np.eye(3)
    linear[:dimension, :dimension] = placed.linear
    inverse = np.eye(3)
    inverse[:dimension, :dimension] = placed.inverse_linear
    translation = np.zeros(3)
    translation[:dimension] = placed.translation
    scale = placed.uniform_scale if placed.uniform_scale is not None else 0.0
    return (True, inverse, translation, linear, scale)


@njit(inline="always")
def load(rows, i):
    """Row ``i`` of an (N, 3) array as x, y, z."""
    return rows[i, 0], rows[i, 1], rows[i, 2]


@njit(inline="always")
def finite(x, y, z):
    """All three finite (x - x is 0 for a finite x, NaN for inf and NaN; no overflow)."""
    return (x - x) + (y - y) + (z - z) == 0.0


@njit(inline="always")
def unit(x, y, z):
    """The unit vector along (x, y, z), as unit_components: 1/sqrt(x.x) in the normal range,
    scaled by the largest component where x.x under- or overflows; (0, 0, 0) stays 0."""
    length_squared = x * x + y * y + z * z
    if length_squared > 1e-290 and length_squared < 1e290:
        inverse = 1.0 / np.sqrt(length_squared)
        return x * inverse, y * inverse, z * inverse
    return scaled_unit(x, y, z)[:3]


@njit(inline="always")
def scaled_unit(x, y, z):
    """Unit vector and length as unit_rows: divided by the largest component first, so
    nothing under- or overflows; a zero vector gives (0, 0, 0) and length 0."""
    scale = max(abs(x), abs(y), abs(z))
    if scale == 0.0:
        return 0.0, 0.0, 0.0, 0.0
    x, y, z = x / scale, y / scale, z / scale
    length = np.sqrt(x * x + y * y + z * z)
    return x / length, y / length, z / length, length * scale


@njit(inline="always")
def segment_ray(sx, sy, sz, ex, ey, ez, trim_fraction, dimension):
    """occlusion.segment_rays and the trim of occlusion._occluded_part for one segment: the
    ray from the trimmed start, its unit direction (the last axis for a zero-length
    segment), the trimmed length to look along, and the segment's length."""
    ux, uy, uz, length = scaled_unit(ex - sx, ey - sy, ez - sz)
    if length == 0.0:
        ux, uy, uz = 0.0, 0.0, 0.0
        if dimension == 3:
            uz = 1.0
        else:
            uy = 1.0
    trim = trim_fraction * length
    return sx + trim * ux, sy + trim * uy, sz + trim * uz, ux, uy, uz, length - 2.0 * trim, length


@njit(inline="always")
def segment_blocked(t, limit, length, solid):
    """occlusion._occluded_part's answer for a hit distance t (world, inf or NaN for none):
    blocked within the trimmed length; a zero-length segment only inside a solid."""
    blocked = t <= limit and t < INF
    if length == 0.0:
        blocked = blocked and solid and t == 0.0
    return blocked


@njit(inline="always")
def transform(m, x, y, z):
    """``m @ (x, y, z)`` for a 3x3 array, summed left to right as linear_combination."""
    return (
        m[0, 0] * x + m[0, 1] * y + m[0, 2] * z,
        m[1, 0] * x + m[1, 1] * y + m[1, 2] * z,
        m[2, 0] * x + m[2, 1] * y + m[2, 2] * z,
    )


@njit(inline="always")
def transform_transposed(m, x, y, z):
    """``m.T @ (x, y, z)``: how normals go back through the inverse transpose."""
    return (
        m[0, 0] * x + m[1, 0] * y + m[2, 0] * z,
        m[0, 1] * x + m[1, 1] * y + m[2, 1] * z,
        m[0, 2] * x + m[1, 2] * y + m[2, 2] * z,
    )


@njit(inline="always")
def to_local(placement, ox, oy, oz, ux, uy, uz):
    """The ray in the shape's local space: origin, unit direction and the stretch ``s``
    (local distance = s * world distance); unchanged when not placed."""
    if not placement[0]:
        return ox, oy, oz, ux, uy, uz, 1.0
    inverse, translation = placement[1], placement[2]
    lx, ly, lz = transform(inverse, ox - translation[0], oy - translation[1], oz - translation[2])
    dx, dy, dz = transform(inverse, ux, uy, uz)
    stretch = np.sqrt(dx * dx + dy * dy + dz * dz)
    return lx, ly, lz, dx / stretch, dy / stretch, dz / stretch, stretch


@njit(inline="always")
def normal_to_world(placement, nx, ny, nz):
    """A local normal in world space: through the inverse transpose, re-normalized."""
    if not placement[0]:
        return nx, ny, nz
    x, y, z = transform_transposed(placement[1], nx, ny, nz)
    return unit(x, y, z)


@njit(inline="always")
def store_ray_hit(
    hit, distance, point, normal, i, t, nx, ny, nz, ox, oy, oz, ux, uy, uz, limit, solid
):
    """Write ray ``i``'s result: a hit when 0 <= t <= limit (t is inf or NaN for a miss), at
    t = 0 with normal -direction on a solid (a surface keeps its normal); a miss as inf
    distance and NaN point and normal."""
    if t <= limit and t < INF:
        if t == 0.0 and solid:
            nx, ny, nz = -ux, -uy, -uz
        hit[i] = True
        distance[i] = t
        point[i, 0] = ox + t * ux
        point[i, 1] = oy + t * uy
        point[i, 2] = oz + t * uz
        normal[i, 0] = nx
        normal[i, 1] = ny
        normal[i, 2] = nz
    else:
        hit[i] = False
        distance[i] = INF
        point[i, 0] = point[i, 1] = point[i, 2] = NAN
        normal[i, 0] = normal[i, 1] = normal[i, 2] = NAN


@njit(inline="always")
def store_cast_hit(
    hit,
    distance,
    center,
    point,
    normal,
    i,
    t,
    length,
    px,
    py,
    pz,
    nx,
    ny,
    nz,
    sx,
    sy,
    sz,
    ux,
    uy,
    uz,
):
    """Write cast ``i``'s result: a hit when 0 <= t <= length, with the centre at
    start + t * direction; else inf and NaN."""
    if t <= length and t < INF:
        hit[i] = True
        distance[i] = t
        center[i, 0] = sx + t * ux
        center[i, 1] = sy + t * uy
        center[i, 2] = sz + t * uz
        point[i, 0] = px
        point[i, 1] = py
        point[i, 2] = pz
        normal[i, 0] = nx
        normal[i, 1] = ny
        normal[i, 2] = nz
    else:
        hit[i] = False
        distance[i] = INF
        center[i, 0] = center[i, 1] = center[i, 2] = NAN
        point[i, 0] = point[i, 1] = point[i, 2] = NAN
        normal[i, 0] = normal[i, 1] = normal[i, 2] = NAN
