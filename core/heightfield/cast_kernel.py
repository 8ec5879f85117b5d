"""Compiled sphere cast vs Heightfield (TRIANGLES, solid and surface): the one-cast form of
cast.py, whose docstring has the math (faces, edge cylinders, vertex
balls, the solid's walls and corner lines; starts in overlap first; the path walked in
stretches, blocks and cells culled by their max/min inflated by R). Every expression is the
reference's, operand for operand, so both backends find the same contact (float64, no
fastmath); the contact point is the winning piece's (cell_nearest of that piece alone),
where the reference takes the nearest of the winning cell's pieces (the same point, up to
rounding where two tie).

Per cast, like the ray walk (ray_kernel.py): decide the overlap at the start (the
nearest point of the cells within R, or within the bound of a start inside the solid),
clip the path to the footprint box grown by R, then per stretch gather the cells whose box
grown by R (and, for a cast wider than a cell, the ball around it) the path meets before the
best contact so far (blocks of cells culled by their heights' slab grown by R), test
them in the order the path meets their boxes, and stop once the best contact is in the
stretch. The order of the tests changes nothing but the work: the contact is the least
entry over the pieces. Pieces whose entry cannot be the least are not tested: the edges and
corners of a triangle whose face entry is valid, a side or corner shared with the next cell
(that cell's to test), a cell tested in an earlier stretch, an edge whose line passes
clearly farther than R from the path's. A cast of radius 0 is the ray clipped to the
segment: the ray kernel answers it (``sphere_cast``, after the casts' own pass).

Helpers take scalars only (a call taking an array costs reference counting, which the
threads contend for); the arrays are read in ``cast_rows``.

Arguments (``cast_arguments``): the ray kernel's tuple, then the grid (x0, y0, dx, dy, nx,
ny), heights (flat), diagonals (1.0 where anti) and whether there are any, solid, zmin,
zmax, the blocks per row, the block and cell minima and maxima (cast.py's _Geometry, as
float32 pairs: extremes_float32) and the scale of the coordinates (for EARLY).
"""

import numpy as np
from numba import njit

from ..kernel_common import (
    INF,
    NAN,
    box_gap_squared,
    cast_direction,
    cast_to_local,
    cast_to_world,
    finite,
    fmax,
    fmin,
    helper,
    maximum,
    minimum,
    rare_helper,
    slab,
    transform,
    write_cast,
)
from . import ray_kernel as ray_kernels
from .cast import EARLY, MARGIN, _Geometry
from .grid import BLOCK

AHEAD = 4  # casts: prefetch_cast looks this far ahead
FIRST_CELLS = 64  # the stretch's cell list grows (doubling) from this many
# Cells of horizontal travel per stretch. The reference walks all casts together in
# stretches of 8 cells (numpy's per-call overhead); one cast at a time stops sooner with
# shorter ones: fewer cells are boxed past the contact. (The answer is the least entry over
# the pieces: the stretches change only the work.)
STRETCH = 2.0


def cast_arguments(field):
    """The tuple the kernel takes (module docstring), from cast.py's own _Geometry."""
    g = _Geometry(field)
    anti = g.anti
    return (
        field.kernel_arguments("raycast"),
        float(g.x0),
        float(g.y0),
        float(g.dx),
        float(g.dy),
        int(g.nx),
        int(g.ny),
        ray_kernels._read_only(g.flat),
        ray_kernels._read_only(np.zeros(1) if anti is None else anti),
        anti is not None,
        bool(g.solid),
        float(g.zmin),
        float(g.zmax),
        int(g.nbx),
        ray_kernels._read_only(extremes_float32(g.block_min, g.block_max), np.float32),
        ray_kernels._read_only(extremes_float32(g.cell_min, g.cell_max), np.float32),
        float(g.scale),
    )


def extremes_float32(least, largest):
    """Each cell's (or block's) least and largest height side by side in float32, rounded
    outward (so they still bound its pieces; the culling only gets a little looser): one
    cache line holds eight cells' pairs, where two float64 arrays took two lines for four
    (the walk's box tests had waited for those loads more than they computed)."""
    # Beyond float32's range a bound becomes +-inf, still outward: the casts and the
    # step past float32's largest value overflow by design.
    with np.errstate(over="ignore"):
        low = least.astype(np.float32)
        high = largest.astype(np.float32)
        low = np.where(low > least, np.nextafter(low, np.float32(-np.inf)), low)
        high = np.where(high < largest, np.nextafter(high, np.float32(np.inf)), high)
    return np.stack((low, high), axis=1).ravel()


@helper
def accept(t, early):
    """cast._accept: t >= 0 (at most ``early`` before 0: 0), else inf."""
    if t >= -early:
        return t if t > 0.0 else 0.0
    return INF


@helper
def cell_range(low, high, origin, inverse_spacing, cells):
    """_Geometry.cell_range: first and last cell meeting [low, high], clamped (MARGIN, far
    above the rounding of a product with 1 / spacing, keeps them whole)."""
    first = np.floor((low - origin) * inverse_spacing - MARGIN)
    last = np.floor((high - origin) * inverse_spacing + MARGIN)
    first = minimum(maximum(first, 0.0), cells - 1.0)
    last = minimum(maximum(last, 0.0), cells - 1.0)
    return np.int64(first), np.int64(last)


@helper
def in_triangle(which, anti, u, v):
    """_Cell.in_triangle at the cell's (u, v)."""
    if which == 0:
        if anti:
            return u >= 0.0 and v >= 0.0 and u + v <= 1.0
        return v >= 0.0 and u <= 1.0 and u >= v
    if anti:
        return u <= 1.0 and v <= 1.0 and u + v >= 1.0
    return u >= 0.0 and v <= 1.0 and v >= u


@helper
def face_plane(which, h00, h10, h01, h11, anti, xa, xb, ya, yb, inverse_dx, inverse_dy):
    """_Cell.face_planes for triangle ``which``: a point of its plane, its up normal
    (nx, ny, 1) unnormalized and that normal's length."""
    if which == 0:
        du = h10 - h00
        dv = (h01 - h00) if anti else (h11 - h10)
        ax, ay, az = xb, ya, h10
    else:
        du = h11 - h01
        dv = (h11 - h10) if anti else (h01 - h00)
        ax, ay, az = xa, yb, h01
    nx_, ny_ = -du * inverse_dx, -dv * inverse_dy
    return ax, ay, az, nx_, ny_, np.sqrt(nx_ * nx_ + ny_ * ny_ + 1.0)


@helper
def face(which, h00, h10, h01, h11, anti, xa, xb, ya, yb, inverse_dx, inverse_dy):
    """_Cell.faces for triangle ``which``: a point of its plane and its unit up normal."""
    ax, ay, az, nx_, ny_, length = face_plane(
        which, h00, h10, h01, h11, anti, xa, xb, ya, yb, inverse_dx, inverse_dy
    )
    inverse = 1.0 / length
    return ax, ay, az, nx_ * inverse, ny_ * inverse, inverse


@helper
def edge_points(k, h00, h10, h01, h11, anti, xa, xb, ya, yb):
    """_Cell.edges: edge ``k`` of the cell's 5 (4 sides and the diagonal) as two points."""
    if k == 0:
        return xa, ya, h00, xb, ya, h10
    if k == 1:
        return xa, ya, h00, xa, yb, h01
    if k == 2:
        return xb, ya, h10, xb, yb, h11
    if k == 3:
        return xa, yb, h01, xb, yb, h11
    if anti:
        return xb, ya, h10, xa, yb, h01
    return xa, ya, h00, xb, yb, h11


@helper
def wall(k, h00, h10, h01, h11, xa, xb, ya, yb):
    """_Cell.walls: wall ``k`` (x = xa, x = xb, y = ya, y = yb) as (axis, plane, outward
    sign, span low, span high, height at low, height at high)."""
    if k == 0:
        return 0, xa, -1.0, ya, yb, h00, h01
    if k == 1:
        return 0, xb, 1.0, ya, yb, h10, h11
    if k == 2:
        return 1, ya, -1.0, xa, xb, h00, h10
    return 1, yb, 1.0, xa, xb, h01, h11


@helper
def on_border(k, i, j, last_i, last_j):
    """Whether the cell (i, j) has wall ``k`` (is on that side of the footprint)."""
    if k == 0:
        return i == 0
    if k == 1:
        return i == last_i
    if k == 2:
        return j == 0
    return j == last_j


@helper
def vertex(k, h00, h10, h01, h11, xa, xb, ya, yb):
    """The cell's vertex ``k`` (00, 10, 01, 11: x index, then y)."""
    if k == 0:
        return xa, ya, h00
    if k == 1:
        return xb, ya, h10
    if k == 2:
        return xa, yb, h01
    return xb, yb, h11


@helper
def corner(k, i, j, last_i, last_j, h00, h10, h01, h11, xa, xb, ya, yb):
    """_Cell.corners: whether the cell holds the footprint's corner ``k`` (its vertex ``k``)
    and that corner's point."""
    x, y, z = vertex(k, h00, h10, h01, h11, xa, xb, ya, yb)
    at_x = (i == 0) if k == 0 or k == 2 else (i == last_i)
    at_y = (j == 0) if k <= 1 else (j == last_j)
    return at_x and at_y, x, y, z


@helper
def edge_entry(ax, ay, az, bx, by, bz, sx, sy, sz, ux, uy, uz, R, early):
    """cast._edge_entry: entry into the cylinder of radius R around a -> b, foot on it.
    First, without a division: a path whose line passes clearly farther than R from the
    edge's line (|m . (u x e)| > R |u x e|, with a margin far above rounding) never enters
    (most edges of a cell do not: the reference's test then rejects them too)."""
    ex, ey, ez = bx - ax, by - ay, bz - az
    mx, my, mz = sx - ax, sy - ay, sz - az
    cx, cy, cz = uy * ez - uz * ey, uz * ex - ux * ez, ux * ey - uy * ex
    apart = mx * cx + my * cy + mz * cz
    slack = R * R * (1.0 + 1e-6) + 1e-24 * (mx * mx + my * my + mz * mz)
    if apart * apart > slack * (cx * cx + cy * cy + cz * cz):
        return INF
    inverse_ee = 1.0 / (ex * ex + ey * ey + ez * ez)
    me = (mx * ex + my * ey + mz * ez) * inverse_ee
    ue = (ux * ex + uy * ey + uz * ez) * inverse_ee
    px, py, pz = mx - me * ex, my - me * ey, mz - me * ez
    qx, qy, qz = ux - ue * ex, uy - ue * ey, uz - ue * ez
    speed = qx * qx + qy * qy + qz * qz
    closest = -(px * qx + py * qy + pz * qz) / speed
    wx, wy, wz = px + closest * qx, py + closest * qy, pz + closest * qz
    miss = wx * wx + wy * wy + wz * wz
    if not (miss <= R * R and speed > 0.0):
        return INF
    t = closest - np.sqrt((R * R - miss) / speed)
    foot = me + t * ue
    if foot >= 0.0 and foot <= 1.0:
        return accept(t, early)
    return INF


@helper
def vertex_entry(px, py, pz, sx, sy, sz, ux, uy, uz, R, early):
    """cast._vertex_entry: entry into the ball of radius R around p."""
    mx, my, mz = sx - px, sy - py, sz - pz
    closest = -(mx * ux + my * uy + mz * uz)
    wx, wy, wz = mx + closest * ux, my + closest * uy, mz + closest * uz
    miss = wx * wx + wy * wy + wz * wz
    if not miss <= R * R:
        return INF
    return accept(closest - np.sqrt(R * R - miss), early)


@helper
def least(best, piece, entry, code):
    """fmin(best, entry), and which piece it is (``code`` for ``entry``)."""
    if best < entry or entry != entry:
        return best, piece
    return entry, code


@helper
def cell_entry(
    i, j, h00, h10, h01, h11, anti, grid, solid, sx, sy, sz, ux, uy, uz, R, early, limit
):  # fmt: skip
    """cast._entries for one cast and one cell: the least entry into its pieces (faces,
    edges, vertices and, for the solid on the border, walls and corner lines), and which
    piece that is (cell_nearest's ``only``); pieces that cannot be entered before ``limit``
    (the walk's best contact so far) may go untested. ``grid`` = (x0, y0, dx, dy, last cell
    i, last cell j, 1 / dx, 1 / dy). Inlined into the walk, its one caller: called out of
    line, its many arguments made every cast slower for a little less first compile."""
    x0, y0, dx, dy, last_i, last_j, inverse_dx, inverse_dy = grid
    xa, xb = x0 + i * dx, x0 + (i + 1) * dx
    ya, yb = y0 + j * dy, y0 + (j + 1) * dy
    best = INF
    piece = -1
    # Whether a triangle's edges and vertices need no test: its face entry is valid (then it
    # is the triangle's first), or the path enters the slab between the plane's offsets by
    # R, which holds the triangle grown by R, only after ``limit`` or never.
    done_0 = done_1 = False
    for which in range(2):
        ax, ay, az, nx, ny, length = face_plane(
            which, h00, h10, h01, h11, anti, xa, xb, ya, yb, inverse_dx, inverse_dy
        )
        # The normal unnormalized (length L): off and nu are L times the distance and the
        # speed toward the plane, so t = (sigma R L - off) / nu (one division less).
        off = nx * (sx - ax) + ny * (sy - ay) + (sz - az)
        nu = nx * ux + ny * uy + uz
        sigma = 1.0 if nu < 0.0 else -1.0
        t = (sigma * R * length - off) / nu
        reach = sigma * R / length
        qx = sx + t * ux - reach * nx
        qy = sy + t * uy - reach * ny
        valid = (nu < 0.0) if solid else (nu != 0.0)
        u, v = (qx - xa) * inverse_dx, (qy - ya) * inverse_dy
        done = False
        if valid and in_triangle(which, anti, u, v):
            best, piece = least(best, piece, accept(t, early), which)
            done = True
        if abs(off) > (R * length) * (1.0 + 1e-9) and not (t >= -early and t <= limit):
            done = True  # (outside the slab: t is where it enters it, if ahead)
        if which == 0:
            done_0 = done
        else:
            done_1 = done
    # A triangle's ball-sum is convex and the face's offset plane supports it: where the
    # face entry is valid it is the triangle's first entry, and its edges' and vertices'
    # entries (equal or later) need no test (the reference tests them all: the least is
    # the same up to rounding where they tie, at the triangle's border); so for a piece of
    # both triangles (the diagonal, two corners) either one's will do.
    # A side or corner shared with the next cell in x or y is that cell's to test (the
    # least entry stays the same): the path meets the neighbour's grown box, which holds the
    # piece, no later than the piece's own entry, so the walk tests the neighbour unless it
    # has a contact before that (or tested it in an earlier stretch, ``tested``).
    own_right, own_top = i == last_i, j == last_j
    for k in range(5):
        if k == 4:
            needed = not (done_0 or done_1)
        elif anti:
            needed = not (done_0 if k <= 1 else done_1)
        else:
            needed = not (done_0 if k == 0 or k == 2 else done_1)
        if (k == 2 and not own_right) or (k == 3 and not own_top):
            needed = False
        if needed:
            ax, ay, az, bx, by, bz = edge_points(k, h00, h10, h01, h11, anti, xa, xb, ya, yb)
            entry = edge_entry(ax, ay, az, bx, by, bz, sx, sy, sz, ux, uy, uz, R, early)
            best, piece = least(best, piece, entry, 2 + k)
    for k in range(4):
        if anti:
            needed = not (done_0 if k == 0 else (done_1 if k == 3 else done_0 or done_1))
        else:
            needed = not (done_0 if k == 1 else (done_1 if k == 2 else done_0 or done_1))
        if (k & 1 and not own_right) or (k >= 2 and not own_top):
            needed = False
        if needed:
            px, py, pz = vertex(k, h00, h10, h01, h11, xa, xb, ya, yb)
            entry = vertex_entry(px, py, pz, sx, sy, sz, ux, uy, uz, R, early)
            best, piece = least(best, piece, entry, 7 + k)
    if not solid:
        return best, piece
    for k in range(4):
        if not on_border(k, i, j, last_i, last_j):
            continue
        axis, plane, sign, low, high, h_low, h_high = wall(k, h00, h10, h01, h11, xa, xb, ya, yb)
        s_axis, s_other = (sx, sy) if axis == 0 else (sy, sx)
        ua, uo = (ux, uy) if axis == 0 else (uy, ux)
        # Moving toward the wall from outside, its offset reaches R.
        t = (plane + sign * R - s_axis) / ua
        along = s_other + t * uo
        z = sz + t * uz
        top = h_low + (h_high - h_low) * ((along - low) / (high - low))
        if sign * ua < 0.0 and along >= low and along <= high and z <= top:
            best, piece = least(best, piece, accept(t, early), 11 + k)
    for k in range(4):
        has, px, py, pz = corner(k, i, j, last_i, last_j, h00, h10, h01, h11, xa, xb, ya, yb)
        if not has:
            continue
        # The vertical cylinder around the corner line: a circle in xy.
        mx, my = sx - px, sy - py
        speed = ux * ux + uy * uy
        closest = -(mx * ux + my * uy) / speed
        wx, wy = mx + closest * ux, my + closest * uy
        miss = wx * wx + wy * wy
        t = closest - np.sqrt((R * R - miss) / speed)
        z = sz + t * uz
        if speed > 0.0 and miss <= R * R and z <= pz:
            best, piece = least(best, piece, accept(t, early), 15 + k)
    return best, piece


@rare_helper
def cell_nearest(i, j, h00, h10, h01, h11, anti, grid, solid, qx, qy, qz, only):
    """cast._nearest for one point and one cell: the distance to the cell's pieces, the
    nearest point and the piece's outward normal (faces: up; walls: their axis; NaN for
    edges and corner lines). With ``only`` >= 0 (a code of cell_entry's: faces 0-1, edges
    2-6, vertices 7-10, walls 11-14, corner lines 15-18) that piece's alone, taken as
    nearest: at a contact, the winning piece's point (at distance R from the centre, every
    other piece at least R), without the tests of the others."""
    x0, y0, dx, dy, last_i, last_j, inverse_dx, inverse_dy = grid
    xa, xb = x0 + i * dx, x0 + (i + 1) * dx
    ya, yb = y0 + j * dy, y0 + (j + 1) * dy
    if only >= 7 and only < 11:  # a vertex
        px, py, pz = vertex(only - 7, h00, h10, h01, h11, xa, xb, ya, yb)
        gx, gy, gz = qx - px, qy - py, qz - pz
        return np.sqrt(gx * gx + gy * gy + gz * gz), px, py, pz, NAN, NAN, NAN
    every = only < 0
    best = INF
    px = py = pz = nx = ny = nz = NAN
    face_0 = face_1 = False  # whether the point projects into the triangle
    for which in range(2):
        if not (every or only == which):
            continue
        ax, ay, az, fx, fy, fz = face(
            which, h00, h10, h01, h11, anti, xa, xb, ya, yb, inverse_dx, inverse_dy
        )
        off = fx * (qx - ax) + fy * (qy - ay) + fz * (qz - az)
        cx, cy, cz = qx - off * fx, qy - off * fy, qz - off * fz
        u, v = (cx - xa) * inverse_dx, (cy - ya) * inverse_dy
        if only == which or in_triangle(which, anti, u, v):
            if which == 0:
                face_0 = True
            else:
                face_1 = True
            if abs(off) < best:
                best, px, py, pz, nx, ny, nz = abs(off), cx, cy, cz, fx, fy, fz
    for k in range(5):
        # The edges of a triangle the point projects into are no nearer than its plane.
        if k == 4:
            skip = face_0 or face_1
        elif anti:
            skip = face_0 if k <= 1 else face_1
        else:
            skip = face_0 if k == 0 or k == 2 else face_1
        if skip or not (every or only == 2 + k):
            continue
        ax, ay, az, bx, by, bz = edge_points(k, h00, h10, h01, h11, anti, xa, xb, ya, yb)
        ex, ey, ez = bx - ax, by - ay, bz - az
        mx, my, mz = qx - ax, qy - ay, qz - az
        foot = (mx * ex + my * ey + mz * ez) / (ex * ex + ey * ey + ez * ez)
        foot = minimum(maximum(foot, 0.0), 1.0)
        cx, cy, cz = ax + foot * ex, ay + foot * ey, az + foot * ez
        gx, gy, gz = qx - cx, qy - cy, qz - cz
        distance = np.sqrt(gx * gx + gy * gy + gz * gz)
        if distance < best:
            best, px, py, pz, nx, ny, nz = distance, cx, cy, cz, NAN, NAN, NAN
    if not solid:
        return best, px, py, pz, nx, ny, nz
    for k in range(4):
        if not (on_border(k, i, j, last_i, last_j) and (every or only == 11 + k)):
            continue
        axis, plane, sign, low, high, h_low, h_high = wall(k, h00, h10, h01, h11, xa, xb, ya, yb)
        q_axis, along = (qx, qy) if axis == 0 else (qy, qx)
        top = h_low + (h_high - h_low) * ((along - low) / (high - low))
        if only == 11 + k or (along >= low and along <= high and qz <= top):
            distance = abs(q_axis - plane)
            if distance < best:
                best, pz = distance, qz
                if axis == 0:
                    px, py, nx, ny, nz = plane, along, sign, 0.0, 0.0
                else:
                    px, py, nx, ny, nz = along, plane, 0.0, sign, 0.0
    for k in range(4):
        has, cx, cy, cz = corner(k, i, j, last_i, last_j, h00, h10, h01, h11, xa, xb, ya, yb)
        if not (has and (every or only == 15 + k)):
            continue
        cz = minimum(qz, cz)
        gx, gy, gz = qx - cx, qy - cy, qz - cz
        distance = np.sqrt(gx * gx + gy * gy + gz * gz)
        if distance < best:
            best, px, py, pz, nx, ny, nz = distance, cx, cy, cz, NAN, NAN, NAN
    return best, px, py, pz, nx, ny, nz


@helper
def grown_box_entry(xa, xb, ya, yb, bottom, top, ta, tb, sx, sy, sz, ux, uy, uz, inverse, R):
    """The part [enter, leave] of [ta, tb] in the box grown by R: box_entry without its
    ball (which culls little where R is small beside the box) and without a branch."""
    ex, lx = slab(sx, ux, inverse[0], xa - R, xb + R, 0.0)
    ey, ly = slab(sy, uy, inverse[1], ya - R, yb + R, 0.0)
    ez, lz = slab(sz, uz, inverse[2], bottom - R, top + R, 0.0)
    enter = maximum(maximum(ex, ey), maximum(ez, ta))
    leave = minimum(minimum(lx, ly), minimum(lz, tb))
    return enter, leave


@helper
def box_entry(xa, xb, ya, yb, bottom, top, ta, tb, sx, sy, sz, ux, uy, uz, inverse, R, best):
    """cast._box_entry: the part [enter, leave] of [ta, tb] where the centre may be within
    R of the pieces in the box (in the box grown by R and, for a finite box, in the ball
    of radius R + half its diagonal around its middle); enter inf where never."""
    enter, leave = grown_box_entry(
        xa, xb, ya, yb, bottom, top, ta, tb, sx, sy, sz, ux, uy, uz, inverse, R
    )
    if not (enter <= leave and enter <= best):
        return INF, leave  # the ball only narrows the interval: no need to look
    bounded = bottom > -INF
    hx, hy = 0.5 * (xb - xa), 0.5 * (yb - ya)
    hz = 0.5 * (top - bottom) if bounded else 0.0
    reach = R + np.sqrt(hx * hx + hy * hy + hz * hz) if bounded else INF
    ox, oy, oz = sx - (xa + hx), sy - (ya + hy), sz - (top - hz)
    closest = -(ox * ux + oy * uy + oz * uz)
    mx, my, mz = ox + closest * ux, oy + closest * uy, oz + closest * uz
    spare = np.sqrt(reach * reach - (mx * mx + my * my + mz * mz))
    enter = fmax(enter, closest - spare)
    leave = fmin(leave, closest + spare)
    return (enter if spare >= 0.0 else INF), leave


@helper
def surface_at(flat, anti_of, has_anti, nx, ny, U, V):
    """surfaces.surface_at (TRIANGLES) at grid coordinates (U, V), clamped: height and
    gradient (dh/du, dh/dv)."""
    i = np.int64(minimum(maximum(np.floor(U), 0.0), nx - 2.0))
    j = np.int64(minimum(maximum(np.floor(V), 0.0), ny - 2.0))
    u, v = U - i, V - j
    k = j * nx + i
    h00, h10, h01, h11 = flat[k], flat[k + 1], flat[k + nx], flat[k + nx + 1]
    anti = has_anti and anti_of[j * (nx - 1) + i] > 0.0
    a0, a1 = h10 - h00, h11 - h01
    main_b0, main_b1 = h11 - h10, h01 - h00
    b0 = main_b1 if anti else main_b0
    b1 = main_b0 if anti else main_b1
    c1 = (h01 + h10 - h11) if anti else h00
    w = (1.0 - u - v) if anti else (u - v)
    if w >= 0:
        return h00 + a0 * u + b0 * v, a0, b0
    return c1 + a1 * u + b1 * v, a1, b1


@helper
def prefetch_cast(
    starts, ends, row, placement, x0, y0, dx, dy, nx, ny, zmin, zmax, flat, cell_extremes
):  # fmt: skip
    """Start loading what cast ``row`` will probably read, a few casts ahead (as the ray
    kernel's _prefetch_ray): the heights and cell extremes where its path enters the box
    top and halfway down to the lowest height."""
    sx, sy, sz = starts[row, 0], starts[row, 1], starts[row, 2]
    ex, ey, ez = ends[row, 0] - sx, ends[row, 1] - sy, ends[row, 2] - sz
    if placement is not None:
        inverse, translation = placement[0], placement[1]
        sx, sy, sz = transform(
            inverse, sx - translation[0], sy - translation[1], sz - translation[2]
        )
        ex, ey, ez = transform(inverse, ex, ey, ez)
    enter = (zmax - sz) / ez if (ez < 0 and sz > zmax) else 0.0
    bottom = (zmin - sz) / ez if ez < 0 else enter
    for t in (enter, 0.5 * (enter + bottom)):
        U = (sx + t * ex - x0) / dx
        V = (sy + t * ey - y0) / dy
        if abs(U) < INF and abs(V) < INF:
            i = np.int64(minimum(maximum(U, 0.0), nx - 2.0))
            j = np.int64(minimum(maximum(V, 0.0), ny - 2.0))
            ray_kernels._prefetch(flat, j * nx + i)
            ray_kernels._prefetch(flat, (j + 1) * nx + i)
            ray_kernels._prefetch(cell_extremes, 2 * (j * (nx - 1) + i))


def _make_cast_rows(solid):
    """The cast walk compiled for one model, solid or surface (``solid`` is a constant of the
    closure: numba drops the other model's branches before it types the function, as the
    ray kernel's _make_trace does)."""

    @njit(cache=True, nogil=True, error_model="numpy")
    def cast_rows(arguments, placement, starts, ends, radius, out, start, ray_rows):
        """The casts from ``start`` on, one per entry of ``ray_rows``: results into ``out``;
        a moving cast of radius 0 that does not start on the terrain is left to the ray kernel:
        ray_rows[row - start] True, its start, unit direction and length in the terrain's frame
        in out[3], out[4] and out[1].
        Returns the number of rows with non-finite input."""
        x0, y0, dx, dy, nx, ny = arguments[1:7]
        flat, anti_of, has_anti, _, zmin, zmax = arguments[7:13]
        nbx, block_extremes, cell_extremes, scale = arguments[13:17]
        _, distance, _, point, normal = out  # radius-0 casts are staged here for the ray kernel
        step = 1 if radius.shape[0] > 1 else 0
        last_i, last_j = nx - 2, ny - 2
        inverse_dx, inverse_dy = 1.0 / dx, 1.0 / dy
        grid = (x0, y0, dx, dy, last_i, last_j, inverse_dx, inverse_dy)
        every_piece = np.int64(-1)  # cell_nearest's ``only``: (no literal into a call)
        x1 = x0 + (nx - 1) * dx
        y1 = y0 + (ny - 1) * dy
        # A stretch's live cells (rows 0-2: enter, i, j) and the cast's cells tested so far
        # (row 3: their index; one array: each np.empty signature costs compile time).
        cells = np.empty((4, FIRST_CELLS))
        bad = 0
        prefetching = nx * ny >= ray_kernels.PREFETCH_MIN_CELLS
        stop = start + ray_rows.shape[0]
        for row in range(start, stop):
            if prefetching and row + AHEAD < stop:
                ahead = row + AHEAD
                prefetch_cast(
                    starts, ends, ahead, placement, x0, y0, dx, dy, nx, ny, zmin, zmax,
                    flat, cell_extremes,
                )  # fmt: skip
            ray_rows[row - start] = False
            wsx, wsy, wsz = starts[row, 0], starts[row, 1], starts[row, 2]
            ex, ey, ez = ends[row, 0], ends[row, 1], ends[row, 2]
            if not (finite(wsx, wsy, wsz) and finite(ex, ey, ez)):
                bad += 1  # (the driver names the row; no walk over NaN cell ranges)
                continue
            wux, wuy, wuz, length = cast_direction(wsx, wsy, wsz, ex, ey, ez)
            sx, sy, sz, ux, uy, uz, R = cast_to_local(
                placement, wsx, wsy, wsz, wux, wuy, wuz, radius[row * step]
            )
            local_length = length if placement is None else length / placement[3]
            t = INF
            px = py = pz = nx_ = ny_ = nz_ = NAN

            # 1. A start in overlap: within R of the terrain, or inside the solid.
            reach = R
            inside = False
            if solid:
                in_footprint = sx >= x0 and sx <= x1 and sy >= y0 and sy <= y1
                height = -INF
                if in_footprint and sz <= zmax:  # (above the highest point: outside)
                    height = surface_at(
                        flat, anti_of, has_anti, nx, ny, (sx - x0) / dx, (sy - y0) / dy
                    )[0]
                inside = in_footprint and sz <= height
                if inside:
                    # The nearest boundary point is no farther than the surface above, nor
                    # than each wall's top edge beside the start.
                    bound = height - sz
                    for side in range(4):
                        qx = x0 if side == 0 else (x1 if side == 1 else sx)
                        qy = sy if side <= 1 else (y0 if side == 2 else y1)
                        if side == 0:
                            gap = sx - x0
                        elif side == 1:
                            gap = x1 - sx
                        elif side == 2:
                            gap = sy - y0
                        else:
                            gap = y1 - sy
                        side_height = surface_at(
                            flat, anti_of, has_anti, nx, ny, (qx - x0) / dx, (qy - y0) / dy
                        )[0]
                        rise = maximum(sz - side_height, 0.0)
                        bound = minimum(bound, np.sqrt(gap * gap + rise * rise))
                    reach = bound
            near = sx >= x0 - reach and sx <= x1 + reach and sy >= y0 - reach and sy <= y1 + reach
            near = near and sz <= zmax + reach and (solid or sz >= zmin - reach)
            nearest = INF
            own_x = own_y = own_z = NAN
            if near or inside:
                i_low, i_high = cell_range(sx - reach, sx + reach, x0, inverse_dx, nx - 1)
                j_low, j_high = cell_range(sy - reach, sy + reach, y0, inverse_dy, ny - 1)
                # Blocks, then their cells, whose box of pieces is within reach (cast._box_gap),
                # in the reference's order; among equally near cells the last one's point, as
                # the reference's scatter keeps it.
                for bj in range(j_low // BLOCK, j_high // BLOCK + 1):
                    first_j = bj * BLOCK
                    end_j = minimum(first_j + BLOCK, ny - 1)
                    for bi in range(i_low // BLOCK, i_high // BLOCK + 1):
                        first_i = bi * BLOCK
                        end_i = minimum(first_i + BLOCK, nx - 1)
                        block = bj * nbx + bi
                        low = np.float64(block_extremes[2 * block])
                        high = np.float64(block_extremes[2 * block + 1])
                        gap_squared = box_gap_squared(
                            x0 + first_i * dx, x0 + end_i * dx, y0 + first_j * dy, y0 + end_j * dy,
                            low, high, sx, sy, sz,
                        )  # fmt: skip
                        if not gap_squared <= reach * reach:
                            continue
                        for j in range(maximum(first_j, j_low), minimum(end_j - 1, j_high) + 1):
                            for i in range(maximum(first_i, i_low), minimum(end_i - 1, i_high) + 1):
                                index = j * (nx - 1) + i
                                low = np.float64(cell_extremes[2 * index])
                                high = np.float64(cell_extremes[2 * index + 1])
                                gap_squared = box_gap_squared(
                                    x0 + i * dx, x0 + (i + 1) * dx, y0 + j * dy, y0 + (j + 1) * dy,
                                    low, high, sx, sy, sz,
                                )  # fmt: skip
                                if not gap_squared <= reach * reach:
                                    continue
                                k = j * nx + i
                                found = cell_nearest(
                                    i, j, flat[k], flat[k + 1], flat[k + nx], flat[k + nx + 1],
                                    has_anti and anti_of[index] > 0.0, grid, solid, sx, sy, sz,
                                    every_piece,
                                )  # fmt: skip
                                if found[0] < nearest or (found[0] == nearest and found[0] < INF):
                                    nearest, px, py, pz, own_x, own_y, own_z = found
            if inside or nearest <= R:
                t = 0.0
                gx, gy, gz = sx - px, sy - py, sz - pz
                inverse = 1.0 / (nearest if nearest > 0.0 else 1.0)
                tx, ty, tz = gx * inverse, gy * inverse, gz * inverse
                if not inside:
                    nx_, ny_, nz_ = tx, ty, tz
                else:  # the piece's outward normal, or from the start toward the point
                    nx_ = -tx if own_x != own_x else own_x
                    ny_ = -ty if own_y != own_y else own_y
                    nz_ = -tz if own_z != own_z else own_z
                if nearest == 0.0:  # on the terrain: the surface's (or the wall's) normal
                    _, grad_u, grad_v = surface_at(
                        flat, anti_of, has_anti, nx, ny, (sx - x0) / dx, (sy - y0) / dy
                    )
                    up_x, up_y = -grad_u / dx, -grad_v / dy
                    up_length = np.sqrt(up_x * up_x + up_y * up_y + 1.0)
                    up_x, up_y, up_z = up_x / up_length, up_y / up_length, 1.0 / up_length
                    if solid:
                        here = surface_at(
                            flat, anti_of, has_anti, nx, ny, (sx - x0) / dx, (sy - y0) / dy
                        )[0]
                        if sz < here and own_x == own_x:
                            up_x, up_y, up_z = own_x, own_y, own_z
                    elif up_x * ux + up_y * uy + up_z * uz > 0.0:
                        up_x, up_y, up_z = -up_x, -up_y, -up_z
                    nx_, ny_, nz_ = up_x, up_y, up_z
            elif ux != 0.0 or uy != 0.0 or uz != 0.0:
                if R == 0.0:
                    # 2. The ray clipped to the segment: the ray kernel's, in the terrain's
                    # frame as the reference casts it (start, direction and length there).
                    ray_rows[row - start] = True
                    distance[row] = local_length
                    point[row, 0], point[row, 1], point[row, 2] = sx, sy, sz
                    normal[row, 0], normal[row, 1], normal[row, 2] = ux, uy, uz
                    continue
                # 3. The path clipped to the footprint box grown by R, walked in stretches.
                inverse_u = (1.0 / ux, 1.0 / uy, 1.0 / uz)
                lx, hx_ = slab(sx, ux, inverse_u[0], x0 - R, x1 + R, 0.0)
                ly, hy_ = slab(sy, uy, inverse_u[1], y0 - R, y1 + R, 0.0)
                lz, hz_ = slab(sz, uz, inverse_u[2], -INF if solid else zmin - R, zmax + R, 0.0)
                t0 = maximum(maximum(lx, ly), maximum(lz, 0.0))
                t1 = minimum(minimum(hx_, hy_), minimum(hz_, local_length))
                best = INF
                best_cell = best_piece = -1
                recorded = 0
                if t0 <= t1:
                    early = EARLY * (R + scale)
                    chebyshev = maximum(abs(ux) / dx, abs(uy) / dy)
                    stride = STRETCH / chebyshev
                    # The ball bound pays only for casts wider than a cell: below, a cell's
                    # test is its grown box alone, without a branch.
                    ball = R > minimum(dx, dy)
                    ta = t0
                    while True:
                        tb = minimum(ta + stride, t1)
                        # Cells within R of the stretch: its xy box grown by R.
                        ax, bx = sx + ta * ux, sx + tb * ux
                        ay, by = sy + ta * uy, sy + tb * uy
                        i_low, i_high = cell_range(
                            minimum(ax, bx) - R, maximum(ax, bx) + R, x0, inverse_dx, nx - 1
                        )
                        j_low, j_high = cell_range(
                            minimum(ay, by) - R, maximum(ay, by) + R, y0, inverse_dy, ny - 1
                        )
                        live = 0
                        for bj in range(j_low // BLOCK, j_high // BLOCK + 1):
                            first_j = bj * BLOCK
                            end_j = minimum(first_j + BLOCK, ny - 1)
                            for bi in range(i_low // BLOCK, i_high // BLOCK + 1):
                                first_i = bi * BLOCK
                                end_i = minimum(first_i + BLOCK, nx - 1)
                                block = bj * nbx + bi
                                low = np.float64(block_extremes[2 * block])
                                high = np.float64(block_extremes[2 * block + 1])
                                # A block: its heights' slab grown by R only (the cells are
                                # in the stretch's box already, and the ball around 8 x 8
                                # cells is far looser than their box).
                                enter, leave = slab(sz, uz, inverse_u[2], low - R, high + R, 0.0)
                                enter, leave = maximum(enter, ta), minimum(leave, tb)
                                if not (enter <= leave and enter <= best):
                                    continue
                                i_first = maximum(first_i, i_low)
                                i_last = minimum(end_i - 1, i_high)
                                j_first = maximum(first_j, j_low)
                                j_last = minimum(end_j - 1, j_high)
                                room = live + (i_last - i_first + 1) * (j_last - j_first + 1)
                                if room > cells.shape[1]:
                                    grown = np.empty((4, 2 * room))
                                    for slot in range(cells.shape[1]):  # (no slice assignment:
                                        grown[0, slot] = cells[0, slot]  # its shape check
                                        grown[1, slot] = cells[1, slot]  # compiles string code)
                                        grown[2, slot] = cells[2, slot]
                                        grown[3, slot] = cells[3, slot]
                                    cells = grown
                                for j in range(j_first, j_last + 1):
                                    for i in range(i_first, i_last + 1):
                                        index = j * (nx - 1) + i
                                        low = np.float64(cell_extremes[2 * index])
                                        high = np.float64(cell_extremes[2 * index + 1])
                                        xa, ya = x0 + i * dx, y0 + j * dy
                                        xb, yb = x0 + (i + 1) * dx, y0 + (j + 1) * dy
                                        if ball:
                                            enter, leave = box_entry(
                                                xa, xb, ya, yb, low, high, ta, tb,
                                                sx, sy, sz, ux, uy, uz, inverse_u, R, best,
                                            )  # fmt: skip
                                        else:
                                            enter, leave = grown_box_entry(
                                                xa, xb, ya, yb, low, high, ta, tb,
                                                sx, sy, sz, ux, uy, uz, inverse_u, R,
                                            )  # fmt: skip
                                        # Written always, kept (counted) where the path may
                                        # meet its pieces before the best contact: no
                                        # branch to mispredict per cell.
                                        cells[0, live], cells[1, live], cells[2, live] = enter, i, j
                                        live += enter <= leave and enter <= best
                        # Their heights, read once the stretch's cells are sorted; in the order
                        # of enter (stable: ties keep their order).
                        for slot in range(live):
                            enter, ci, cj = cells[0, slot], cells[1, slot], cells[2, slot]
                            k = np.int64(cj) * nx + np.int64(ci)
                            ray_kernels._prefetch(flat, k)
                            ray_kernels._prefetch(flat, k + nx)
                            at = slot
                            while at > 0 and cells[0, at - 1] > enter:
                                cells[0, at] = cells[0, at - 1]
                                cells[1, at] = cells[1, at - 1]
                                cells[2, at] = cells[2, at - 1]
                                at -= 1
                            cells[0, at], cells[1, at], cells[2, at] = enter, ci, cj
                        for slot in range(live):
                            if cells[0, slot] > best:
                                break
                            ci, cj = np.int64(cells[1, slot]), np.int64(cells[2, slot])
                            index = cj * (nx - 1) + ci
                            # Tested in an earlier stretch: its least entry (over the whole
                            # path) is in best already.
                            seen = False
                            for earlier in range(recorded):
                                seen = seen or cells[3, earlier] == index
                            if seen:
                                continue
                            k = cj * nx + ci
                            entry, piece = cell_entry(
                                ci, cj, flat[k], flat[k + 1], flat[k + nx], flat[k + nx + 1],
                                has_anti and anti_of[index] > 0.0, grid, solid,
                                sx, sy, sz, ux, uy, uz, R, early, best,
                            )  # fmt: skip
                            if entry < best:
                                best, best_cell, best_piece = entry, index, piece
                            if recorded < FIRST_CELLS:  # (past that, a cell may be tested again)
                                cells[3, recorded] = index
                                recorded += 1
                        if not (best > tb and tb < t1):
                            break
                        ta = tb
                if best <= local_length:
                    # Contact: the winning piece's nearest point to the centre (the
                    # reference takes the nearest of the winning cell's pieces: the same
                    # point, but where two pieces tie, up to rounding).
                    t = best
                    cx, cy, cz = sx + t * ux, sy + t * uy, sz + t * uz
                    i, j = best_cell % (nx - 1), best_cell // (nx - 1)
                    k = j * nx + i
                    found = cell_nearest(
                        i, j, flat[k], flat[k + 1], flat[k + nx], flat[k + nx + 1],
                        has_anti and anti_of[best_cell] > 0.0, grid, solid, cx, cy, cz,
                        best_piece,
                    )  # fmt: skip
                    px, py, pz = found[1], found[2], found[3]
                    gx, gy, gz = cx - px, cy - py, cz - pz
                    size = np.sqrt(gx * gx + gy * gy + gz * gz)
                    nx_, ny_, nz_ = gx / size, gy / size, gz / size
            t, px, py, pz, nx_, ny_, nz_ = cast_to_world(placement, t, px, py, pz, nx_, ny_, nz_)
            write_cast(out, row, t, length, wsx, wsy, wsz, wux, wuy, wuz, px, py, pz, nx_, ny_, nz_)
        return bad

    return cast_rows


_CAST_ROWS = {solid: _make_cast_rows(solid) for solid in (False, True)}


@njit(cache=True, nogil=True, error_model="numpy")
def finish_rays(placement, starts, ends, rows, rays, out):
    """The casts ``rows`` of radius 0 from the ray kernel's answers in the terrain's frame
    (``rays``: hit, distance, point, normal): back to the world as cast_rows does."""
    ray_hit, ray_distance, ray_normal = rays[0], rays[1], rays[3]
    for k in range(rows.shape[0]):
        row = rows[k]
        sx, sy, sz = starts[row, 0], starts[row, 1], starts[row, 2]
        ux, uy, uz, length = cast_direction(sx, sy, sz, ends[row, 0], ends[row, 1], ends[row, 2])
        t = ray_distance[k] if ray_hit[k] else INF
        # The contact as the reference takes it: start + t direction in the terrain's frame.
        lx, ly, lz, lux, luy, luz, _ = cast_to_local(placement, sx, sy, sz, ux, uy, uz, 0.0)
        t, px, py, pz, nx, ny, nz = cast_to_world(
            placement, t, lx + t * lux, ly + t * luy, lz + t * luz,
            ray_normal[k, 0], ray_normal[k, 1], ray_normal[k, 2],
        )  # fmt: skip
        write_cast(out, row, t, length, sx, sy, sz, ux, uy, uz, px, py, pz, nx, ny, nz)


@njit(cache=True, nogil=True, error_model="numpy")
def scatter_casts(order, ordered, out):
    """The answers of the gathered casts (``ordered``, in ``order``) into their rows of
    ``out``."""
    for k in range(order.shape[0]):
        row = order[k]
        out[0][row] = ordered[0][k]
        out[1][row] = ordered[1][k]
        for axis in range(3):
            out[2][row, axis] = ordered[2][k, axis]
            out[3][row, axis] = ordered[3][k, axis]
            out[4][row, axis] = ordered[4][k, axis]


def sphere_cast(arguments, placement, starts, ends, radius, out, start, stop):
    """Casts start ... stop - 1 (see core/backend.py). On a large terrain the casts are
    gathered in the order of the block each starts over, so that casts one after another
    read the same heights and extremes from the cache, cast in that order and their
    answers scattered back (as the ray kernel does with its rays)."""
    nx, ny = arguments[5], arguments[6]
    if not ray_kernels.in_coherent_order(nx, ny, stop - start):
        return cast_span(arguments, placement, starts, ends, radius, out, start, stop)
    # The ray kernel's gather: starts and ends as its origins and directions, the radii
    # (one, or one per cast) as its limits; the same types, so it compiles once for both.
    order, starts, ends, radius = ray_kernels._ordered_rays(
        arguments[0], placement, starts, ends, radius, start, stop
    )
    count = stop - start
    ordered = (
        np.empty(count, dtype=np.bool_),
        np.empty(count),
        np.empty((count, 3)),
        np.empty((count, 3)),
        np.empty((count, 3)),
    )
    bad = cast_span(arguments, placement, starts, ends, radius, ordered, 0, count)
    scatter_casts(order, ordered, out)
    return bad


def cast_span(arguments, placement, starts, ends, radius, out, start, stop):
    """Casts start ... stop - 1 in their order: cast_rows, then the casts of radius 0 as
    rays clipped to their segments by the ray kernel (``raycast``, on the rays in the
    terrain's frame), whose answer the numpy reference takes too."""
    ray_rows = np.empty(stop - start, dtype=np.bool_)
    cast_rows = _CAST_ROWS[arguments[10]]
    bad = cast_rows(arguments, placement, starts, ends, radius, out, start, ray_rows)
    rows = np.flatnonzero(ray_rows) + start
    if rows.size:
        _, distance, _, point, normal = out
        rays = (
            np.empty(rows.size, dtype=np.bool_),
            np.empty(rows.size),
            np.empty((rows.size, 3)),
            np.empty((rows.size, 3)),
            np.empty((rows.size, 2), dtype=np.int64),
        )
        origins, directions = point[rows], normal[rows]
        ray_kernels.raycast(
            arguments[0], None, origins, directions, distance[rows], rays, 0, rows.size
        )
        finish_rays(placement, starts, ends, rows, rays, out)
    return bad
