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
stretches of cast_walk.STRETCH cells of horizontal travel, all casts together (cast_walk.py;
the pieces' tests: cast_cells.py). In a stretch [ta, tb] the cells within R of the path lie
in the stretch's xy box grown by R. The pieces of a block (then of a cell) lie in its box:
its xy rectangle between its least and largest height (the solid's border cells: down to
-inf, for the walls), so the centre can touch them only inside that box grown by R and, for
a bounded box, inside the ball of radius R + half its diagonal around its middle: a slab and
a sphere interval of t, whose start bounds every contact with those pieces from below.
Blocks, then cells, whose interval misses [ta, tb] or starts after the best contact so far
are skipped; each cast takes its remaining blocks, and their cells, in the order of that
bound (the first, then 3 more, 12 more, ...), skipping those whose bound passed the best
contact found meanwhile. A contact found at or before tb is the first: a piece not yet
tested is farther than R in xy from the path before tb. Every entry found is a real contact,
so the answer is the least of them whatever the stretches (both backends may cut them
differently).
"""

from __future__ import annotations

import numpy as np

from . import ray
from .cast_cells import cell_nearest, dot
from .cast_walk import cells_of_blocks, rectangles, walk
from .grid import BLOCK, slab
from .surfaces import surface_at

MARGIN = 1e-9  # grid units added to a box before it is rounded to cells


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
        walk(geometry, cast, rows, t0, t1, best, cell)
        found = np.flatnonzero(best <= cast.length)
        if found.size:
            t = best[found]
            centre = [cast.s[a][found] + t * cast.u[a][found] for a in range(3)]
            index = cell[found]
            near_point, _, _ = cell_nearest(
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
        # The size of the coordinates near the terrain (for cast_cells.EARLY).
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
            facing = dot(surface_normal, [c[on_rows] for c in cast.u]) > 0.0
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
    for owner, bi, bj in rectangles(bi_low, bi_high, bj_low, bj_high):
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
        for which, i, j, index in cells_of_blocks(g, owner, blocks, box):
            near = _box_gap(g, s, which, i, i + 1, j, j + 1, g.cell_min[index], g.cell_max[index])
            keep = np.flatnonzero(near <= r[which])
            which, i, j = which[keep], i[keep], j[keep]
            if not which.size:
                continue
            found, distance, piece_normal = cell_nearest(g, i, j, [x[which] for x in s])
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
