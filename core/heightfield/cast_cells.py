"""The pieces of a terrain's cells for the sphere cast (numpy, many cells at once): each
cast's least entry into a cell's pieces and a point's nearest point of them; cast.py's
docstring has the math. A TRIANGLES cell's pieces are its two triangles' faces, its 5 edges
(4 sides and the diagonal) and 4 vertices, and for the solid on the footprint's border the
walls under its sides and the vertical lines under the footprint's corners.
cast_cells_kernel.py is the one-cell, one-cast form of this module.
"""

from __future__ import annotations

import numpy as np

EARLY = 2.0**-40  # an entry this little before 0 (relative to the scale) is a contact at 0


class Cell:
    """Corners of the cells (i, j) (float index arrays) as points, and their split."""

    def __init__(self, g, i, j):
        nx = g.nx
        k = (j * nx + i).astype(np.intp)
        self.h00, self.h10 = g.flat[k], g.flat[k + 1]
        self.h01, self.h11 = g.flat[k + nx], g.flat[k + nx + 1]
        self.xa, self.xb = g.x0 + i * g.dx, g.x0 + (i + 1) * g.dx
        self.ya, self.yb = g.y0 + j * g.dy, g.y0 + (j + 1) * g.dy
        self.i, self.j = i, j
        if g.anti is None:
            self.anti = np.zeros(i.shape, dtype=bool)
        else:
            self.anti = g.anti[(j * (nx - 1) + i).astype(np.intp)] > 0.0

    def corner(self, name):
        x = self.xb if name[0] == "1" else self.xa
        y = self.yb if name[1] == "1" else self.ya
        return (x, y, getattr(self, "h" + name))

    def edges(self):
        """The cell's 5 edges (4 sides and the diagonal) as point pairs."""
        p00, p10, p01, p11 = (self.corner(name) for name in ("00", "10", "01", "11"))
        a = self.anti
        diagonal_a = tuple(np.where(a, x, y) for x, y in zip(p10, p00))
        diagonal_b = tuple(np.where(a, x, y) for x, y in zip(p01, p11))
        return [(p00, p10), (p00, p01), (p10, p11), (p01, p11), (diagonal_a, diagonal_b)]

    def face_planes(self, g):
        """Both triangles: (a point of the plane, the up normal (nx, ny, 1) unnormalized as
        (nx, ny), its length, which triangle). Triangle 0 holds p10, triangle 1 holds p01
        (either split); their height gradients per grid unit (du, dv) give the normal
        (-du / dx, -dv / dy, 1) (the divisions as products with 1 / dx and 1 / dy,
        g.inverse_spacing, as the compiled kernel's)."""
        a = self.anti
        du0 = self.h10 - self.h00
        dv0 = np.where(a, self.h01 - self.h00, self.h11 - self.h10)
        du1 = self.h11 - self.h01
        dv1 = np.where(a, self.h11 - self.h10, self.h01 - self.h00)
        planes = []
        for which, (du, dv, anchor) in enumerate(((du0, dv0, "10"), (du1, dv1, "01"))):
            nx_, ny_ = -du * g.inverse_spacing[0], -dv * g.inverse_spacing[1]
            length = np.sqrt(nx_ * nx_ + ny_ * ny_ + 1.0)
            planes.append((self.corner(anchor), (nx_, ny_), length, which))
        return planes

    def faces(self, g):
        """Both triangles: (a point of the plane, unit up normal, which triangle)."""
        faces = []
        for anchor, (nx_, ny_), length, which in self.face_planes(g):
            inverse = 1.0 / length
            faces.append((anchor, (nx_ * inverse, ny_ * inverse, inverse), which))
        return faces

    def in_triangle(self, g, which, qx, qy):
        """Whether (qx, qy) lies in the closed triangle ``which`` of the cell."""
        u = (qx - self.xa) * g.inverse_spacing[0]
        v = (qy - self.ya) * g.inverse_spacing[1]
        if which == 0:
            main = (v >= 0.0) & (u <= 1.0) & (u >= v)
            anti = (u >= 0.0) & (v >= 0.0) & (u + v <= 1.0)
        else:
            main = (u >= 0.0) & (v <= 1.0) & (v >= u)
            anti = (u <= 1.0) & (v <= 1.0) & (u + v >= 1.0)
        return np.where(self.anti, anti, main)

    def walls(self, g):
        """The solid's wall strips under the cell's boundary edges: (mask of cells on that
        side, axis, plane coordinate, outward sign, span low, span high, height at low,
        height at high)."""
        return [
            (self.i == 0, 0, self.xa, -1.0, self.ya, self.yb, self.h00, self.h01),
            (self.i == g.nx - 2, 0, self.xb, 1.0, self.ya, self.yb, self.h10, self.h11),
            (self.j == 0, 1, self.ya, -1.0, self.xa, self.xb, self.h00, self.h10),
            (self.j == g.ny - 2, 1, self.yb, 1.0, self.xa, self.xb, self.h01, self.h11),
        ]

    def corners(self, g):
        """The footprint's corner vertices among the cells' corners: (mask, point)."""
        first_i, last_i = self.i == 0, self.i == g.nx - 2
        first_j, last_j = self.j == 0, self.j == g.ny - 2
        return [
            (first_i & first_j, self.corner("00")),
            (last_i & first_j, self.corner("10")),
            (first_i & last_j, self.corner("01")),
            (last_i & last_j, self.corner("11")),
        ]


def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def accept(t, early):
    """Entries at t >= 0 (at most ``early`` before 0: at 0), else inf."""
    return np.where(t >= -early, np.fmax(t, 0.0), np.inf)


def cell_entries(g, cast, rows, i, j):
    """The least entry t >= 0 of each cast ``rows`` into the pieces of its cell (i, j)."""
    cell = Cell(g, i, j)
    s = [x[rows] for x in cast.s]
    u = [x[rows] for x in cast.u]
    R = cast.R[rows]
    early = EARLY * (R + g.scale)
    best = np.full(R.shape, np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        for anchor, (nx_, ny_), length, which in cell.face_planes(g):
            # With the normal unnormalized (length L): off and nu are L times the
            # distance and the speed toward the plane, so t = (sigma R L - off) / nu.
            off = nx_ * (s[0] - anchor[0]) + ny_ * (s[1] - anchor[1]) + (s[2] - anchor[2])
            nu = nx_ * u[0] + ny_ * u[1] + u[2]
            sigma = np.where(nu < 0.0, 1.0, -1.0)
            t = (sigma * R * length - off) / nu
            reach = sigma * R / length
            qx = s[0] + t * u[0] - reach * nx_
            qy = s[1] + t * u[1] - reach * ny_
            valid = (nu < 0.0) if g.solid else (nu != 0.0)
            valid &= cell.in_triangle(g, which, qx, qy)
            best = np.fmin(best, np.where(valid, accept(t, early), np.inf))
        for a, b in cell.edges():
            best = np.fmin(best, edge_entry(a, b, s, u, R, early))
        for name in ("00", "10", "01", "11"):
            best = np.fmin(best, vertex_entry(cell.corner(name), s, u, R, early))
        if g.solid:
            best = np.fmin(best, wall_entries(g, cell, s, u, R, early))
    return best


def edge_entry(a, b, s, u, R, early):
    """Entry into the cylinder of radius R around the edge a -> b, where its foot is on
    the edge (module docstring)."""
    e = [q - p for p, q in zip(a, b)]
    m = [x - p for x, p in zip(s, a)]
    inverse_ee = 1.0 / dot(e, e)
    me, ue = dot(m, e) * inverse_ee, dot(u, e) * inverse_ee
    m_perp = [x - me * y for x, y in zip(m, e)]
    u_perp = [x - ue * y for x, y in zip(u, e)]
    speed = dot(u_perp, u_perp)
    closest = -dot(m_perp, u_perp) / speed
    w = [x + closest * y for x, y in zip(m_perp, u_perp)]
    miss = dot(w, w)
    t = closest - np.sqrt((R * R - miss) / speed)
    foot = me + t * ue
    valid = (miss <= R * R) & (speed > 0.0) & (foot >= 0.0) & (foot <= 1.0)
    return np.where(valid, accept(t, early), np.inf)


def vertex_entry(p, s, u, R, early):
    """Entry into the ball of radius R around the vertex p."""
    m = [x - q for x, q in zip(s, p)]
    closest = -dot(m, u)
    w = [x + closest * y for x, y in zip(m, u)]
    miss = dot(w, w)
    t = closest - np.sqrt(R * R - miss)
    return np.where(miss <= R * R, accept(t, early), np.inf)


def wall_entries(g, cell, s, u, R, early):
    """The least entry into the solid's walls and corner lines among the cells' pieces."""
    best = np.full(R.shape, np.inf)
    for mask, axis, plane, sign, low, high, h_low, h_high in cell.walls(g):
        rows = np.flatnonzero(mask)
        if not rows.size:
            continue
        other = 1 - axis
        ua, uo, uz = u[axis][rows], u[other][rows], u[2][rows]
        Rr = R[rows]
        # Moving toward the wall from outside (sign * u_axis < 0), its offset reaches R.
        t = (plane[rows] + sign * Rr - s[axis][rows]) / ua
        along = s[other][rows] + t * uo
        z = s[2][rows] + t * uz
        lo, hi = low[rows], high[rows]
        top = h_low[rows] + (h_high[rows] - h_low[rows]) * ((along - lo) / (hi - lo))
        valid = (sign * ua < 0.0) & (along >= lo) & (along <= hi) & (z <= top)
        best[rows] = np.fmin(best[rows], np.where(valid, accept(t, early[rows]), np.inf))
    for mask, p in cell.corners(g):
        rows = np.flatnonzero(mask)
        if not rows.size:
            continue
        # The vertical cylinder around the corner line: a circle in xy.
        mx, my = s[0][rows] - p[0][rows], s[1][rows] - p[1][rows]
        ux, uy = u[0][rows], u[1][rows]
        speed = ux * ux + uy * uy
        closest = -(mx * ux + my * uy) / speed
        wx, wy = mx + closest * ux, my + closest * uy
        miss = wx * wx + wy * wy
        Rr = R[rows]
        t = closest - np.sqrt((Rr * Rr - miss) / speed)
        z = s[2][rows] + t * u[2][rows]
        valid = (speed > 0.0) & (miss <= Rr * Rr) & (z <= p[2][rows])
        best[rows] = np.fmin(best[rows], np.where(valid, accept(t, early[rows]), np.inf))
    return best


def cell_nearest(g, i, j, q):
    """The nearest point of the pieces of cells (i, j) to the points q (components), its
    distance, and an outward normal of the piece where it has one (faces: up; walls: their
    axis; NaN for edges, vertices and corner lines)."""
    cell = Cell(g, i, j)
    shape = i.shape
    best = np.full(shape, np.inf)
    point = [np.full(shape, np.nan) for _ in range(3)]
    normal = [np.full(shape, np.nan) for _ in range(3)]

    def offer(distance, candidate, candidate_normal, rows=None):
        nonlocal best
        if rows is None:
            better = distance < best
            best = np.where(better, distance, best)
            for axis in range(3):
                point[axis] = np.where(better, candidate[axis], point[axis])
                normal[axis] = np.where(better, candidate_normal[axis], normal[axis])
        else:
            better = distance < best[rows]
            chosen = rows[better]
            best[chosen] = distance[better]
            for axis in range(3):
                point[axis][chosen] = np.broadcast_to(candidate[axis], distance.shape)[better]
                normal[axis][chosen] = np.broadcast_to(candidate_normal[axis], distance.shape)[
                    better
                ]

    with np.errstate(invalid="ignore", divide="ignore"):
        for anchor, n, which in cell.faces(g):
            off = dot(n, [a - b for a, b in zip(q, anchor)])
            projection = [x - off * y for x, y in zip(q, n)]
            inside = cell.in_triangle(g, which, projection[0], projection[1])
            offer(np.where(inside, np.abs(off), np.inf), projection, n)
        no_normal = (np.nan, np.nan, np.nan)
        for a, b in cell.edges():
            e = [y - x for x, y in zip(a, b)]
            m = [x - p for x, p in zip(q, a)]
            foot = np.clip(dot(m, e) / dot(e, e), 0.0, 1.0)
            nearest = [p + foot * x for p, x in zip(a, e)]
            gap = [x - y for x, y in zip(q, nearest)]
            offer(np.sqrt(dot(gap, gap)), nearest, no_normal)
        if g.solid:
            for mask, axis, plane, sign, low, high, h_low, h_high in cell.walls(g):
                rows = np.flatnonzero(mask)
                if not rows.size:
                    continue
                other = 1 - axis
                along, z = q[other][rows], q[2][rows]
                lo, hi = low[rows], high[rows]
                top = h_low[rows] + (h_high[rows] - h_low[rows]) * ((along - lo) / (hi - lo))
                on_wall = (along >= lo) & (along <= hi) & (z <= top)
                distance = np.where(on_wall, np.abs(q[axis][rows] - plane[rows]), np.inf)
                candidate = [None, None, z]
                candidate[axis], candidate[other] = plane[rows], along
                wall_normal = [0.0, 0.0, 0.0]
                wall_normal[axis] = sign
                offer(distance, candidate, wall_normal, rows)
            for mask, p in cell.corners(g):
                rows = np.flatnonzero(mask)
                if not rows.size:
                    continue
                nearest = [p[0][rows], p[1][rows], np.minimum(q[2][rows], p[2][rows])]
                gap = [x[rows] - y for x, y in zip(q, nearest)]
                offer(np.sqrt(dot(gap, gap)), nearest, no_normal, rows)
    return point, best, normal
