"""Sphere cast vs a heightfield terrain (TRIANGLES): the solid column or the surface, exact.

Math. A sphere of radius R whose centre moves along ``c(t) = s + t u`` (|u| = 1) first
touches the terrain T at the least t >= 0 with dist(c(t), T) <= R. T is a union of convex
pieces, and dist to a convex piece is convex in t, so for each piece {t : dist <= R} is an
interval whose start is the entry into the piece's Minkowski sum with the ball; the first
contact is the least entry over the pieces. Key step: a triangle's sum is the union of its
face slab |n.(x - a)| <= R over the triangle, the cylinders of radius R around its edges and
the balls around its vertices; the slab's side faces lie in the edge cylinders and the
cylinders' flat ends in the vertex balls, so taking each part's entry through its main
surface only is exact:

* face (unit normal n, up): ``t = (sigma R - n.(s - a)) / n.u`` with sigma = 1 from above
  (n.u < 0) or -1 from below (n.u > 0, the surface only), valid when the projection
  ``c(t) - sigma R n`` lies in the closed triangle (tested in the cell's grid coordinates);
* edge a -> b: with m = s - a and the parts of m and u perpendicular to e = b - a,
  ``|m_perp + t u_perp| = R``: the closest approach first (t_c = -m_perp.u_perp / |u_perp|^2,
  miss w = m_perp + t_c u_perp), then ``t = t_c - sqrt((R^2 - w.w) / |u_perp|^2)``, valid when
  the foot parameter ``(m.e + t u.e) / e.e`` is in [0, 1];
* vertex p: ``t = t_c - sqrt(R^2 - w.w)``, t_c = -(s - p).u, w = s - p + t_c u;
* the solid's side walls (the planar strip under a boundary edge, down to -inf): the
  centre's outward offset from the wall plane reaches R, ``t = (p + sigma R - s_axis) /
  u_axis`` moving toward it from outside, valid when the centre's projection lies on the
  strip (within the edge's span, at or below the edge's height there); at the footprint's 4
  corners the vertical half-line below the corner vertex: the vertical cylinder of radius R
  around it, entered in xy as a circle, valid where the centre is at or below the corner.
The walls' top edges are boundary edges of the surface, and the vertical lines under the
other boundary vertices lie inside the planar wall, so these pieces are all of T.

Contact: the nearest point of the winning cell's pieces to c(t) (at distance R), normal
(c - point) / |c - point|. A start within R of T (or inside the solid) is decided first:
distance 0, point the nearest point of T (of the solid's boundary from inside) and normal
from it toward the start (from inside: the boundary face's outward normal; a start exactly
on the surface: the surface normal, facing against the cast for a surface, the wall's for
a start on a wall). R = 0 is the ray clipped to the segment (the exact walk's answer).

Traversal (the hierarchy inflated by R). Clip [0, length] to the footprint box grown by R in
x and y and in z to [zmin - R, zmax + R] (the solid: below zmax + R), and walk it in
stretches of STRETCH cells of horizontal travel, all casts together. In a stretch [ta, tb]
the cells within R of the path lie in the stretch's xy box grown by R. The pieces of a block
(then of a cell) lie in its box: its xy rectangle between its least and largest height (the
solid's border cells: down to -inf, for the walls), so the centre can touch them only
inside that box grown by R and, for a bounded box, inside the ball of radius R + half its
diagonal around its middle: a slab and a sphere interval of t, whose start bounds every
contact with those pieces from below. Blocks, then cells, whose interval misses [ta, tb]
or starts after the best contact so far are skipped; each cast takes its remaining blocks,
and their cells, in the order of that bound (the first, then 3 more, 12 more, ...), skipping
those whose bound passed the best contact found meanwhile. A contact found at or before tb
is the first: a piece not yet tested is farther than R in xy from the path before tb. Every
entry found is a real contact, so the answer is the least of them whatever the stretches
(both backends may cut them differently).
"""

from __future__ import annotations

import numpy as np

from . import ray
from .grid import BLOCK, slab
from .surfaces import surface_at

STRETCH = 8.0  # cells of horizontal travel (Chebyshev, grid units) per stretch
PAIRS = 1 << 18  # (cast, cell) pairs per batch of piece tests (keeps temporaries small)
MARGIN = 1e-9  # grid units added to a box before it is rounded to cells
EARLY = 2.0**-40  # an entry this little before 0 (relative to the scale) is a contact at 0


def sphere_cast_terrain(terrain, start, direction, radius, length):
    """(distance, point, normal) component lists of spheres of ``radius`` (per row) cast from
    ``start`` along the unit (or zero) ``direction`` for ``length`` against the TRIANGLES
    ``terrain`` (a Heightfield), in its frame; distance inf where no contact in [0, length]."""
    cast = _Casts(start, direction, radius, length)
    geometry = _Geometry(terrain)
    n = cast.n
    distance = np.full(n, np.inf)
    point = [np.full(n, np.nan) for _ in range(3)]
    normal = [np.full(n, np.nan) for _ in range(3)]

    # 1. Starts in overlap: within R of T, or inside the solid.
    overlap, near, near_normal = _overlaps(geometry, cast)
    rows = np.flatnonzero(overlap)
    distance[rows] = 0.0
    for axis in range(3):
        point[axis][rows] = near[axis][rows]
        normal[axis][rows] = near_normal[axis][rows]

    moving = ~overlap & (cast.speed > 0.0)
    # 2. R = 0: the ray clipped to the segment.
    rays = np.flatnonzero(moving & (cast.R == 0.0))
    if rays.size:
        found = ray.intersect(
            terrain, [x[rays] for x in cast.s], [x[rays] for x in cast.u], cast.length[rays]
        )
        hit = found[0] <= cast.length[rays]
        hit_rows = rays[hit]
        distance[hit_rows] = found[0][hit]
        for axis in range(3):
            point[axis][hit_rows] = cast.s[axis][hit_rows] + found[0][hit] * cast.u[axis][hit_rows]
            normal[axis][hit_rows] = found[1][axis][hit]

    # 3. The others walk their clipped path in stretches.
    rows = np.flatnonzero(moving & (cast.R > 0.0))
    if rows.size:
        t0, t1 = geometry.clip(cast, rows)
        keep = t0 <= t1
        rows, t0, t1 = rows[keep], t0[keep], t1[keep]
        best = np.full(n, np.inf)
        cell = np.full(n, -1, dtype=np.int64)
        _walk(geometry, cast, rows, t0, t1, best, cell)
        found = np.flatnonzero(best <= cast.length)
        if found.size:
            t = best[found]
            centre = [cast.s[a][found] + t * cast.u[a][found] for a in range(3)]
            index = cell[found]
            near_point, _, _ = _nearest(
                geometry, index % (geometry.nx - 1), index // (geometry.nx - 1), centre
            )
            gap = [c - p for c, p in zip(centre, near_point)]
            size = np.sqrt(gap[0] * gap[0] + gap[1] * gap[1] + gap[2] * gap[2])
            distance[found] = t
            for axis in range(3):
                point[axis][found] = near_point[axis]
                normal[axis][found] = gap[axis] / size
    return distance, point, normal


class _Casts:
    """The casts of one call, per row: start s, unit (or zero) direction u and its length
    (speed: 1, or 0 for a zero-length cast), radius R and segment length."""

    def __init__(self, start, direction, radius, length):
        self.s = [np.asarray(x, dtype=np.float64) for x in start]
        self.u = [np.asarray(x, dtype=np.float64) for x in direction]
        self.n = self.s[0].shape[0]
        self.R = np.broadcast_to(np.asarray(radius, dtype=np.float64), (self.n,))
        self.length = np.broadcast_to(np.asarray(length, dtype=np.float64), (self.n,))
        ux, uy, uz = self.u
        self.speed = np.sqrt(ux * ux + uy * uy + uz * uz)

    def at(self, rows, t):
        """Centres of the casts ``rows`` at ``t``."""
        return [self.s[a][rows] + t * self.u[a][rows] for a in range(3)]


class _Geometry:
    """What the cast reads of the terrain: grid, heights, splits, and per block and per cell
    the max (and min) height with each cell's tolerance (the ray walk's hierarchy)."""

    def __init__(self, terrain):
        self.terrain = terrain
        above = terrain._above
        self.ny, self.nx = above.ny, above.nx
        (self.x0, self.y0), (self.dx, self.dy) = terrain.origin, terrain.spacing
        self.inverse_spacing = (1.0 / self.dx, 1.0 / self.dy)  # (products cost less)
        self.flat = above.flat
        self.anti = above.anti
        self.solid = terrain.solid
        self.zmin, self.zmax = terrain.zmin, terrain.zmax
        self.nbx = -(-(self.nx - 1) // BLOCK)
        data = terrain._cast_data()
        self.block_max, self.cell_max = data["block_max"], data["cell_max"]
        self.block_min, self.cell_min = data["block_min"], data["cell_min"]
        # The size of the coordinates near the terrain (for EARLY).
        self.scale = (
            max(abs(self.zmin), abs(self.zmax), self.dx, self.dy)
            + abs(self.x0)
            + abs(self.y0)
            + (self.nx - 1) * self.dx
            + (self.ny - 1) * self.dy
        )

    def clip(self, cast, rows):
        """[t0, t1] of the casts ``rows`` in the footprint box grown by R (the solid: below
        zmax + R; the surface: between zmin - R and zmax + R), within [0, length]."""
        R = cast.R[rows]
        x1 = self.x0 + (self.nx - 1) * self.dx
        y1 = self.y0 + (self.ny - 1) * self.dy
        ex, lx = slab(cast.s[0][rows], cast.u[0][rows], self.x0 - R, x1 + R)
        ey, ly = slab(cast.s[1][rows], cast.u[1][rows], self.y0 - R, y1 + R)
        bottom = np.full(R.shape, -np.inf) if self.solid else self.zmin - R
        ez, lz = slab(cast.s[2][rows], cast.u[2][rows], bottom, self.zmax + R)
        t0 = np.maximum(np.maximum(ex, ey), np.maximum(ez, 0.0))
        t1 = np.minimum(np.minimum(lx, ly), np.minimum(lz, cast.length[rows]))
        return t0, t1

    def cell_range(self, low, high, origin, spacing, cells):
        """First and last cell index (clamped to [0, cells - 1]) meeting [low, high]."""
        first = np.floor((low - origin) / spacing - MARGIN)
        last = np.floor((high - origin) / spacing + MARGIN)
        return np.clip(first, 0, cells - 1), np.clip(last, 0, cells - 1)


def _expand(counts):
    """(owner, k): for each item, its ``counts`` entries numbered k = 0, 1, ..."""
    counts = counts.astype(np.int64)
    owner = np.repeat(np.arange(counts.size), counts)
    first = np.cumsum(counts) - counts
    return owner, np.arange(owner.size) - first[owner]


def _batches(counts, budget=PAIRS):
    """Slices of the items whose summed counts stay near ``budget`` (at least one item)."""
    total = np.cumsum(counts)
    begin = 0
    while begin < counts.size:
        base = total[begin - 1] if begin else 0
        end = int(np.searchsorted(total, base + budget, side="right"))
        end = max(end, begin + 1)
        yield slice(begin, end)
        begin = end


def _box_entry(g, cast, rows, xa, xb, ya, yb, bottom, top, ta, tb):
    """The part [enter, leave] of [ta, tb] where the centres of ``rows`` may be within R of
    the pieces in the box [xa, xb] x [ya, yb] x [bottom, top] (a block's or a cell's; bottom
    -inf where the solid's walls reach down): in the box grown by R and, for a finite box,
    in the ball of radius R + half its diagonal around its middle (tighter for large R).
    No contact with those pieces outside it."""
    R = cast.R[rows]
    s, u = [x[rows] for x in cast.s], [x[rows] for x in cast.u]
    ex, lx = slab(s[0], u[0], xa - R, xb + R)
    ey, ly = slab(s[1], u[1], ya - R, yb + R)
    ez, lz = slab(s[2], u[2], bottom - R, top + R)
    enter = np.maximum(np.maximum(ex, ey), np.maximum(ez, ta))
    leave = np.minimum(np.minimum(lx, ly), np.minimum(lz, tb))
    bounded = bottom > -np.inf
    half = [0.5 * (xb - xa), 0.5 * (yb - ya), np.where(bounded, 0.5 * (top - bottom), 0.0)]
    reach = np.where(bounded, R + np.sqrt(_dot(half, half)), np.inf)  # unbounded: no ball
    offset = [s[0] - (xa + half[0]), s[1] - (ya + half[1]), s[2] - (top - half[2])]
    closest = -_dot(offset, u)
    miss = [x + closest * y for x, y in zip(offset, u)]
    spare = np.sqrt(reach * reach - _dot(miss, miss))  # NaN: the path misses the ball
    enter = np.fmax(enter, closest - spare)
    leave = np.fmin(leave, closest + spare)
    return np.where(spare >= 0.0, enter, np.inf), leave


def _walk(geometry, cast, rows, t0, t1, best, cell):
    """The first entry of each cast ``rows`` on [t0, t1] into best (and its cell into
    cell), stretch by stretch, all casts together."""
    g = geometry
    ux, uy = cast.u[0][rows], cast.u[1][rows]
    chebyshev = np.maximum(np.abs(ux) / g.dx, np.abs(uy) / g.dy)
    with np.errstate(divide="ignore"):
        step = STRETCH / chebyshev  # inf for vertical casts: one stretch
    ta = t0
    while rows.size:
        tb = np.minimum(ta + step, t1)
        _stretch(g, cast, rows, ta, tb, best, cell)
        going = (best[rows] > tb) & (tb < t1)
        rows, ta, tb, t1, step = (x[going] for x in (rows, ta, tb, t1, step))
        ta = tb


def _stretch(g, cast, rows, ta, tb, best, cell):
    """Test the cells within R of the casts' path over [ta, tb] (module docstring): blocks
    and cells whose box (grown by R) the path meets in [ta, tb] before the best contact so
    far, the cells of each cast in the order the path meets their boxes."""
    R = cast.R[rows]
    ca, cb = cast.at(rows, ta), cast.at(rows, tb)
    i_low, i_high = g.cell_range(
        np.minimum(ca[0], cb[0]) - R, np.maximum(ca[0], cb[0]) + R, g.x0, g.dx, g.nx - 1
    )
    j_low, j_high = g.cell_range(
        np.minimum(ca[1], cb[1]) - R, np.maximum(ca[1], cb[1]) + R, g.y0, g.dy, g.ny - 1
    )
    box = (i_low, i_high, j_low, j_high)
    # Blocks meeting the box, culled by the block max (min).
    bi_low, bi_high = np.floor(i_low / BLOCK), np.floor(i_high / BLOCK)
    bj_low, bj_high = np.floor(j_low / BLOCK), np.floor(j_high / BLOCK)
    across = bi_high - bi_low + 1
    owner, k = _expand(across * (bj_high - bj_low + 1))
    bi = bi_low[owner] + k % across[owner]
    bj = bj_low[owner] + k // across[owner]
    cast_rows = rows[owner]
    first_i, first_j = bi * BLOCK, bj * BLOCK
    last_i = np.minimum(first_i + BLOCK, g.nx - 1)
    last_j = np.minimum(first_j + BLOCK, g.ny - 1)
    block = (bj * g.nbx + bi).astype(np.intp)
    enter, leave = _box_entry(
        g,
        cast,
        cast_rows,
        g.x0 + first_i * g.dx,
        g.x0 + last_i * g.dx,
        g.y0 + first_j * g.dy,
        g.y0 + last_j * g.dy,
        g.block_min[block],
        g.block_max[block],
        ta[owner],
        tb[owner],
    )
    keep = np.flatnonzero((enter <= leave) & (enter <= best[cast_rows]))
    if not keep.size:
        return
    # Each cast's blocks in the order of their bound: the first, then 3, 12, ... more,
    # skipping those whose bound passed the best contact found meanwhile.
    owner, enter = owner[keep], enter[keep]
    blocks = np.stack([first_i[keep], first_j[keep], last_i[keep], last_j[keep]])
    order = np.lexsort((enter, owner))
    owner, enter, blocks = owner[order], enter[order], blocks[:, order]
    rank = _rank(owner)
    limit = 1
    while owner.size:
        now = np.flatnonzero(rank < limit)
        _test_blocks(g, cast, rows, ta, tb, owner[now], blocks[:, now], best, cell, box)
        rest = np.flatnonzero((rank >= limit) & (enter <= best[rows[owner]]))
        owner, enter, blocks, rank = owner[rest], enter[rest], blocks[:, rest], rank[rest]
        limit *= 4


def _rank(owner):
    """Each entry's position within its run of equal (sorted) owners."""
    first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    return np.arange(owner.size) - np.repeat(first, np.diff(np.r_[first, owner.size]))


def _test_blocks(g, cast, rows, ta, tb, owner, blocks, best, cell, box):
    """Test the cells of the blocks (first i, first j, last i, last j) within each cast's
    box (i_low, i_high, j_low, j_high), culled as the blocks were."""
    for which, i, j, index in _cells_of_blocks(g, owner, blocks, box):
        cast_rows = rows[which]
        enter, leave = _box_entry(
            g,
            cast,
            cast_rows,
            g.x0 + i * g.dx,
            g.x0 + (i + 1) * g.dx,
            g.y0 + j * g.dy,
            g.y0 + (j + 1) * g.dy,
            g.cell_min[index],
            g.cell_max[index],
            ta[which],
            tb[which],
        )
        live = np.flatnonzero((enter <= leave) & (enter <= best[cast_rows]))
        if live.size:
            _test_cells(g, cast, cast_rows[live], i[live], j[live], enter[live], best, cell)


def _cells_of_blocks(g, owner, blocks, box):
    """The cells of the blocks (first i, first j, last i, last j) that lie in their owner's
    box (i_low, i_high, j_low, j_high, per owner), in batches of at most PAIRS:
    (owner of each cell, i, j, cell index)."""
    first_i, first_j, last_i, last_j = blocks
    i_low, i_high, j_low, j_high = box
    ci_low = np.maximum(first_i, i_low[owner])
    ci_high = np.minimum(last_i - 1, i_high[owner])
    cj_low = np.maximum(first_j, j_low[owner])
    cj_high = np.minimum(last_j - 1, j_high[owner])
    wide = ci_high - ci_low + 1
    counts = (wide * (cj_high - cj_low + 1)).astype(np.int64)
    for part in _batches(counts):
        sub, k = _expand(counts[part])
        sub = sub + part.start
        i = ci_low[sub] + k % wide[sub]
        j = cj_low[sub] + k // wide[sub]
        yield owner[sub], i, j, (j * (g.nx - 1) + i).astype(np.intp)


def _test_cells(g, cast, rows, i, j, enter, best, cell):
    """Test the pieces of cells (i, j) for the casts ``rows`` (grouped by cast), each cast's
    cells in the order of ``enter`` (a lower bound of their contacts): its first cell, then
    the next 3, 12, ... while their bound is at most the best contact found."""
    order = np.lexsort((enter, rows))
    rows, i, j, enter = rows[order], i[order], j[order], enter[order]
    rank = _rank(rows)
    limit = 1
    while rows.size:
        now = rank < limit
        take = np.flatnonzero(now)
        t = _entries(g, cast, rows[take], i[take], j[take])
        found = np.flatnonzero(t < np.inf)
        if found.size:
            tested, t = rows[take[found]], t[found]
            index = (j[take[found]] * (g.nx - 1) + i[take[found]]).astype(np.int64)
            before = best[tested]
            np.minimum.at(best, tested, t)
            won = (t == best[tested]) & (t < before)
            cell[tested[won]] = index[won]
        rest = np.flatnonzero(~now & (enter <= best[rows]))
        rows, i, j, enter, rank = (x[rest] for x in (rows, i, j, enter, rank))
        limit *= 4


class _Cell:
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


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _accept(t, early):
    """Entries at t >= 0 (at most ``early`` before 0: at 0), else inf."""
    return np.where(t >= -early, np.fmax(t, 0.0), np.inf)


def _entries(g, cast, rows, i, j):
    """The least entry t >= 0 of each cast ``rows`` into the pieces of its cell (i, j)."""
    cell = _Cell(g, i, j)
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
            best = np.fmin(best, np.where(valid, _accept(t, early), np.inf))
        for a, b in cell.edges():
            best = np.fmin(best, _edge_entry(a, b, s, u, R, early))
        for name in ("00", "10", "01", "11"):
            best = np.fmin(best, _vertex_entry(cell.corner(name), s, u, R, early))
        if g.solid:
            best = np.fmin(best, _wall_entries(g, cell, s, u, R, early))
    return best


def _edge_entry(a, b, s, u, R, early):
    """Entry into the cylinder of radius R around the edge a -> b, where its foot is on
    the edge (module docstring)."""
    e = [q - p for p, q in zip(a, b)]
    m = [x - p for x, p in zip(s, a)]
    inverse_ee = 1.0 / _dot(e, e)
    me, ue = _dot(m, e) * inverse_ee, _dot(u, e) * inverse_ee
    m_perp = [x - me * y for x, y in zip(m, e)]
    u_perp = [x - ue * y for x, y in zip(u, e)]
    speed = _dot(u_perp, u_perp)
    closest = -_dot(m_perp, u_perp) / speed
    w = [x + closest * y for x, y in zip(m_perp, u_perp)]
    miss = _dot(w, w)
    t = closest - np.sqrt((R * R - miss) / speed)
    foot = me + t * ue
    valid = (miss <= R * R) & (speed > 0.0) & (foot >= 0.0) & (foot <= 1.0)
    return np.where(valid, _accept(t, early), np.inf)


def _vertex_entry(p, s, u, R, early):
    """Entry into the ball of radius R around the vertex p."""
    m = [x - q for x, q in zip(s, p)]
    closest = -_dot(m, u)
    w = [x + closest * y for x, y in zip(m, u)]
    miss = _dot(w, w)
    t = closest - np.sqrt(R * R - miss)
    return np.where(miss <= R * R, _accept(t, early), np.inf)


def _wall_entries(g, cell, s, u, R, early):
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
        best[rows] = np.fmin(best[rows], np.where(valid, _accept(t, early[rows]), np.inf))
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
        best[rows] = np.fmin(best[rows], np.where(valid, _accept(t, early[rows]), np.inf))
    return best


def _nearest(g, i, j, q):
    """The nearest point of the pieces of cells (i, j) to the points q (components), its
    distance, and an outward normal of the piece where it has one (faces: up; walls: their
    axis; NaN for edges, vertices and corner lines)."""
    cell = _Cell(g, i, j)
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
            off = _dot(n, [a - b for a, b in zip(q, anchor)])
            projection = [x - off * y for x, y in zip(q, n)]
            inside = cell.in_triangle(g, which, projection[0], projection[1])
            offer(np.where(inside, np.abs(off), np.inf), projection, n)
        no_normal = (np.nan, np.nan, np.nan)
        for a, b in cell.edges():
            e = [y - x for x, y in zip(a, b)]
            m = [x - p for x, p in zip(q, a)]
            foot = np.clip(_dot(m, e) / _dot(e, e), 0.0, 1.0)
            nearest = [p + foot * x for p, x in zip(a, e)]
            gap = [x - y for x, y in zip(q, nearest)]
            offer(np.sqrt(_dot(gap, gap)), nearest, no_normal)
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
                offer(np.sqrt(_dot(gap, gap)), nearest, no_normal, rows)
    return point, best, normal


def _overlaps(g, cast):
    """Which starts overlap the terrain (within R of it, or inside the solid), and for
    those the nearest point and the normal (module docstring)."""
    n = cast.n
    s = cast.s
    R = cast.R
    reach = R.copy()  # how far around the start to look for the nearest point
    inside = np.zeros(n, dtype=bool)
    height = None
    if g.solid:
        x1 = g.x0 + (g.nx - 1) * g.dx
        y1 = g.y0 + (g.ny - 1) * g.dy
        in_footprint = (s[0] >= g.x0) & (s[0] <= x1) & (s[1] >= g.y0) & (s[1] <= y1)
        height = _height(g, s[0], s[1])
        inside = in_footprint & (s[2] <= height)
        rows = np.flatnonzero(inside)
        if rows.size:
            # The nearest boundary point is no farther than the surface straight above,
            # nor than each wall's top edge beside the start.
            x, y, z = (c[rows] for c in s)
            bound = height[rows] - z
            for side, gap in (
                ((np.full(rows.size, g.x0), y), x - g.x0),
                ((np.full(rows.size, x1), y), x1 - x),
                ((x, np.full(rows.size, g.y0)), y - g.y0),
                ((x, np.full(rows.size, y1)), y1 - y),
            ):
                rise = np.maximum(z - _height(g, *side), 0.0)
                bound = np.minimum(bound, np.sqrt(gap * gap + rise * rise))
            reach[rows] = bound
    candidate = np.flatnonzero(_near_box(g, cast, reach) | inside)
    point = [np.full(n, np.nan) for _ in range(3)]
    normal = [np.full(n, np.nan) for _ in range(3)]
    nearest = np.full(n, np.inf)
    piece_normal = [np.full(n, np.nan) for _ in range(3)]
    if candidate.size:
        _nearest_around(g, cast, candidate, reach, nearest, point, piece_normal)
    overlap = inside | (nearest <= R)
    rows = np.flatnonzero(overlap)
    if not rows.size:
        return overlap, point, normal
    gap = [s[a][rows] - point[a][rows] for a in range(3)]
    size = nearest[rows]
    inv = 1.0 / np.where(size > 0.0, size, 1.0)
    # Outside: from the point toward the start; inside: the piece's outward normal, or for
    # an edge, vertex or corner line from the start toward the point.
    outside = ~inside[rows]
    for a in range(3):
        toward = gap[a] * inv
        own = piece_normal[a][rows]
        normal[a][rows] = np.where(outside, toward, np.where(np.isnan(own), -toward, own))
    on = np.flatnonzero(size == 0.0)
    if on.size:  # exactly on the terrain: the surface's (or the wall's) normal
        on_rows = rows[on]
        x, y, z = (c[on_rows] for c in s)
        _, grad_u, grad_v, _, _ = surface_at(
            g.terrain._above, "TRIANGLES", (x - g.x0) / g.dx, (y - g.y0) / g.dy
        )
        surface_normal = g.terrain._normal(grad_u, grad_v)
        if g.solid:
            piece = [piece_normal[a][on_rows] for a in range(3)]
            on_wall = (z < _height(g, x, y)) & ~np.isnan(piece[0])
            up = [np.where(on_wall, o, x_) for o, x_ in zip(piece, surface_normal)]
        else:
            facing = _dot(surface_normal, [c[on_rows] for c in cast.u]) > 0.0
            up = [np.where(facing, -x_, x_) for x_ in surface_normal]
        for a in range(3):
            normal[a][on_rows] = up[a]
    return overlap, point, normal


def _height(g, x, y):
    """The surface height at (x, y) (clamped into the footprint)."""
    return surface_at(g.terrain._above, "TRIANGLES", (x - g.x0) / g.dx, (y - g.y0) / g.dy)[0]


def _near_box(g, cast, reach):
    """Whether the start's box grown by ``reach`` meets the footprint."""
    s = cast.s
    x1 = g.x0 + (g.nx - 1) * g.dx
    y1 = g.y0 + (g.ny - 1) * g.dy
    near = (s[0] >= g.x0 - reach) & (s[0] <= x1 + reach)
    near &= (s[1] >= g.y0 - reach) & (s[1] <= y1 + reach)
    if g.solid:
        return near & (s[2] <= g.zmax + reach)
    return near & (s[2] <= g.zmax + reach) & (s[2] >= g.zmin - reach)


def _nearest_around(g, cast, rows, reach, nearest, point, normal):
    """The nearest point of T to the starts ``rows`` among the pieces within ``reach`` of
    them, into nearest, point and normal: the blocks, then the cells, of the box around
    each start whose box of pieces (heights from least to largest; the solid's border:
    down to -inf) is within reach, so a start deep inside the solid looks at the few cells
    near the surface above it, not at every cell within its depth."""
    s = [x[rows] for x in cast.s]
    r = reach[rows]
    i_low, i_high = g.cell_range(s[0] - r, s[0] + r, g.x0, g.dx, g.nx - 1)
    j_low, j_high = g.cell_range(s[1] - r, s[1] + r, g.y0, g.dy, g.ny - 1)
    bi_low, bi_high = np.floor(i_low / BLOCK), np.floor(i_high / BLOCK)
    bj_low, bj_high = np.floor(j_low / BLOCK), np.floor(j_high / BLOCK)
    across = bi_high - bi_low + 1
    counts = (across * (bj_high - bj_low + 1)).astype(np.int64)
    for part in _batches(counts):
        owner, k = _expand(counts[part])
        owner = owner + part.start
        bi = bi_low[owner] + k % across[owner]
        bj = bj_low[owner] + k // across[owner]
        first_i, first_j = bi * BLOCK, bj * BLOCK
        last_i = np.minimum(first_i + BLOCK, g.nx - 1)
        last_j = np.minimum(first_j + BLOCK, g.ny - 1)
        block = (bj * g.nbx + bi).astype(np.intp)
        near = _box_gap(
            g, s, owner, first_i, last_i, first_j, last_j, g.block_min[block], g.block_max[block]
        )
        keep = np.flatnonzero(near <= r[owner])
        owner, first_i, first_j, last_i, last_j = (
            x[keep] for x in (owner, first_i, first_j, last_i, last_j)
        )
        blocks = (first_i, first_j, last_i, last_j)
        box = (i_low, i_high, j_low, j_high)
        for which, i, j, index in _cells_of_blocks(g, owner, blocks, box):
            near = _box_gap(g, s, which, i, i + 1, j, j + 1, g.cell_min[index], g.cell_max[index])
            keep = np.flatnonzero(near <= r[which])
            which, i, j = which[keep], i[keep], j[keep]
            if not which.size:
                continue
            found, distance, piece_normal = _nearest(g, i, j, [x[which] for x in s])
            starts = rows[which]
            before = nearest[starts]
            np.minimum.at(nearest, starts, distance)
            won = np.flatnonzero((distance == nearest[starts]) & (distance < before))
            for a in range(3):
                point[a][starts[won]] = found[a][won]
                normal[a][starts[won]] = piece_normal[a][won]


def _box_gap(g, s, which, i_low, i_high, j_low, j_high, bottom, top):
    """Distance from the starts s[which] to the boxes of cells [i_low, i_high] x [j_low,
    j_high] between heights bottom and top (a lower bound of their pieces' distance)."""
    x, y, z = (c[which] for c in s)
    gap_x = np.maximum(np.maximum(g.x0 + i_low * g.dx - x, x - (g.x0 + i_high * g.dx)), 0.0)
    gap_y = np.maximum(np.maximum(g.y0 + j_low * g.dy - y, y - (g.y0 + j_high * g.dy)), 0.0)
    gap_z = np.maximum(np.maximum(bottom - z, z - top), 0.0)
    return np.sqrt(gap_x * gap_x + gap_y * gap_y + gap_z * gap_z)
