"""The cylinder's rim tori for the compiled sphere cast (cast_kernel.py): cast.py's
_torus_entry and _newton for one cast, and the open tube's whole path (_tube_entry). A
torus's convex pieces become jobs, solved together per block of casts by Newton steps
(newton_step, in cast_kernel.sphere_cast's sweeps); its concave pieces are solved where
they are found (concave_piece).

The jobs live in their own rows of the block (``jobs``: cast_kernel.py's block below its
casts' rows), one column per convex piece.
"""

import numpy as np

from ..kernel_common import INF, NAN, fmax, fmin, helper, maximum, minimum, slab
from .cast import EPSILON, NEWTON_STEPS

# Rows of the jobs, one column per convex piece to solve (up to 4 per cast, the tube's two
# rims cut in pieces): the torus function's coefficients (torus_function), the tolerance,
# the piece's end, Newton's t, the answer, the jobs still going on (their order), the cast
# owning the job and whether the job is still going on.
J_CLOSEST, J_A2, J_B2, J_ZETA0, J_DZ, J_REACH2, J_TOLERANCE = range(7)
J_HIGH, J_T, J_FOUND, J_LIST, J_OWNER, J_GOING, JOB_ROWS = range(7, 14)

# Newton sweeps over every job of a block, in SIMD, before the jobs still going on are
# listed: most converge within these (a few evaluations per job on bench_casts' lines).
DENSE_SWEEPS = 5


@helper
def radial_interval(closest, inverse_speed_squared, miss_squared, along_axis, radius):
    """_Line.radial_interval: [enter, leave] within ``radius`` of the axis; NaN where
    never, +-inf for a line along the axis within it."""
    half = np.sqrt((radius * radius - miss_squared) * inverse_speed_squared)
    if along_axis and half >= 0.0:
        return -INF, INF
    return closest - half, closest + half


@helper
def cast_line(x0, y0, dx, dy):
    """The radial part of the line (cast._Line): closest approach to the axis,
    a^2 (radial speed squared), b^2 (miss distance squared), 1 / a^2."""
    a2 = dx * dx + dy * dy
    inverse_speed_squared = 1.0 / (a2 if a2 > 1e-300 else 1e-300)
    closest = -(x0 * dx + y0 * dy) * inverse_speed_squared
    px, py = x0 + closest * dx, y0 + closest * dy
    return closest, a2, px * px + py * py, inverse_speed_squared


@helper
def torus_function(t, closest, a2, b2, zeta0, dz, reach_squared, r):
    """F(t) = (rho - r)^2 + zeta^2 - R^2 and the Newton step F / F' (one division:
    cast._torus_function)."""
    s = t - closest
    a2s = a2 * s
    rho = np.sqrt(a2s * s + b2)
    off = rho - r
    zeta = zeta0 + t * dz
    f = off * off + zeta * zeta - reach_squared
    rho = rho + 1e-300
    return f, (f * rho) / (2.0 * (off * a2s + zeta * dz * rho))


@helper
def concave_piece(closest, a2, b2, zeta0, dz, reach_squared, tolerance, r, low, high):
    """The first root of F in the concave piece [low, high], inf where none: cast.py's
    _torus_entry for one concave piece, then its _newton for one row (leftward from the
    right end, where F <= 0; a stall from rounding is inside, a hair past the root). The
    convex pieces are the block's jobs (sphere_cast)."""
    f, step = torus_function(low, closest, a2, b2, zeta0, dz, reach_squared, r)
    if f <= tolerance:
        return low
    if not f > tolerance:
        return INF
    # Positive at its left end, a concave piece has a root only if F(high) <= 0.
    f, step = torus_function(high, closest, a2, b2, zeta0, dz, reach_squared, r)
    if not f <= tolerance:
        return INF
    t = high
    for _ in range(NEWTON_STEPS):
        after = t - step
        if f >= -tolerance or not (after < t and after >= low):
            return t
        t = after
        f, step = torus_function(t, closest, a2, b2, zeta0, dz, reach_squared, r)
    return INF


@helper
def torus_entry(x0, y0, z0, dz, rim, r, reach, line, lower, upper, convex, jobs, count, owner):
    """First t in [lower, upper] inside the solid torus around the rim at height ``rim``,
    inf where none (cast._torus_entry for one row), its convex pieces left as
    jobs of the block (add_job: cast ``owner``, the jobs' count ``count`` returned with the
    answer of the concave piece). ``line`` = (closest, a^2, b^2, 1 / a^2)."""
    closest, a2, b2, inverse_speed_squared = line
    size = 2.0 * (abs(x0) + abs(y0) + abs(z0 - rim)) + r + 2.0 * reach
    tolerance = 8.0 * EPSILON * reach * size
    zeta0, reach_squared = z0 - rim, reach * reach
    pieces = 1
    middle_low = middle_high = 0.0
    if not convex and (b2 < r * r * a2 * a2 or b2 == 0.0):
        # The concave middle |s| < s_c where rho^3 < r a^2 b^2; only a stretch reaching
        # into it is cut in three pieces.
        rho_turn = np.cbrt(r * a2 * b2)
        half = rho_turn * rho_turn - b2
        half = np.sqrt((half if half > 0.0 else 0.0) * inverse_speed_squared)
        middle_low, middle_high = closest - half, closest + half
        if lower < middle_high and upper > middle_low:
            pieces = 3
    found = INF
    for piece in range(pieces):
        low, high = lower, upper
        if pieces == 3:
            if piece == 0:
                high = minimum(upper, middle_low)
            elif piece == 1:
                low, high = maximum(lower, middle_low), minimum(upper, middle_high)
            else:
                low = maximum(lower, middle_high)
        if low <= high:
            convex_piece = pieces == 1 or piece != 1
            if convex_piece:  # solved with the block's other convex pieces
                line = (closest, a2, b2, zeta0, dz, reach_squared, tolerance)
                count = add_job(jobs, count, owner, line, r, low, high)
            else:
                root = concave_piece(
                    closest, a2, b2, zeta0, dz, reach_squared, tolerance, r, low, high
                )
                found = fmin(found, root)
    return found, count


@helper
def tube_entry(
    x0, y0, z0, dz, inverse_dz, parallel, along_axis, r, h, reach, line, lower, jobs, count, owner
):
    """cast._tube_entry for one row: the shell between the end planes skipping the
    hole, or a rim torus crossed before it (its convex pieces left as jobs, torus_entry);
    the answer so far and the jobs' count."""
    closest, _, b2, inverse_speed_squared = line
    outer_enter, outer_leave = radial_interval(
        closest, inverse_speed_squared, b2, along_axis, r + reach
    )
    slab_enter, slab_leave = slab(z0, dz, inverse_dz, 0.0, h, 0.0)
    enter, leave = maximum(outer_enter, slab_enter), minimum(outer_leave, slab_leave)
    hole = maximum(r - reach, 0.0)
    hole_enter, hole_leave = radial_interval(closest, inverse_speed_squared, b2, along_axis, hole)
    if reach >= r or (along_axis and b2 >= hole * hole):
        hole_enter = NAN
    first = fmax(enter, lower)
    if first > hole_enter and first < hole_leave:
        first = hole_leave
    distance = first if enter <= leave and first <= leave else INF
    found = distance
    for rim in range(2):
        low, high = (-reach, 0.0) if rim == 0 else (h, h + reach)
        layer_enter, layer_leave = slab(z0, dz, inverse_dz, low, high, 0.0)
        start = fmax(maximum(outer_enter, layer_enter), lower)
        stop = fmin(minimum(outer_leave, layer_leave), distance)
        if start < stop and not (start > hole_enter and stop < hole_leave):
            convex = rim != rim  # (False; a variable like the solid's, one torus_entry)
            rim_found, count = torus_entry(
                x0,
                y0,
                z0,
                dz,
                0.0 if rim == 0 else h,
                r,
                reach,
                line,
                start,
                stop,
                convex,
                jobs,
                count,
                owner,
            )
            found = fmin(found, rim_found)
    return found, count


@helper
def add_job(jobs, count, owner, line, r, low, high):
    """A convex piece [low, high] of a rim torus of cast ``owner`` as job ``count`` of the
    block's jobs; the jobs' count. ``line`` = (closest, a^2, b^2, zeta0, dz, R^2, tolerance)."""
    closest, a2, b2, zeta0, dz, reach_squared, tolerance = line
    jobs[J_CLOSEST, count], jobs[J_A2, count], jobs[J_B2, count] = closest, a2, b2
    jobs[J_ZETA0, count], jobs[J_DZ, count] = zeta0, dz
    jobs[J_REACH2, count], jobs[J_TOLERANCE, count] = reach_squared, tolerance
    jobs[J_HIGH, count], jobs[J_OWNER, count], jobs[J_LIST, count] = high, owner, count
    jobs[J_T, count] = low
    return count + 1


@helper
def newton_step(jobs, k, r):
    """One iteration of cast._newton on job ``k`` (a convex piece): its t, the next t, and
    whether t is the root (F within the tolerance), whether the step stays in the piece
    (moving right: a convex piece's slope still points down) and whether it lands on the
    root (F'' <= 2: a step of length s lands where 0 <= F <= s^2)."""
    t, tolerance = jobs[J_T, k], jobs[J_TOLERANCE, k]
    f, step = torus_function(
        t,
        jobs[J_CLOSEST, k],
        jobs[J_A2, k],
        jobs[J_B2, k],
        jobs[J_ZETA0, k],
        jobs[J_DZ, k],
        jobs[J_REACH2, k],
        r,
    )
    after = t - step
    done = f <= tolerance
    moving = (after > t) & (after <= jobs[J_HIGH, k])
    landed = moving & (step * step <= tolerance)
    return t, after, done, landed, moving
