"""Compiled sphere cast vs finite cylinder, capped or open: cast.py by blocks of casts (its
docstring has the math: the box's first point when it lies in the Minkowski sum, else the
rim tori by monotone Newton on their convex and concave pieces), operand for operand.

Arguments (Cylinder.kernel_arguments): as ray_kernel.py's.
"""

import numpy as np
from numba import njit

from ..kernel_common import (
    BLOCK,
    INF,
    NAN,
    cast_direction,
    cast_to_local,
    cast_to_world,
    finite,
    fmax,
    fmin,
    helper,
    maximum,
    minimum,
    slab,
    transform,
    transform_transposed,
)
from .cast import EPSILON, NEWTON_STEPS


@helper
def radial_interval(closest, inverse_speed_squared, miss_squared, along_axis, radius):
    """_Line.radial_interval: [enter, leave] within ``radius`` of the axis; NaN where
    never, +-inf for a line along the axis within it."""
    half = np.sqrt((radius * radius - miss_squared) * inverse_speed_squared)
    if along_axis and half >= 0.0:
        return -INF, INF
    return closest - half, closest + half


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
def torus_entry(x0, y0, z0, dz, rim, r, reach, line, lower, upper, convex, block, jobs, owner):
    """First t in [lower, upper] inside the solid torus around the rim at height ``rim``,
    inf where none (cast._torus_entry for one row), its convex pieces left as
    jobs of the block (add_job: cast ``owner``, the jobs' count ``jobs`` returned with the
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
                jobs = add_job(block, jobs, owner, line, r, low, high)
            else:
                root = concave_piece(
                    closest, a2, b2, zeta0, dz, reach_squared, tolerance, r, low, high
                )
                found = fmin(found, root)
    return found, jobs


@helper
def tube_entry(
    x0, y0, z0, dz, inverse_dz, parallel, along_axis, r, h, reach, line, lower, block, jobs, owner
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
            rim_found, jobs = torus_entry(
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
                block,
                jobs,
                owner,
            )
            found = fmin(found, rim_found)
    return found, jobs


@helper
def radial_unit(cx, cy, rho):
    """(cx, cy) / rho, and (1, 0) on the axis."""
    on_axis = rho == 0.0
    scale = 1.0 / (1.0 if on_axis else rho)
    return cx * scale + (1.0 if on_axis else 0.0), cy * scale


@helper
def contact_capped_odd(cx, cy, cz, r, h):
    """cast._contact_capped_odd for one centre, frame coordinates: inside or on
    the solid (the nearest boundary point and its face's normal) or on the axis (radial
    direction (1, 0) of the frame)."""
    rho = np.sqrt(cx * cx + cy * cy)
    ex, ey = radial_unit(cx, cy, rho)
    nearest_rho = minimum(rho, r)
    nearest_z = minimum(maximum(cz, 0.0), h)
    off_radial, off_axial = rho - nearest_rho, cz - nearest_z
    gap = np.sqrt(off_radial * off_radial + off_axial * off_axial)
    inverse_gap = 1.0 / (gap if gap > 0.0 else 1.0)
    normal_radial, normal_axial = off_radial * inverse_gap, off_axial * inverse_gap
    if gap == 0.0:
        to_side, to_bottom, to_top = r - rho, cz, h - cz
        if to_side <= to_bottom and to_side <= to_top:
            nearest_rho, normal_radial = r, 1.0
        elif to_top < to_bottom:
            nearest_z, normal_axial = h, 1.0
        else:
            nearest_z, normal_axial = 0.0, -1.0
    return (
        nearest_rho * ex,
        nearest_rho * ey,
        nearest_z,
        normal_radial * ex,
        normal_radial * ey,
        normal_axial,
    )


@helper
def contact_tube_odd(cx, cy, cz, dx, dy, r, h, reach):
    """cast._contact_tube_odd for one centre, frame coordinates: on the wall (the
    wall's normal facing the cast) or on the axis (radial direction (1, 0) of the frame)."""
    rho = np.sqrt(cx * cx + cy * cy)
    ex, ey = radial_unit(cx, cy, rho)
    nearest_z = minimum(maximum(cz, 0.0), h)
    off_radial, off_axial = rho - r, cz - nearest_z
    gap = np.sqrt(off_radial * off_radial + off_axial * off_axial)
    if gap == 0.0 or reach == 0.0:  # on the wall: the normal faces the cast
        normal_radial = -1.0 if ex * dx + ey * dy > 0.0 else 1.0
        normal_axial = 0.0
    else:
        inverse_gap = 1.0 / gap
        normal_radial, normal_axial = off_radial * inverse_gap, off_axial * inverse_gap
    return r * ex, r * ey, nearest_z, normal_radial * ex, normal_radial * ey, normal_axial


# Rows of a sphere_cast block, one column per cast: the cast in the world (start, unit
# direction, length), its line in the cylinder's frame and the fast path's values, and
# the list of the casts that need a torus.
_SX, _SY, _SZ, _UX, _UY, _UZ, _LENGTH = range(7)
_X0, _Y0, _Z0, _DX, _DY, _DZ, _REACH = range(7, 14)
_T, _FIRST, _LEAVE, _FLAG, _LIST = range(14, 19)


# Rows of the rim-torus jobs in a block (after its casts' rows; up to 4 per cast, the
# tube's two rims cut in pieces), one column per convex piece to solve: the torus
# function's coefficients (torus_function), the tolerance, the piece's end, Newton's t, the
# answer, the jobs still going on (their order) and the cast owning the job.
_J_CLOSEST, _J_A2, _J_B2, _J_ZETA0, _J_DZ, _J_REACH2, _J_TOLERANCE = range(20, 27)
_J_HIGH, _J_T, _J_FOUND, _J_LIST, _J_OWNER, _J_GOING, _BLOCK_ROWS = range(27, 34)

# Newton sweeps over every job of a block, in SIMD, before the jobs still going on are
# listed: most converge within these (a few evaluations per job on bench_casts' lines).
DENSE_SWEEPS = 5


@helper
def add_job(block, jobs, owner, line, r, low, high):
    """A convex piece [low, high] of a rim torus of cast ``owner`` as job ``jobs`` of the
    block; the jobs' count. ``line`` = (closest, a^2, b^2, zeta0, dz, R^2, tolerance)."""
    closest, a2, b2, zeta0, dz, reach_squared, tolerance = line
    block[_J_CLOSEST, jobs], block[_J_A2, jobs], block[_J_B2, jobs] = closest, a2, b2
    block[_J_ZETA0, jobs], block[_J_DZ, jobs] = zeta0, dz
    block[_J_REACH2, jobs], block[_J_TOLERANCE, jobs] = reach_squared, tolerance
    block[_J_HIGH, jobs], block[_J_OWNER, jobs], block[_J_LIST, jobs] = high, owner, jobs
    block[_J_T, jobs] = low
    return jobs + 1


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
def box_entries(p0, frame, h, r, capped, placement, starts, ends, radius, begin, count, block):
    """Casts begin ... begin + count - 1 into a block: the cast (cast_direction's unit
    direction and length, bit for bit), its line in the cylinder's frame
    (cast._Line) and the fast path, the first point of the box rho <= r + R,
    -R <= z <= h + R where it is in M, or for the tube the hole's answer (row _T; inf
    where the line misses the box); row _FLAG 1 where the cast needs the whole path.
    Branch-free (SIMD). Returns how many casts are bad (a non-finite start or end)."""
    starts = starts[3 * begin : 3 * (begin + count)]
    ends = ends[3 * begin : 3 * (begin + count)]
    step = 1 if radius.shape[0] > 1 else 0  # (its own loop: an indexed read stops SIMD)
    for j in range(count):
        block[_REACH, j] = radius[(begin + j) * step]
    bad = 0
    for j in range(count):
        sx, sy, sz = starts[3 * j], starts[3 * j + 1], starts[3 * j + 2]
        ex, ey, ez = ends[3 * j], ends[3 * j + 1], ends[3 * j + 2]
        bad += 0 if finite(sx, sy, sz) & finite(ex, ey, ez) else 1
        ux, uy, uz, length = cast_direction(sx, sy, sz, ex, ey, ez)
        lx, ly, lz, lux, luy, luz, reach = cast_to_local(
            placement, sx, sy, sz, ux, uy, uz, block[_REACH, j]
        )
        x0, y0, z0 = transform(frame, lx - p0[0], ly - p0[1], lz - p0[2])
        dx, dy, dz = transform(frame, lux, luy, luz)
        closest, a2, b2, inverse_speed_squared = cast_line(x0, y0, dx, dy)
        along_axis = a2 == 0.0
        parallel = dz == 0.0
        inverse_dz = 1.0 / (1.0 if parallel else dz)
        outer_enter, outer_leave = radial_interval(
            closest, inverse_speed_squared, b2, along_axis, r + reach
        )
        slab_enter, slab_leave = slab(z0, dz, inverse_dz, -reach, h + reach, 0.0)
        enter, leave = maximum(outer_enter, slab_enter), minimum(outer_leave, slab_leave)
        in_box = (enter <= leave) & (leave >= 0.0)
        first = fmax(enter, 0.0)
        z = z0 + first * dz
        s = first - closest
        rho_squared = a2 * s * s + b2
        between_caps = (z >= 0.0) & (z <= h)
        hole = fmax(r - reach, 0.0)
        settled = (capped & (between_caps | (rho_squared <= r * r))) | (
            ~capped & between_caps & (rho_squared >= hole * hole)
        )
        # The tube's hole: the line leaves it onto the inner wall, or past the box's ends.
        hole_leave = radial_interval(closest, inverse_speed_squared, b2, along_axis, hole)[1]
        z_out = z0 + hole_leave * dz
        on_end = ~between_caps & ((slab_enter >= outer_enter) | (enter <= 0.0))
        inside = ~capped & on_end & (rho_squared < hole * hole) & (hole_leave >= first)
        onto_wall = inside & (z_out >= 0.0) & (z_out <= h)
        through = inside & ((z_out < -reach) | (z_out > h + reach))
        answer = hole_leave if onto_wall else (INF if through else first)
        settled = settled | onto_wall | through
        block[_SX, j], block[_SY, j], block[_SZ, j] = sx, sy, sz
        block[_UX, j], block[_UY, j], block[_UZ, j], block[_LENGTH, j] = ux, uy, uz, length
        block[_X0, j], block[_Y0, j], block[_Z0, j] = x0, y0, z0
        block[_DX, j], block[_DY, j], block[_DZ, j] = dx, dy, dz
        block[_REACH, j] = reach
        block[_T, j] = answer if in_box & settled else INF
        block[_FIRST, j], block[_LEAVE, j] = first, leave
        block[_FLAG, j] = 1.0 if in_box & ~settled else 0.0
    return bad


@helper
def write_contacts(p0, frame, h, r, capped, placement, begin, count, block, out):
    """Per cast of a block, at its centre x0 + t d: the nearest point of the cylinder and the
    normal toward the centre (cast._contact_capped or _contact_tube, and their
    _odd forms where the centre is inside or on the solid, on the tube's wall or on the
    axis: both computed, one chosen), back in the world and into the outputs as
    write_cast writes them. Branch-free (SIMD; the capped and open forms both computed and
    one chosen, rather than a branch LLVM would answer with two copies of the loop)."""
    hit, distance, center, point, normal = out
    hit = hit[begin : begin + count]
    distance = distance[begin : begin + count]
    center = center[3 * begin : 3 * (begin + count)]
    point = point[3 * begin : 3 * (begin + count)]
    normal = normal[3 * begin : 3 * (begin + count)]
    for j in range(count):
        t = block[_T, j]
        cx = block[_X0, j] + t * block[_DX, j]
        cy = block[_Y0, j] + t * block[_DY, j]
        cz = block[_Z0, j] + t * block[_DZ, j]
        reach = block[_REACH, j]
        rho = np.sqrt(cx * cx + cy * cy)
        off_radial = fmax(rho - r, 0.0) if capped else rho - r
        nearest_z = fmin(fmax(cz, 0.0), h)
        off_axial = cz - nearest_z
        gap = np.sqrt(off_radial * off_radial + off_axial * off_axial)
        inverse_gap, inverse_rho = 1.0 / gap, 1.0 / rho
        radial = off_radial * inverse_gap * inverse_rho  # the normal's radial part, over rho
        nearest = (rho - off_radial) * inverse_rho if capped else r * inverse_rho
        px, py, pz = nearest * cx, nearest * cy, nearest_z
        nx, ny, nz = radial * cx, radial * cy, off_axial * inverse_gap
        capped_odd = contact_capped_odd(cx, cy, cz, r, h)
        tube_odd = contact_tube_odd(cx, cy, cz, block[_DX, j], block[_DY, j], r, h, reach)
        if (gap == 0.0) | (rho == 0.0) | (~capped & (reach == 0.0)):
            px, py, pz, nx, ny, nz = capped_odd if capped else tube_odd
        px, py, pz = transform_transposed(frame, px, py, pz)
        nx, ny, nz = transform_transposed(frame, nx, ny, nz)
        t, px, py, pz, nx, ny, nz = cast_to_world(
            placement, t, p0[0] + px, p0[1] + py, p0[2] + pz, nx, ny, nz
        )
        found = (t <= block[_LENGTH, j]) & (t < INF)
        gate = 1.0 if found else NAN
        hit[j] = found
        distance[j] = t if found else INF
        center[3 * j] = block[_SX, j] + (t * gate) * block[_UX, j]
        center[3 * j + 1] = block[_SY, j] + (t * gate) * block[_UY, j]
        center[3 * j + 2] = block[_SZ, j] + (t * gate) * block[_UZ, j]
        point[3 * j], point[3 * j + 1], point[3 * j + 2] = px * gate, py * gate, pz * gate
        normal[3 * j], normal[3 * j + 1], normal[3 * j + 2] = nx * gate, ny * gate, nz * gate


def _make_sphere_cast(capped):
    """The sphere cast compiled for one kind, capped or open (``capped`` is a constant of the
    closure: numba drops the other kind's branches before it types the function, as the
    terrain's _make_cast_rows does; one kind's first use compiles only its own kernel)."""

    @njit(cache=True, nogil=True, error_model="numpy")
    def sphere_cast(arguments, placement, starts, ends, radius, out, start, stop):
        """Casts start ... stop - 1 by blocks, as the ray kernels: the fast path and the
        contacts for a whole block in branch-free loops (SIMD); the tori only for the casts
        that need them, listed. Their rim tori's convex pieces are solved together: Newton
        sweeps over all of them in SIMD, then one iteration per piece still going on per
        branch-free sweep, so the casts' iterations overlap instead of each waiting on its own
        square root and division."""
        p0, frame, h, r, _ = arguments
        hit, distance, center, point, normal = out
        starts, ends = starts.reshape(starts.size), ends.reshape(ends.size)
        center, point = center.reshape(center.size), point.reshape(point.size)
        out = (hit, distance, center, point, normal.reshape(normal.size))
        block = np.empty((_BLOCK_ROWS, 4 * BLOCK + 8))  # (up to 4 jobs per cast; rows not 4K apart)
        bad = 0
        for begin in range(start, stop, BLOCK):
            count = stop - begin if stop - begin < BLOCK else BLOCK  # no min() to compile
            bad += box_entries(
                p0, frame, h, r, capped, placement, starts, ends, radius, begin, count, block
            )
            # The rest enter the box elsewhere: a solid's corner beyond a rim (then that rim's
            # torus, where F is convex), or the tube's ends and hole. Listed: a store at every
            # cast and a count, no branch.
            listed = 0
            for j in range(count):
                block[_LIST, listed] = j
                listed += 1 if block[_FLAG, j] != 0.0 else 0
            # Their rim tori's convex pieces become jobs (add_job), solved together below.
            jobs = 0 * listed  # (an int64, not the literal 0: one compile of tube_entry)
            for k in range(listed):
                j = int(block[_LIST, k])
                x0, y0, z0 = block[_X0, j], block[_Y0, j], block[_Z0, j]
                dx, dy, dz = block[_DX, j], block[_DY, j], block[_DZ, j]
                reach, first = block[_REACH, j], block[_FIRST, j]
                line = cast_line(x0, y0, dx, dy)
                owner = 1.0 * j
                if capped:  # the rim's torus on [first, leave], convex: a job
                    rim = h if z0 + first * dz > h else 0.0
                    t, jobs = torus_entry(
                        x0,
                        y0,
                        z0,
                        dz,
                        rim,
                        r,
                        reach,
                        line,
                        first,
                        block[_LEAVE, j],
                        capped,
                        block,
                        jobs,
                        owner,
                    )
                else:
                    parallel = dz == 0.0
                    inverse_dz = 1.0 / (1.0 if parallel else dz)
                    along_axis = line[1] == 0.0
                    t, jobs = tube_entry(
                        x0,
                        y0,
                        z0,
                        dz,
                        inverse_dz,
                        parallel,
                        along_axis,
                        r,
                        h,
                        reach,
                        line,
                        first,
                        block,
                        jobs,
                        owner,
                    )
                    block[_T, j] = t
            # Newton's iterations (cast._newton, convex) on all jobs together: F at t,
            # then _newton's checks and step, so the same answers, bit for bit. First
            # DENSE_SWEEPS sweeps over every job, a finished one keeping its values (selects:
            # LLVM runs the sweep in SIMD, several jobs' square roots and divisions at once);
            # then one iteration per sweep over those still going on, listed (row _J_LIST).
            for k in range(jobs):
                block[_J_GOING, k] = 1.0
            for _ in range(DENSE_SWEEPS):
                for k in range(jobs):
                    t, tolerance = block[_J_T, k], block[_J_TOLERANCE, k]
                    f, step = torus_function(
                        t,
                        block[_J_CLOSEST, k],
                        block[_J_A2, k],
                        block[_J_B2, k],
                        block[_J_ZETA0, k],
                        block[_J_DZ, k],
                        block[_J_REACH2, k],
                        r,
                    )
                    after = t - step
                    done = f <= tolerance
                    moving = (after > t) & (after <= block[_J_HIGH, k])
                    landed = moving & (step * step <= tolerance)
                    found = t if done else (after if landed else INF)
                    going = block[_J_GOING, k] != 0.0
                    block[_J_FOUND, k] = found if going else block[_J_FOUND, k]
                    block[_J_T, k] = after if going else t
                    still = going & ~(done | landed | ~moving)
                    block[_J_GOING, k] = 1.0 if still else 0.0
            going = 0 * jobs
            for k in range(jobs):
                block[_J_LIST, going] = k
                going += 1 if block[_J_GOING, k] != 0.0 else 0
            for _ in range(NEWTON_STEPS - DENSE_SWEEPS + 0 * going):
                if going == 0:
                    break
                kept = 0
                for i in range(going):
                    k = int(block[_J_LIST, i])
                    t, tolerance = block[_J_T, k], block[_J_TOLERANCE, k]
                    f, step = torus_function(
                        t,
                        block[_J_CLOSEST, k],
                        block[_J_A2, k],
                        block[_J_B2, k],
                        block[_J_ZETA0, k],
                        block[_J_DZ, k],
                        block[_J_REACH2, k],
                        r,
                    )
                    after = t - step
                    done = f <= tolerance
                    moving = (after > t) & (after <= block[_J_HIGH, k])
                    landed = moving & (step * step <= tolerance)
                    block[_J_FOUND, k] = t if done else (after if landed else INF)
                    block[_J_T, k] = after
                    block[_J_LIST, kept] = k
                    kept += 0 if done | landed | ~moving else 1
                going = kept
            for k in range(jobs):  # each cast's first root: the least of its pieces'
                j = int(block[_J_OWNER, k])
                block[_T, j] = fmin(block[_T, j], block[_J_FOUND, k])
            for k in range(listed):
                j = int(block[_LIST, k])
                t = block[_T, j]
                block[_T, j] = t if t < INF else INF
            write_contacts(p0, frame, h, r, capped, placement, begin, count, block, out)
        return bad

    return sphere_cast


_SPHERE_CASTS = {capped: _make_sphere_cast(capped) for capped in (False, True)}


def sphere_cast(arguments, placement, starts, ends, radius, out, start, stop):
    """Casts start ... stop - 1 (see backend.py), by the kernel of the cylinder's kind."""
    cast = _SPHERE_CASTS[arguments[4]]
    return cast(arguments, placement, starts, ends, radius, out, start, stop)
