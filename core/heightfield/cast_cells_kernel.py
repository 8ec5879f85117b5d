"""The pieces of one terrain cell for the compiled sphere cast (cast_kernel.py walks the
cells, these test them): the one-cell, one-cast form of cast_cells.py, whose docstrings and
cast.py's have the math. Each cell's pieces are its two triangles' faces, its 5 edges (4
sides and the diagonal), its 4 vertices and, for the solid on the footprint's border, the
walls below its sides and the vertical lines below the footprint's corners; a piece is
named by a code (FACES, EDGES, ...: the first code of each kind).

Helpers take scalars only (called per cell): the walk reads the cell's heights and passes
them.
"""

import numpy as np

from ..kernel_common import INF, NAN, helper, maximum, minimum, rare_helper

# A piece's code (cell_entry's answer, cell_nearest's ``only``): the first code of each
# kind, then one per piece of that kind in its helper's order (face_plane, edge_points,
# vertex, wall, corner).
FACES, EDGES, VERTICES, WALLS, CORNER_LINES = 0, 2, 7, 11, 15
# No piece in particular: cell_entry's before a piece is entered; as cell_nearest's
# ``only``, every piece.
ANY_PIECE = -1


@helper
def accept(t, early):
    """cast_cells.accept: t >= 0 (at most ``early`` before 0: 0), else inf."""
    if t >= -early:
        return t if t > 0.0 else 0.0
    return INF


@helper
def in_triangle(which, anti, u, v):
    """cast_cells.Cell.in_triangle at the cell's (u, v)."""
    if which == 0:
        if anti:
            return u >= 0.0 and v >= 0.0 and u + v <= 1.0
        return v >= 0.0 and u <= 1.0 and u >= v
    if anti:
        return u <= 1.0 and v <= 1.0 and u + v >= 1.0
    return u >= 0.0 and v <= 1.0 and v >= u


@helper
def face_plane(which, h00, h10, h01, h11, anti, xa, xb, ya, yb, inverse_dx, inverse_dy):
    """cast_cells.Cell.face_planes for triangle ``which``: a point of its plane, its up normal
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
    """cast_cells.Cell.faces for triangle ``which``: a point of its plane and its unit up normal."""
    ax, ay, az, nx_, ny_, length = face_plane(
        which, h00, h10, h01, h11, anti, xa, xb, ya, yb, inverse_dx, inverse_dy
    )
    inverse = 1.0 / length
    return ax, ay, az, nx_ * inverse, ny_ * inverse, inverse


@helper
def edge_points(k, h00, h10, h01, h11, anti, xa, xb, ya, yb):
    """cast_cells.Cell.edges: edge ``k`` of the cell's 5 (4 sides and the diagonal) as two
    points."""
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
    """cast_cells.Cell.walls: wall ``k`` (x = xa, x = xb, y = ya, y = yb) as (axis, plane, outward
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
    """cast_cells.Cell.corners: whether the cell holds the footprint's corner ``k`` (its
    vertex ``k``) and that corner's point."""
    x, y, z = vertex(k, h00, h10, h01, h11, xa, xb, ya, yb)
    at_x = (i == 0) if k == 0 or k == 2 else (i == last_i)
    at_y = (j == 0) if k <= 1 else (j == last_j)
    return at_x and at_y, x, y, z


@helper
def edge_entry(ax, ay, az, bx, by, bz, sx, sy, sz, ux, uy, uz, R, early):
    """cast_cells.edge_entry: entry into the cylinder of radius R around a -> b, foot on it.
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
    """cast_cells.vertex_entry: entry into the ball of radius R around p."""
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
    """cast_cells.cell_entries for one cast and one cell: the least entry into its pieces (faces,
    edges, vertices and, for the solid on the border, walls and corner lines), and which
    piece that is (cell_nearest's ``only``); pieces that cannot be entered before ``limit``
    (the walk's best contact so far) may go untested. ``grid`` = (x0, y0, dx, dy, last cell
    i, last cell j, 1 / dx, 1 / dy). Inlined into the walk, its one caller: called out of
    line, its many arguments made every cast slower for a little less first compile."""
    x0, y0, dx, dy, last_i, last_j, inverse_dx, inverse_dy = grid
    xa, xb = x0 + i * dx, x0 + (i + 1) * dx
    ya, yb = y0 + j * dy, y0 + (j + 1) * dy
    best = INF
    piece = ANY_PIECE
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
            best, piece = least(best, piece, accept(t, early), FACES + which)
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
            best, piece = least(best, piece, entry, EDGES + k)
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
            best, piece = least(best, piece, entry, VERTICES + k)
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
            best, piece = least(best, piece, accept(t, early), WALLS + k)
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
            best, piece = least(best, piece, accept(t, early), CORNER_LINES + k)
    return best, piece


@rare_helper
def cell_nearest(i, j, h00, h10, h01, h11, anti, grid, solid, qx, qy, qz, only):
    """cast_cells.cell_nearest for one point and one cell: the distance to the cell's
    pieces, the nearest point and the piece's outward normal (faces: up; walls: their axis;
    NaN for edges and corner lines). With ``only`` a piece's code (cell_entry's answer),
    that piece's alone, taken as nearest: at a contact, the winning piece's point (at
    distance R from the centre, every other piece at least R), without the tests of the
    others; ANY_PIECE: every piece's."""
    x0, y0, dx, dy, last_i, last_j, inverse_dx, inverse_dy = grid
    xa, xb = x0 + i * dx, x0 + (i + 1) * dx
    ya, yb = y0 + j * dy, y0 + (j + 1) * dy
    if only >= VERTICES and only < WALLS:  # a vertex
        px, py, pz = vertex(only - VERTICES, h00, h10, h01, h11, xa, xb, ya, yb)
        gx, gy, gz = qx - px, qy - py, qz - pz
        return np.sqrt(gx * gx + gy * gy + gz * gz), px, py, pz, NAN, NAN, NAN
    every = only == ANY_PIECE
    best = INF
    px = py = pz = nx = ny = nz = NAN
    face_0 = face_1 = False  # whether the point projects into the triangle
    for which in range(2):
        if not (every or only == FACES + which):
            continue
        ax, ay, az, fx, fy, fz = face(
            which, h00, h10, h01, h11, anti, xa, xb, ya, yb, inverse_dx, inverse_dy
        )
        off = fx * (qx - ax) + fy * (qy - ay) + fz * (qz - az)
        cx, cy, cz = qx - off * fx, qy - off * fy, qz - off * fz
        u, v = (cx - xa) * inverse_dx, (cy - ya) * inverse_dy
        if only == FACES + which or in_triangle(which, anti, u, v):
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
        if skip or not (every or only == EDGES + k):
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
        if not (on_border(k, i, j, last_i, last_j) and (every or only == WALLS + k)):
            continue
        axis, plane, sign, low, high, h_low, h_high = wall(k, h00, h10, h01, h11, xa, xb, ya, yb)
        q_axis, along = (qx, qy) if axis == 0 else (qy, qx)
        top = h_low + (h_high - h_low) * ((along - low) / (high - low))
        if only == WALLS + k or (along >= low and along <= high and qz <= top):
            distance = abs(q_axis - plane)
            if distance < best:
                best, pz = distance, qz
                if axis == 0:
                    px, py, nx, ny, nz = plane, along, sign, 0.0, 0.0
                else:
                    px, py, nx, ny, nz = along, plane, 0.0, sign, 0.0
    for k in range(4):
        has, cx, cy, cz = corner(k, i, j, last_i, last_j, h00, h10, h01, h11, xa, xb, ya, yb)
        if not (has and (every or only == CORNER_LINES + k)):
            continue
        cz = minimum(qz, cz)
        gx, gy, gz = qx - cx, qy - cy, qz - cz
        distance = np.sqrt(gx * gx + gy * gy + gz * gz)
        if distance < best:
            best, px, py, pz, nx, ny, nz = distance, cx, cy, cz, NAN, NAN, NAN
    return best, px, py, pz, nx, ny, nz
