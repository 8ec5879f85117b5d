"""Compiled sphere cast vs finite cylinder, capped or open: cast.py by blocks of casts (its
docstring has the math: the box's first point when it lies in the Minkowski sum, else the
rim tori by monotone Newton on their convex and concave pieces), operand for operand. The
rim tori and the open tube's whole path are in torus_kernel.py.

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
from .cast import NEWTON_STEPS
from .torus_kernel import (
    DENSE_SWEEPS,
    J_FOUND,
    J_GOING,
    J_LIST,
    J_OWNER,
    J_T,
    JOB_ROWS,
    cast_line,
    newton_step,
    radial_interval,
    torus_entry,
    tube_entry,
)

# Rows of a sphere_cast block, one column per cast: the cast in the world (start, unit
# direction, length), its line in the cylinder's frame and the fast path's values, and
# the list of the casts that need a torus; the jobs' rows (torus_kernel.py) follow.
_SX, _SY, _SZ, _UX, _UY, _UZ, _LENGTH = range(7)
_X0, _Y0, _Z0, _DX, _DY, _DZ, _REACH = range(7, 14)
_T, _FIRST, _LEAVE, _FLAG, _LIST, _CAST_ROWS = range(14, 20)
_BLOCK_ROWS = _CAST_ROWS + JOB_ROWS


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
        _, hole_leave = radial_interval(closest, inverse_speed_squared, b2, along_axis, hole)
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
        jobs = block[_CAST_ROWS:]
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
            # Their rim tori's convex pieces become jobs (torus_kernel.add_job), solved
            # together below.
            pieces = 0 * listed  # (an int64, not the literal 0: one compile of tube_entry)
            for k in range(listed):
                j = int(block[_LIST, k])
                x0, y0, z0 = block[_X0, j], block[_Y0, j], block[_Z0, j]
                dx, dy, dz = block[_DX, j], block[_DY, j], block[_DZ, j]
                reach, first, leave = block[_REACH, j], block[_FIRST, j], block[_LEAVE, j]
                line = cast_line(x0, y0, dx, dy)
                owner = 1.0 * j
                if capped:  # the rim's torus on [first, leave], convex: a job
                    rim = h if z0 + first * dz > h else 0.0
                    t, pieces = torus_entry(
                        x0, y0, z0, dz, rim, r, reach, line, first, leave, capped, jobs, pieces,
                        owner,
                    )  # fmt: skip
                else:
                    parallel = dz == 0.0
                    inverse_dz = 1.0 / (1.0 if parallel else dz)
                    _, a2, _, _ = line
                    along_axis = a2 == 0.0
                    t, pieces = tube_entry(
                        x0, y0, z0, dz, inverse_dz, parallel, along_axis, r, h, reach, line,
                        first, jobs, pieces, owner,
                    )  # fmt: skip
                    block[_T, j] = t
            # Newton's iterations (cast._newton, convex) on all jobs together, bit for bit as
            # _newton's: first DENSE_SWEEPS sweeps over every job, a finished one keeping
            # its values (selects: LLVM runs the sweep in SIMD, several jobs' square roots
            # and divisions at once); then one iteration per sweep over those still going
            # on, listed (row J_LIST).
            for k in range(pieces):
                jobs[J_GOING, k] = 1.0
            for _ in range(DENSE_SWEEPS):
                for k in range(pieces):
                    t, after, done, landed, moving = newton_step(jobs, k, r)
                    found = t if done else (after if landed else INF)
                    going = jobs[J_GOING, k] != 0.0
                    jobs[J_FOUND, k] = found if going else jobs[J_FOUND, k]
                    jobs[J_T, k] = after if going else t
                    still = going & ~(done | landed | ~moving)
                    jobs[J_GOING, k] = 1.0 if still else 0.0
            going = 0 * pieces
            for k in range(pieces):
                jobs[J_LIST, going] = k
                going += 1 if jobs[J_GOING, k] != 0.0 else 0
            for _ in range(NEWTON_STEPS - DENSE_SWEEPS + 0 * going):
                if going == 0:
                    break
                kept = 0
                for i in range(going):
                    k = int(jobs[J_LIST, i])
                    t, after, done, landed, moving = newton_step(jobs, k, r)
                    jobs[J_FOUND, k] = t if done else (after if landed else INF)
                    jobs[J_T, k] = after
                    jobs[J_LIST, kept] = k
                    kept += 0 if done | landed | ~moving else 1
                going = kept
            for k in range(pieces):  # each cast's first root: the least of its pieces'
                j = int(jobs[J_OWNER, k])
                block[_T, j] = fmin(block[_T, j], jobs[J_FOUND, k])
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
    _, _, _, _, capped = arguments
    return _SPHERE_CASTS[capped](arguments, placement, starts, ends, radius, out, start, stop)
