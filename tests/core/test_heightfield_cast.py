"""Sphere cast vs Heightfield terrains (TRIANGLES), solid and surface, against an oracle.

The oracle never walks the grid nor solves an entry. It lists every triangle of a small
terrain (and for the solid every side-wall strip and the vertical lines under the boundary
vertices) and measures the exact distance from a point to the terrain as the least distance
to those pieces (Ericson's closest point on a triangle, by Voronoi regions; zero inside the
solid). Each hit must put the centre at distance R from the terrain, the point on the
terrain at distance R from the centre with the normal along centre - point, and
conservative advancement (steps of distance - R, which never pass a contact) along the path
must arrive at the reported distance and not before; misses must let it run to the end.
A start within R (or inside the solid) must be a hit at 0 with the nearest point.
mpmath (50 digits) measures the contacts of far casts, where float64 cancels.
"""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geometry_queries.core import Heightfield, Placed, raycast, sphere_cast
from geometry_queries.core.backend import use
from geometry_queries.core.heightfield import cast as cast_module
from geometry_queries.core.heightfield import cast_cells, cast_walk
from geometry_queries.core.heightfield.grid import BLOCK as BLOCK_CELLS

mp.mp.dps = 50

# --- the oracle ------------------------------------------------------------------------------


def grid_points(field):
    ny, nx = field.heights.shape
    (x0, y0), (dx, dy) = field.origin, field.spacing
    x = x0 + np.arange(nx) * dx
    y = y0 + np.arange(ny) * dy
    return x, y


_PIECES: dict = {}  # id(field) -> (field, triangles, walls): the oracle's lists, made once


def pieces(field):
    """The terrain's triangles and (solid) wall pieces, listed once per terrain."""
    entry = _PIECES.get(id(field))
    if entry is None or entry[0] is not field:
        entry = _PIECES[id(field)] = (field, list_triangles(field), wall_pieces(field))
    return entry[1], entry[2]


def triangles(field):
    return pieces(field)[0]


def list_triangles(field):
    """Every triangle of the terrain as three (T, 3) arrays of corners."""
    x, y = grid_points(field)
    h = field.heights
    ny, nx = h.shape
    diagonals = np.zeros((ny - 1, nx - 1), bool) if field.diagonals is None else field.diagonals
    corners = []
    for j in range(ny - 1):
        for i in range(nx - 1):
            p00 = (x[i], y[j], h[j, i])
            p10 = (x[i + 1], y[j], h[j, i + 1])
            p01 = (x[i], y[j + 1], h[j + 1, i])
            p11 = (x[i + 1], y[j + 1], h[j + 1, i + 1])
            if diagonals[j, i]:  # split along (i+1, j)-(i, j+1)
                corners += [(p00, p10, p01), (p10, p11, p01)]
            else:
                corners += [(p00, p10, p11), (p00, p11, p01)]
    corners = np.array(corners, dtype=float)
    return corners[:, 0], corners[:, 1], corners[:, 2]


def closest_on_triangles(p, a, b, c):
    """Ericson's closest point on each triangle (a, b, c rows) to each point p: (P, T, 3)."""
    p = p[:, None, :]
    a, b, c = a[None], b[None], c[None]

    def dot(u, v):
        return (u * v).sum(-1)

    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = dot(ab, ap), dot(ac, ap)
    bp = p - b
    d3, d4 = dot(ab, bp), dot(ac, bp)
    cp = p - c
    d5, d6 = dot(ab, cp), dot(ac, cp)
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    va = d3 * d6 - d5 * d4
    with np.errstate(invalid="ignore", divide="ignore"):
        v_ab = d1 / (d1 - d3)
        w_ac = d2 / (d2 - d6)
        w_bc = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        denominator = 1.0 / (va + vb + vc)
        v, w = vb * denominator, vc * denominator
    conditions = [
        (d1 <= 0) & (d2 <= 0),
        (d3 >= 0) & (d4 <= d3),
        (vc <= 0) & (d1 >= 0) & (d3 <= 0),
        (d6 >= 0) & (d5 <= d6),
        (vb <= 0) & (d2 >= 0) & (d6 <= 0),
        (va <= 0) & ((d4 - d3) >= 0) & ((d5 - d6) >= 0),
    ]
    shape = np.broadcast_shapes(p.shape, a.shape)
    choices = [
        np.broadcast_to(a, shape),
        np.broadcast_to(b, shape),
        a + v_ab[..., None] * ab,
        np.broadcast_to(c, shape),
        a + w_ac[..., None] * ac,
        b + w_bc[..., None] * (c - b),
    ]
    inner = a + ab * v[..., None] + ac * w[..., None]
    result = inner
    for condition, choice in zip(conditions[::-1], choices[::-1]):
        result = np.where(condition[..., None], choice, result)
    return result


def segment_distance(p, a, b):
    """Distance from points p (P, 3) to segments a -> b (S, 3): (P, S)."""
    e = b - a
    m = p[:, None, :] - a[None]
    foot = np.clip((m * e[None]).sum(-1) / (e * e).sum(-1)[None], 0.0, 1.0)
    return np.linalg.norm(m - foot[..., None] * e[None], axis=-1)


def wall_pieces(field):
    """The solid's side walls: strips (axis, plane, low, high, h_low, h_high, top_a, top_b)
    under each boundary edge, and the vertical half-lines under each boundary vertex."""
    x, y = grid_points(field)
    h = field.heights
    ny, nx = h.shape
    strips, lines = [], []
    for j in range(ny - 1):
        for i, column in ((0, 0), (nx - 1, nx - 1)):
            strips.append((0, x[i], y[j], y[j + 1], h[j, column], h[j + 1, column]))
    for i in range(nx - 1):
        for j, row in ((0, 0), (ny - 1, ny - 1)):
            strips.append((1, y[j], x[i], x[i + 1], h[row, i], h[row, i + 1]))
    for j in range(ny):
        for i in range(nx):
            if i in (0, nx - 1) or j in (0, ny - 1):
                lines.append((x[i], y[j], h[j, i]))
    return strips, np.array(lines)


def oracle_height(field, px, py):
    """The surface height at (px, py) from a triangle containing it (NaN outside)."""
    a, b, c = triangles(field)
    px, py = np.asarray(px, float)[..., None], np.asarray(py, float)[..., None]
    (x1, y1, z1), (x2, y2, z2), (x3, y3, z3) = a.T, b.T, c.T
    det = (y2 - y3) * (x1 - x3) + (x3 - x2) * (y1 - y3)
    l1 = ((y2 - y3) * (px - x3) + (x3 - x2) * (py - y3)) / det
    l2 = ((y3 - y1) * (px - x3) + (x1 - x3) * (py - y3)) / det
    l3 = 1.0 - l1 - l2
    inside = (l1 >= -1e-12) & (l2 >= -1e-12) & (l3 >= -1e-12)
    height = np.where(inside, l1 * z1 + l2 * z2 + l3 * z3, np.nan)
    return np.nanmax(height, axis=-1, initial=-np.inf, where=inside) * np.where(
        inside.any(axis=-1), 1.0, np.nan
    )


def distance_to_terrain(field, points, boundary=False):
    """float64 distance from each row of ``points`` to the terrain (zero inside the solid
    unless ``boundary``: then to the solid's boundary)."""
    points = np.atleast_2d(np.asarray(points, float))
    a, b, c = triangles(field)
    nearest = np.full(len(points), np.inf)
    for part in range(0, len(points), 256):
        p = points[part : part + 256]
        closest = closest_on_triangles(p, a, b, c)
        d = np.linalg.norm(closest - p[:, None, :], axis=-1).min(axis=1)
        if field.solid:
            strips, lines = pieces(field)[1]
            for axis, plane, low, high, h_low, h_high in strips:
                other = 1 - axis
                along = p[:, other]
                top = h_low + (h_high - h_low) * (along - low) / (high - low)
                on = (along >= low) & (along <= high) & (p[:, 2] <= top)
                d = np.minimum(d, np.where(on, np.abs(p[:, axis] - plane), np.inf))
            below = np.minimum(p[:, None, 2], lines[None, :, 2])
            gap = np.stack(
                [
                    p[:, None, 0] - lines[None, :, 0],
                    p[:, None, 1] - lines[None, :, 1],
                    p[:, None, 2] - below,
                ],
                -1,
            )
            d = np.minimum(d, np.linalg.norm(gap, axis=-1).min(axis=1))
            if not boundary:
                height = oracle_height(field, p[:, 0], p[:, 1])
                d = np.where(p[:, 2] <= height, 0.0, d)
        nearest[part : part + 256] = d
    return nearest


def mp_closest_on_triangle(p, a, b, c):
    """Ericson's closest point in mpmath (one point, one triangle)."""

    def sub(u, v):
        return [x - y for x, y in zip(u, v)]

    def dot(u, v):
        return sum(x * y for x, y in zip(u, v))

    def along(u, s, v):
        return [x + s * y for x, y in zip(u, v)]

    ab, ac, ap = sub(b, a), sub(c, a), sub(p, a)
    d1, d2 = dot(ab, ap), dot(ac, ap)
    if d1 <= 0 and d2 <= 0:
        return a
    bp = sub(p, b)
    d3, d4 = dot(ab, bp), dot(ac, bp)
    if d3 >= 0 and d4 <= d3:
        return b
    vc = d1 * d4 - d3 * d2
    if vc <= 0 and d1 >= 0 and d3 <= 0:
        return along(a, d1 / (d1 - d3), ab)
    cp = sub(p, c)
    d5, d6 = dot(ab, cp), dot(ac, cp)
    if d6 >= 0 and d5 <= d6:
        return c
    vb = d5 * d2 - d1 * d6
    if vb <= 0 and d2 >= 0 and d6 <= 0:
        return along(a, d2 / (d2 - d6), ac)
    va = d3 * d6 - d5 * d4
    if va <= 0 and (d4 - d3) >= 0 and (d5 - d6) >= 0:
        return along(b, (d4 - d3) / ((d4 - d3) + (d5 - d6)), sub(c, b))
    denominator = 1 / (va + vb + vc)
    return along(along(a, vb * denominator, ab), vc * denominator, ac)


def mp_distance_to_triangles(field, point, count=6):
    """mpmath distance from ``point`` (outside) to the terrain: its ``count`` nearest
    triangles (by float64) and, for the solid, its walls."""
    a, b, c = triangles(field)
    closest = closest_on_triangles(np.asarray(point, float)[None], a, b, c)[0]
    order = np.argsort(np.linalg.norm(closest - point, axis=1))[:count]
    p = [mp.mpf(float(x)) for x in point]
    best = None
    for k in order:
        corners = [[mp.mpf(float(x)) for x in v[k]] for v in (a, b, c)]
        q = mp_closest_on_triangle(p, *corners)
        d = mp.sqrt(sum((x - y) ** 2 for x, y in zip(p, q)))
        best = d if best is None else min(best, d)
    if field.solid:  # the walls and the vertical lines under the boundary vertices
        strips, lines = pieces(field)[1]
        for axis, plane, low, high, h_low, h_high in strips:
            low, high, h_low, h_high = (mp.mpf(float(v)) for v in (low, high, h_low, h_high))
            along = p[1 - axis]
            top = h_low + (h_high - h_low) * (along - low) / (high - low)
            if low <= along <= high and p[2] <= top:
                best = min(best, abs(p[axis] - mp.mpf(float(plane))))
        for x, y, h in lines:
            x, y, h = (mp.mpf(float(v)) for v in (x, y, h))
            dz = max(p[2] - h, mp.mpf(0))
            best = min(best, mp.sqrt((p[0] - x) ** 2 + (p[1] - y) ** 2 + dz * dz))
    return best


def advance(field, start, unit, length, reach, steps=200, contact=1e-11):
    """Conservative advancement: t += distance - R from 0 while under ``length`` (the rows
    still moving only). Returns (t, converged)."""
    t = np.zeros(len(start))
    converged = np.zeros(len(start), dtype=bool)
    active = np.arange(len(start))
    for _ in range(steps):
        rows = active
        gap = distance_to_terrain(field, start[rows] + t[rows, None] * unit[rows]) - reach[rows]
        touching = gap <= contact * (1 + reach[rows])
        converged[rows[touching]] = True
        t[rows] = np.where(touching, t[rows], t[rows] + np.maximum(gap, 0.0))
        active = rows[~touching & (t[rows] <= length[rows])]
        if not active.size:
            break
    return t, converged


def check_casts(field, casts, starts, ends, reach, tolerance=1e-10, samples=400):
    """The oracle's checks for every cast (module docstring)."""
    starts, ends = np.atleast_2d(starts), np.atleast_2d(ends)
    n = len(starts)
    reach = np.broadcast_to(np.asarray(reach, float), (n,))
    segment = ends - starts
    length = np.linalg.norm(segment, axis=1)
    unit = segment / np.where(length > 0, length, 1.0)[:, None]
    scale = 1.0 + np.abs(starts).max(axis=1) + np.abs(field.heights).max() + reach
    scale += np.abs(np.asarray(field.origin)).max() + np.asarray(field.spacing).max()
    start_distance = distance_to_terrain(field, starts)
    hit = np.flatnonzero(casts.hit)
    centre_distance = distance_to_terrain(field, casts.center[hit])
    point_distance = distance_to_terrain(field, casts.point[hit], boundary=True)
    for k, row in enumerate(hit):
        tol = tolerance * scale[row]
        center, point, normal = casts.center[row], casts.point[row], casts.normal[row]
        np.testing.assert_allclose(center, starts[row] + casts.distance[row] * unit[row], atol=tol)
        assert point_distance[k] <= tol, f"row {row}: point {point_distance[k]} off the terrain"
        assert abs(np.linalg.norm(normal) - 1) < 1e-12, f"row {row}: normal not unit"
        if casts.distance[row] == 0:
            # Overlap: within R (or inside the solid), the point nearest the start.
            assert start_distance[row] <= reach[row] + tol, f"row {row}: false overlap"
            if start_distance[row] > 0:
                assert abs(np.linalg.norm(point - starts[row]) - start_distance[row]) <= tol
                if start_distance[row] > 1e-6:
                    expected = (starts[row] - point) / start_distance[row]
                    np.testing.assert_allclose(normal, expected, atol=1e-7, err_msg=f"{row}")
            else:
                nearest = distance_to_terrain(field, starts[row], boundary=True)[0]
                assert abs(np.linalg.norm(point - starts[row]) - nearest) <= tol, f"row {row}"
            continue
        gap = centre_distance[k] - reach[row]
        assert abs(gap) <= tol, f"row {row}: centre at distance R + {gap}"
        assert abs(np.linalg.norm(center - point) - reach[row]) <= tol, f"row {row}"
        if reach[row] > 1e-6:
            np.testing.assert_allclose(
                normal, (center - point) / reach[row], atol=1e-8, err_msg=f"row {row}"
            )
    for row in range(n):
        if start_distance[row] < reach[row] - tolerance * scale[row]:
            assert casts.hit[row] and casts.distance[row] == 0, f"row {row}: overlap missed"
        if not casts.hit[row]:
            assert np.isinf(casts.distance[row]) and np.isnan(casts.point[row]).all()
    # Along the path: conservative advancement reaches the reported contact and not before;
    # a miss lets it run through the whole segment (or touch within rounding only).
    moving = np.flatnonzero((length > 0) & ~(casts.hit & (casts.distance == 0)))
    if not moving.size:
        return
    t, converged = advance(field, starts[moving], unit[moving], length[moving], reach[moving])
    for k, row in enumerate(moving):
        if casts.hit[row]:
            assert t[k] <= casts.distance[row] + 1e-9 * scale[row], f"row {row}: overshot"
            if converged[k]:
                assert casts.distance[row] - t[k] <= 1e-6 * scale[row], (
                    f"row {row}: contact at {t[k]} before the reported {casts.distance[row]}"
                )
        elif converged[k] and t[k] <= length[row]:
            near = t[k] + np.linspace(-1e-4, 1e-4, 201)
            deepest = distance_to_terrain(field, starts[row] + near[:, None] * unit[row])
            assert deepest.min() >= reach[row] - 1e-9 * scale[row], f"row {row}: missed a contact"
    for row in np.flatnonzero(casts.hit & (casts.distance > 0)):
        ts = np.linspace(0.0, casts.distance[row], samples, endpoint=False)
        path = distance_to_terrain(field, starts[row] + ts[:, None] * unit[row])
        assert path.min() >= reach[row] - 1e-9 * scale[row], f"row {row}: overlap before contact"


# --- terrains and casts ------------------------------------------------------------------------


def random_terrain(rng, solid, ny=5, nx=6, diagonals=True):
    heights = rng.uniform(-1.0, 1.0, (ny, nx))
    flags = rng.uniform(size=(ny - 1, nx - 1)) < 0.5 if diagonals else None
    return Heightfield(
        heights, spacing=(0.7, 1.3), origin=(-1.2, 0.4), diagonals=flags, solid=solid
    )


def random_casts(rng, field, n, spread=3.0):
    x, y = grid_points(field)
    low = np.array([x[0], y[0], field.zmin]) - spread
    high = np.array([x[-1], y[-1], field.zmax]) + spread
    starts = rng.uniform(low, high, (n, 3))
    targets = rng.uniform(low + spread * 0.8, high - spread * 0.8, (n, 3))
    ends = starts + (targets - starts) * rng.uniform(0.3, 2.0, (n, 1))
    return starts, ends


@pytest.mark.parametrize("solid", [True, False])
@pytest.mark.parametrize("reach", [0.05, 0.4, 1.7])
def test_random_casts_satisfy_the_oracle(solid, reach):
    rng = np.random.default_rng(41 + int(solid) + int(10 * reach))
    field = random_terrain(rng, solid)
    starts, ends = random_casts(rng, field, 150)
    casts = sphere_cast(field, starts, ends, reach)
    assert 30 < casts.hit.sum() < 150
    assert (casts.distance[casts.hit] > 0).sum() > 20
    check_casts(field, casts, starts, ends, reach)


@pytest.mark.parametrize("solid", [True, False])
def test_casts_along_grid_lines_parallel_to_axes_and_vertical(solid):
    """Directions along the axes, from starts on grid lines and vertices; vertical casts
    onto vertices, edges and faces."""
    rng = np.random.default_rng(43)
    field = random_terrain(rng, solid)
    x, y = grid_points(field)
    starts, ends = [], []
    top = field.zmax + 2.0
    for xi in x[::2]:
        for yj in y[::2]:
            for px, py in ((xi, yj), (xi + 0.3, yj), (xi, yj + 0.45)):
                starts.append((px, py, top))
                ends.append((px, py, field.zmin - 3.0))
    for yj in y:
        for z in (field.zmin - 0.5, 0.0, field.zmax - 0.2):
            starts.append((x[0] - 2.0, yj, z))
            ends.append((x[-1] + 2.0, yj, z))
    for xi in x:
        starts.append((xi, y[-1] + 2.0, 0.3))
        ends.append((xi, y[0] - 2.0, 0.3))
    starts, ends = np.array(starts), np.array(ends)
    casts = sphere_cast(field, starts, ends, 0.25)
    assert casts.hit.sum() > len(starts) // 2
    check_casts(field, casts, starts, ends, 0.25)


def test_closed_form_face_ridge_peak_and_valley():
    # A tilted plane: z = 0.3 x - 0.2 y + 1 (every cell's triangles coplanar).
    xs, ys = np.meshgrid(np.arange(5.0), np.arange(4.0))
    plane = Heightfield(0.3 * xs - 0.2 * ys + 1.0)
    normal = np.array([-0.3, 0.2, 1.0]) / np.linalg.norm([-0.3, 0.2, 1.0])
    start, end = np.array([1.7, 1.2, 9.0]), np.array([2.3, 1.9, -5.0])
    unit = (end - start) / np.linalg.norm(end - start)
    on_plane = np.array([0.0, 0.0, 1.0])
    expected = (normal @ (start - on_plane) - 0.5) / -(normal @ unit)
    cast = sphere_cast(plane, start, end, 0.5)
    assert cast.hit and abs(cast.distance - expected) < 1e-12
    np.testing.assert_allclose(cast.normal, normal, atol=1e-12)
    np.testing.assert_allclose(cast.point, cast.center - 0.5 * normal, atol=1e-12)

    # A ridge along the grid line x = 2 (slopes 1 down either side): a vertical cast onto
    # it meets the edge, the centre straight above it at R.
    ridge = Heightfield(2.0 - np.abs(xs - 2.0))
    cast = sphere_cast(ridge, [2.0, 1.5, 10.0], [2.0, 1.5, -10.0], 0.4)
    assert abs(cast.distance - (10.0 - 2.0 - 0.4)) < 1e-12
    np.testing.assert_allclose(cast.point, [2.0, 1.5, 2.0], atol=1e-12)
    np.testing.assert_allclose(cast.normal, [0, 0, 1], atol=1e-12)

    # A peak: one vertex raised by 3 (slopes of 3); a cast along x passing 0.3 over it
    # enters the peak's ball (its edges and faces fall away steeply): centre R from it.
    peak_heights = np.zeros((5, 5))
    peak_heights[2, 2] = 3.0
    peak = Heightfield(peak_heights)
    R = 0.5
    cast = sphere_cast(peak, [-5.0, 2.0, 3.3], [9.0, 2.0, 3.3], R)
    expected = (2.0 + 5.0) - np.sqrt(R * R - 0.3 * 0.3)
    assert abs(cast.distance - expected) < 1e-12
    np.testing.assert_allclose(cast.point, [2, 2, 3], atol=1e-12)
    np.testing.assert_allclose(cast.normal, (cast.center - [2, 2, 3]) / R, atol=1e-12)
    # Straight down onto the peak.
    cast = sphere_cast(peak, [2.0, 2.0, 10.0], [2.0, 2.0, 0.0], R)
    assert abs(cast.distance - (10.0 - 3.0 - R)) < 1e-12
    np.testing.assert_allclose(cast.point, [2, 2, 3], atol=1e-12)

    # A valley (pit line) along y with slopes s: a vertical cast rests on both faces at
    # z = R sqrt(1 + s^2), touching each R s / sqrt(1 + s^2) from the valley line.
    s = 0.75
    valley = Heightfield(s * np.abs(xs - 2.0))
    cast = sphere_cast(valley, [2.0, 1.5, 10.0], [2.0, 1.5, -10.0], R)
    assert abs(cast.distance - (10.0 - R * np.sqrt(1 + s * s))) < 1e-12
    side = R * s / np.sqrt(1 + s * s)
    assert abs(abs(cast.point[0] - 2.0) - side) < 1e-12 and abs(cast.point[1] - 1.5) < 1e-12
    assert abs(cast.point[2] - s * side) < 1e-12


@pytest.mark.parametrize("solid", [True, False])
def test_grazing_a_flat_terrain_and_a_peak(solid):
    flat = Heightfield(np.zeros((4, 4)), solid=solid)
    R = 0.5
    # Level with R above the surface: touches the boundary edge's capsule as its centre
    # comes over it (x = 0), and a hair higher it never touches.
    cast = sphere_cast(flat, [[-3.0, 1.5, R], [-3.0, 1.5, R + 1e-9]], [[9.0, 1.5, R]] * 2, R)
    np.testing.assert_array_equal(cast.hit, [True, False])
    assert abs(cast.distance[0] - 3.0) < 1e-12
    np.testing.assert_allclose(cast.point[0], [0.0, 1.5, 0.0], atol=1e-12)
    np.testing.assert_allclose(cast.normal[0], [0, 0, 1], atol=1e-12)
    # Grazing the top of a peak: tangent to its ball.
    heights = np.zeros((5, 5))
    heights[2, 2] = 2.0
    peak = Heightfield(heights, solid=solid)
    cast = sphere_cast(peak, [[-3, 2, 2 + R], [-3, 2, 2 + R + 1e-9]], [[9, 2, 2 + R]] * 2, R)
    np.testing.assert_array_equal(cast.hit, [True, False])
    assert abs(cast.distance[0] - 5.0) < 1e-12
    np.testing.assert_allclose(cast.point[0], [2, 2, 2], atol=1e-12)


def test_walls_of_the_solid_versus_under_the_edge_of_the_surface():
    heights = np.full((4, 5), 2.0)
    solid, surface = Heightfield(heights), Heightfield(heights, solid=False)
    R = 0.5
    starts = np.array([[-4.0, 1.5, z] for z in (0.0, 1.2, 1.7, 2.3)])
    ends = starts + [12.0, 0.0, 0.0]
    # The solid: a wall at x = 0 under the edge (z = 2); the centre stops R before it.
    cast = sphere_cast(solid, starts, ends, R)
    assert cast.hit.all()
    np.testing.assert_allclose(cast.distance[:3], [3.5] * 3, atol=1e-12)
    np.testing.assert_allclose(cast.normal[:3], [[-1, 0, 0]] * 3, atol=1e-12)
    np.testing.assert_allclose(cast.point[:3], [[0, 1.5, z] for z in (0, 1.2, 1.7)], atol=1e-12)
    # Centre 0.3 above the edge: it meets the edge's capsule.
    expected = 4.0 - np.sqrt(R * R - 0.3 * 0.3)
    assert abs(cast.distance[3] - expected) < 1e-12
    np.testing.assert_allclose(cast.point[3], [0, 1.5, 2.0], atol=1e-12)
    # The surface: the first two pass under the sheet (2 - z > R), the third touches the
    # edge's capsule from below (0.3 under it), the fourth from above, as the solid's.
    cast = sphere_cast(surface, starts, ends, R)
    np.testing.assert_array_equal(cast.hit, [False, False, True, True])
    np.testing.assert_allclose(cast.distance[2:], [expected] * 2, atol=1e-12)
    np.testing.assert_allclose(cast.point[2:], [[0, 1.5, 2]] * 2, atol=1e-12)
    np.testing.assert_allclose(cast.normal[2:], (cast.center[2:] - [0, 1.5, 2]) / R, atol=1e-12)
    assert cast.normal[2][2] < 0 < cast.normal[3][2]  # from below, from above
    check_casts(surface, cast, starts, ends, R)
    check_casts(solid, sphere_cast(solid, starts, ends, R), starts, ends, R)
    # At the footprint's corner: the vertical line under the corner vertex.
    # (The path y = x + 0.8 passes 0.57 from it, entering no wall's span first.)
    corner = sphere_cast(solid, [-2.0, -1.2, 0.0], [2.0, 2.8, 0.0], 1.0)
    assert corner.hit and corner.distance > 0
    assert abs(np.hypot(*corner.center[:2]) - 1.0) < 1e-12  # R from the corner line
    np.testing.assert_allclose(corner.point, [0, 0, 0], atol=1e-12)


def test_casts_from_below_a_surface():
    rng = np.random.default_rng(44)
    field = random_terrain(rng, solid=False)
    x, y = grid_points(field)
    n = 60
    starts = np.column_stack(
        [rng.uniform(x[0], x[-1], n), rng.uniform(y[0], y[-1], n), np.full(n, field.zmin - 2)]
    )
    ends = starts + np.column_stack([rng.normal(0, 0.5, (n, 2)), np.full(n, 6.0)])
    casts = sphere_cast(field, starts, ends, 0.3)
    assert casts.hit.sum() > n * 0.8
    assert (casts.normal[casts.hit][:, 2] < 0).all()  # facing down, toward the centre
    check_casts(field, casts, starts, ends, 0.3)


def test_starts_in_overlap():
    heights = np.zeros((5, 6))
    heights[2, 3] = 1.0
    solid, surface = Heightfield(heights), Heightfield(heights, solid=False)
    R = 0.5
    # Above, within R of a face: the nearest point straight below, normal up.
    cast = sphere_cast(solid, [0.6, 0.7, 0.3], [5, 4, 3], R)
    assert cast.hit and cast.distance == 0
    np.testing.assert_array_equal(cast.center, [0.6, 0.7, 0.3])
    np.testing.assert_allclose(cast.point, [0.6, 0.7, 0.0], atol=1e-15)
    np.testing.assert_allclose(cast.normal, [0, 0, 1], atol=1e-15)
    # Within R of the peak's vertex (above it): point = the vertex.
    start = np.array([3.0, 2.0, 1.3])
    cast = sphere_cast(surface, start, start + [1, 0, 0], R)
    assert cast.distance == 0
    np.testing.assert_allclose(cast.point, [3, 2, 1], atol=1e-15)
    np.testing.assert_allclose(cast.normal, (start - [3, 2, 1]) / np.linalg.norm(start - [3, 2, 1]))
    # Inside the solid, nearer the wall x = 0 than the surface: the wall point, outward.
    cast = sphere_cast(solid, [0.2, 1.5, -1.0], [3, 1.5, -1.0], R)
    assert cast.distance == 0
    np.testing.assert_allclose(cast.point, [0, 1.5, -1.0], atol=1e-15)
    np.testing.assert_allclose(cast.normal, [-1, 0, 0], atol=1e-15)
    # Deep inside, under the middle: the surface straight above.
    cast = sphere_cast(solid, [1.5, 1.6, -0.3], [1.5, 1.6, 5], R)
    np.testing.assert_allclose(cast.point, [1.5, 1.6, 0.0], atol=1e-15)
    np.testing.assert_allclose(cast.normal, [0, 0, 1], atol=1e-15)
    # Below the surface within R: point above, normal down (toward the start).
    cast = sphere_cast(surface, [1.5, 1.6, -0.3], [1.5, 1.6, -5], R)
    assert cast.distance == 0
    np.testing.assert_allclose(cast.point, [1.5, 1.6, 0.0], atol=1e-15)
    np.testing.assert_allclose(cast.normal, [0, 0, -1], atol=1e-15)
    # Exactly on the surface: the surface's normal facing against the cast; the solid's
    # outward normal.
    for field, direction, expected in (
        (surface, [0.3, 0, 1], [0, 0, -1]),
        (surface, [0.3, 0, -1], [0, 0, 1]),
        (solid, [0.3, 0, 1], [0, 0, 1]),
        (solid, [0.3, 0, -1], [0, 0, 1]),
    ):
        cast = sphere_cast(field, [1.5, 1.6, 0.0], np.add([1.5, 1.6, 0.0], direction), R)
        assert cast.hit and cast.distance == 0
        np.testing.assert_array_equal(cast.point, [1.5, 1.6, 0.0])
        np.testing.assert_allclose(cast.normal, expected, atol=1e-15)
    # On the solid's wall: its outward normal.
    cast = sphere_cast(solid, [5.0, 1.5, -2.0], [7.0, 1.5, -2.0], R)
    np.testing.assert_allclose(cast.normal, [1, 0, 0], atol=1e-15)
    np.testing.assert_allclose(cast.point, [5.0, 1.5, -2.0], atol=1e-15)


@pytest.mark.parametrize("solid", [True, False])
def test_random_starts_in_and_near_overlap(solid):
    rng = np.random.default_rng(45)
    field = random_terrain(rng, solid)
    x, y = grid_points(field)
    n = 120
    xy = np.column_stack(
        [rng.uniform(x[0] - 0.5, x[-1] + 0.5, n), rng.uniform(y[0] - 0.5, y[-1] + 0.5, n)]
    )
    z = oracle_height(field, np.clip(xy[:, 0], x[0], x[-1]), np.clip(xy[:, 1], y[0], y[-1]))
    starts = np.column_stack([xy, z + rng.uniform(-0.8, 0.8, n)])
    ends = starts + rng.normal(size=(n, 3))
    casts = sphere_cast(field, starts, ends, 0.35)
    assert (casts.distance == 0).sum() > n // 4
    check_casts(field, casts, starts, ends, 0.35)


def test_far_starts_are_exact_in_mpmath():
    rng = np.random.default_rng(46)
    for solid in (True, False):
        field = random_terrain(rng, solid)
        x, y = grid_points(field)
        n = 20
        targets = np.column_stack(
            [rng.uniform(x[0], x[-1], n), rng.uniform(y[0], y[-1], n), np.full(n, field.zmin)]
        )
        away = rng.normal(size=(n, 3))
        away[:, 2] = np.abs(away[:, 2]) + 0.5
        away /= np.linalg.norm(away, axis=1)[:, None]
        starts = targets + 1e4 * away
        ends = targets - 2.0 * away
        R = 0.6
        casts = sphere_cast(field, starts, ends, R)
        # (A surface may be passed under: a path entering the footprint below its edge.)
        assert casts.hit.all() if solid else casts.hit.sum() > n - 4
        for row in np.flatnonzero(casts.hit):
            gap = mp_distance_to_triangles(field, casts.center[row]) - R
            # The centre lies ~1e4 * 2^-53 from where float64 puts it: R to ~1e-12.
            assert abs(gap) < 1e-11, f"row {row}: centre at R + {float(gap)}"
        check_casts(field, casts, starts, ends, R, tolerance=1e-12, samples=100)


@pytest.mark.parametrize("solid", [True, False])
def test_zero_radius_equals_the_ray_clipped_to_the_segment(solid):
    rng = np.random.default_rng(47)
    field = random_terrain(rng, solid)
    starts, ends = random_casts(rng, field, 300)
    if solid:  # starts outside the solid (inside, a cast reports the nearest boundary)
        outside = distance_to_terrain(field, starts) > 0
        starts, ends = starts[outside], ends[outside]
    casts = sphere_cast(field, starts, ends, 0.0)
    length = np.linalg.norm(ends - starts, axis=1)
    rays = raycast(field, starts, ends - starts, max_distance=length)
    np.testing.assert_array_equal(casts.hit, rays.hit)
    assert casts.hit.any() and not casts.hit.all()
    # (Equal on the numpy backend; the compiled ray kernel rounds its own way.)
    np.testing.assert_allclose(casts.distance[casts.hit], rays.distance[rays.hit], atol=1e-12)
    np.testing.assert_allclose(casts.point[casts.hit], rays.point[rays.hit], atol=1e-12)
    np.testing.assert_allclose(casts.normal[casts.hit], rays.normal[rays.hit], atol=1e-12)
    np.testing.assert_array_equal(casts.center, casts.point)


def test_zero_length_casts():
    field = Heightfield(np.zeros((3, 3)))
    starts = np.array([[1.0, 1.0, 0.4], [1.0, 1.0, 0.6], [1.0, 1.0, -3.0], [5.0, 1.0, 0.0]])
    casts = sphere_cast(field, starts, starts, 0.5)
    np.testing.assert_array_equal(casts.hit, [True, False, True, False])
    np.testing.assert_array_equal(casts.distance[[0, 2]], [0, 0])
    np.testing.assert_allclose(casts.point[0], [1, 1, 0])
    surface = Heightfield(np.zeros((3, 3)), solid=False)
    casts = sphere_cast(surface, starts, starts, 0.5)
    np.testing.assert_array_equal(casts.hit, [True, False, False, False])
    # On the surface with no direction: the up normal.
    cast = sphere_cast(surface, [1.0, 1.0, 0.0], [1.0, 1.0, 0.0], 0.0)
    assert cast.hit and cast.distance == 0
    np.testing.assert_array_equal(cast.normal, [0, 0, 1])


def test_diagonals_decide_the_contact():
    """One cell, its corners (0, 0) and (1, 1) high and the others low: split along
    (0,0)-(1,1) it is a ridge, along (1,0)-(0,1) a valley; a vertical cast over the middle
    meets the ridge's edge, or rests in the valley."""
    heights = np.array([[1.0, 0.0], [0.0, 1.0]])
    R = 0.2
    start, end = [0.5, 0.5, 5.0], [0.5, 0.5, -5.0]
    ridge = sphere_cast(Heightfield(heights, diagonals=[[False]]), start, end, R)
    valley = sphere_cast(Heightfield(heights, diagonals=[[True]]), start, end, R)
    assert abs(ridge.distance - (5.0 - 1.0 - R)) < 1e-12
    np.testing.assert_allclose(ridge.point, [0.5, 0.5, 1.0], atol=1e-12)
    assert valley.distance > ridge.distance + 0.5
    for flags in ([[False]], [[True]]):
        field = Heightfield(heights, diagonals=flags)
        casts = sphere_cast(field, [start], [end], R)
        check_casts(field, casts, np.array([start]), np.array([end]), R)


def rigid_check(field, matrix, casts, starts, ends, reach):
    """check_casts for a terrain placed by the rigid ``matrix`` (a rotation, maybe with a
    mirror): the casts and their results moved back into the terrain's frame, where the
    oracle measures (a rigid motion keeps every distance)."""
    rotation, translation = matrix[:3, :3], matrix[:3, 3]
    assert np.allclose(rotation.T @ rotation, np.eye(3), atol=1e-12)

    def local(points):
        return (np.atleast_2d(points) - translation) @ rotation

    moved = type(casts)(
        hit=casts.hit,
        distance=casts.distance,
        center=local(casts.center),
        point=local(casts.point),
        normal=np.atleast_2d(casts.normal) @ rotation,
    )
    check_casts(field, moved, local(starts), local(ends), reach)


def rotation_matrix(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def test_placed_scale_folds_into_a_bigger_terrain_exactly():
    rng = np.random.default_rng(48)
    heights = rng.uniform(-1, 1, (6, 7))
    flags = rng.uniform(size=(5, 6)) < 0.5
    small = Heightfield(heights, spacing=(1.0, 1.5), origin=(0.5, -1.0), diagonals=flags)
    big = Heightfield(heights * 10, spacing=(100.0, 150.0), origin=(50.0, -100.0), diagonals=flags)
    placed = Placed(small, np.diag([100.0, 100.0, 10.0, 1.0]))
    starts = rng.uniform([-100, -300, -20], [700, 800, 30], (200, 3))
    ends = rng.uniform([0, -200, -15], [600, 700, 15], (200, 3))
    expected = sphere_cast(big, starts, ends, 7.0)
    found = sphere_cast(placed, starts, ends, 7.0)
    assert expected.hit.sum() > 50
    for name in ("hit", "distance", "center", "point", "normal"):
        np.testing.assert_array_equal(getattr(found, name), getattr(expected, name), name)


def test_a_placement_is_folded_once_per_terrain_and_again_when_it_changes():
    """A new Placed with the same matrix reuses the terrain's last fold (the folded copy and
    the arrays its casts built); another matrix folds anew; the identity folds nothing."""
    rng = np.random.default_rng(50)
    field = random_terrain(rng, False)
    matrix = np.eye(4)
    matrix[:3, :3] = rotation_matrix([0.2, 0.1, 1.0], 0.7) @ np.diag([2.0, 3.0, 0.5])
    matrix[:3, 3] = [1.0, -2.0, 0.5]
    starts, ends = (
        local @ matrix[:3, :3].T + matrix[:3, 3] for local in random_casts(rng, field, 40)
    )
    first = sphere_cast(Placed(field, matrix), starts, ends, 0.2)
    assert first.hit.sum() > 10
    folded = Placed(field, matrix)._folded()
    assert Placed(field, matrix.copy())._folded() is folded
    again = sphere_cast(Placed(field, matrix.copy()), starts, ends, 0.2)
    for name in ("hit", "distance", "center", "point", "normal"):
        np.testing.assert_array_equal(getattr(again, name), getattr(first, name), name)
    moved = matrix.copy()
    moved[2, 3] += 1.0
    assert Placed(field, moved)._folded() is not folded
    assert Placed(field, np.eye(4))._folded() is field
    unfolded = Heightfield(
        field.heights,
        spacing=field.spacing,
        origin=field.origin,
        diagonals=field.diagonals,
        solid=False,
    )
    fresh = sphere_cast(Placed(unfolded, matrix), starts, ends, 0.2)
    for name in ("hit", "distance", "center", "point", "normal"):
        np.testing.assert_array_equal(getattr(fresh, name), getattr(first, name), name)


@pytest.mark.parametrize("solid", [True, False])
def test_placed_mirror_keeps_the_solid_below_and_rotation_is_rigid(solid):
    rng = np.random.default_rng(49)
    field = random_terrain(rng, solid)
    scale = np.diag([2.0, 0.5, 3.0])
    scaled = Heightfield(
        field.heights * 3.0,
        spacing=(field.spacing[0] * 2.0, field.spacing[1] * 0.5),
        origin=(field.origin[0] * 2.0, field.origin[1] * 0.5),
        diagonals=field.diagonals,
        solid=solid,
    )
    mirror = np.diag([-1.0, 1.0, 1.0])
    for rotation in (mirror, rotation_matrix([0.3, -0.5, 0.8], 1.1) @ mirror):
        rigid = np.eye(4)
        rigid[:3, :3] = rotation
        rigid[:3, 3] = [0.4, -2.0, 1.5]
        matrix = rigid.copy()
        matrix[:3, :3] = rotation @ scale
        placed = Placed(field, matrix)
        local_starts, local_ends = random_casts(rng, scaled, 80)
        starts = local_starts @ rotation.T + rigid[:3, 3]
        ends = local_ends @ rotation.T + rigid[:3, 3]
        casts = sphere_cast(placed, starts, ends, 0.3)
        assert casts.hit.sum() > 30
        rigid_check(scaled, rigid, casts, starts, ends, 0.3)
    # Mirrored in x: the solid stays below; mirrored in z: the solid is above, in the world.
    for flip, inside in (([-1, 1, 1], [-1.0, 1.0, -0.7]), ([1, 1, -1], [1.0, 1.0, 0.7])):
        placed = Placed(Heightfield(np.zeros((3, 3)), solid=solid), np.diag(flip + [1]))
        cast = sphere_cast(placed, inside, np.multiply(inside, [1, 1, 3]), 0.5)
        assert cast.hit == solid  # inside the solid: a hit at 0; a surface 0.7 away: none
        if solid:
            assert cast.distance == 0
            np.testing.assert_allclose(cast.point, [inside[0], 1.0, 0.0], atol=1e-15)
            np.testing.assert_allclose(cast.normal, [0, 0, flip[2]], atol=1e-15)


def test_sheared_terrains_and_bilinear_or_march_are_refused():
    field = Heightfield(np.zeros((3, 3)))
    shear = np.eye(4)
    shear[0, 1] = 0.5
    with pytest.raises(ValueError, match="a sheared terrain is not a terrain"):
        sphere_cast(Placed(field, shear), [0, 0, 5], [0, 0, -5], 0.1)
    # A scale along axes other than the terrain's own (rotate, scale, rotate back).
    turn = np.eye(4)
    turn[:3, :3] = rotation_matrix([0, 0, 1], 0.5)
    skew = turn @ np.diag([2.0, 1.0, 1.0, 1.0]) @ turn.T
    with pytest.raises(ValueError, match="a sheared terrain is not a terrain"):
        sphere_cast(Placed(field, skew), [0, 0, 5], [0, 0, -5], 0.1)
    bilinear = Heightfield(np.zeros((3, 3)), surface="BILINEAR")
    with pytest.raises(ValueError, match="TRIANGLES terrains.*bilinear patch has no closed"):
        sphere_cast(bilinear, [0, 0, 5], [0, 0, -5], 0.1)
    with pytest.raises(ValueError, match="TRIANGLES terrains.*bilinear patch has no closed"):
        sphere_cast(Placed(bilinear, np.diag([2.0, 2, 2, 1])), [0, 0, 5], [0, 0, -5], 0.1)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    solid=st.booleans(),
    shape=st.tuples(st.integers(2, 5), st.integers(2, 5)),
    reach=st.sampled_from([0.0, 0.01, 0.3, 1.0, 3.0]),
    relief=st.sampled_from([0.0, 0.5, 3.0]),
)
def test_property_random_terrains_and_casts(seed, solid, shape, reach, relief):
    rng = np.random.default_rng(seed)
    heights = np.round(rng.uniform(-relief, relief, shape) * 8) / 8  # ties and flat parts
    flags = rng.uniform(size=(shape[0] - 1, shape[1] - 1)) < 0.5
    field = Heightfield(
        heights, spacing=(0.8, 1.1), origin=(0.3, -0.2), diagonals=flags, solid=solid
    )
    starts, ends = random_casts(rng, field, 12, spread=2.0 + reach)
    # Some casts straight down, some level, starting on grid lines.
    starts[:3, :2] = np.round(starts[:3, :2])
    ends[:3, :2] = starts[:3, :2]
    ends[3:6, 2] = starts[3:6, 2]
    casts = sphere_cast(field, starts, ends, reach)
    check_casts(field, casts, starts, ends, reach, samples=100)


@pytest.mark.parametrize("solid", [True, False])
def test_long_shallow_casts_over_many_stretches(solid, monkeypatch):
    """Casts crossing many blocks and stretches at shallow angles (the traversal's stop
    rule and culling), and large radii covering many cells at once; the answers do not
    depend on the stretches' length."""
    rng = np.random.default_rng(50)
    heights = np.cumsum(np.cumsum(rng.normal(0, 0.15, (12, 34)), axis=0), axis=1) * 0.3
    field = Heightfield(heights, spacing=(0.9, 1.1), origin=(-3.0, 2.0), solid=solid)
    x, y = grid_points(field)
    n = 15
    starts = np.column_stack(
        [rng.uniform(x[0] - 3, x[0] + 2, n), rng.uniform(y[0], y[-1], n), np.zeros(n)]
    )
    starts[:, 2] = field.zmax + rng.uniform(0.5, 2.0, n)
    ends = np.column_stack(
        [np.full(n, x[-1] + 3), rng.uniform(y[0], y[-1], n), rng.uniform(field.zmin, 0.0, n)]
    )
    starts[n // 2 :, :2], ends[n // 2 :, :2] = ends[n // 2 :, :2], starts[n // 2 :, :2].copy()
    reach = np.where(np.arange(n) % 3 == 0, 2.5, np.where(np.arange(n) % 3 == 1, 0.6, 0.15))
    casts = sphere_cast(field, starts, ends, reach)
    assert casts.hit.sum() > n // 2
    assert (casts.distance[casts.hit] > 2 * BLOCK_CELLS).sum() > 3  # past the first stretches
    check_casts(field, casts, starts, ends, reach, samples=150)
    with use("numpy"):
        monkeypatch.setattr(cast_walk, "STRETCH", 0.3)
        short = sphere_cast(field, starts, ends, reach)
        monkeypatch.undo()
        default = sphere_cast(field, starts, ends, reach)
    for name in ("hit", "distance", "point", "normal"):
        np.testing.assert_array_equal(getattr(short, name), getattr(default, name), name)


@pytest.mark.parametrize("solid", [True, False])
def test_traversal_finds_what_testing_every_cell_finds(solid):
    """The numpy reference's culling and stop rule lose nothing: on a larger terrain, its
    contacts equal the least entry over every cell's pieces (the same piece tests, all
    cells)."""
    rng = np.random.default_rng(51 + solid)
    ny, nx = 36, 44
    heights = np.cumsum(rng.normal(0, 0.3, (ny, nx)), axis=1) + rng.normal(0, 0.3, (ny, nx))
    flags = rng.uniform(size=(ny - 1, nx - 1)) < 0.5
    field = Heightfield(heights, (0.7, 1.3), (1.0, -2.0), diagonals=flags, solid=solid)
    x, y = grid_points(field)
    low = np.array([x[0] - 5, y[0] - 5, field.zmin - 3])
    high = np.array([x[-1] + 5, y[-1] + 5, field.zmax + 3])
    n = 150
    starts, ends = rng.uniform(low, high, (n, 3)), rng.uniform(low, high, (n, 3))
    ends[::2, 2] = starts[::2, 2] + rng.normal(0, 1.0, n // 2)  # shallow ones, many stretches
    reach = rng.choice([0.05, 0.5, 3.0], n)
    with use("numpy"):
        casts = sphere_cast(field, starts, ends, reach)
    length = np.linalg.norm(ends - starts, axis=1)
    unit = (ends - starts) / length[:, None]
    cast = cast_module._Casts(list(starts.T), list(unit.T), reach, length)
    cells = np.stack(np.meshgrid(np.arange(nx - 1.0), np.arange(ny - 1.0)), -1).reshape(-1, 2)
    rows = np.repeat(np.arange(n), len(cells))
    with np.errstate(invalid="ignore", divide="ignore"):
        entries = cast_cells.cell_entries(
            cast_module._Geometry(field), cast, rows, *np.tile(cells, (n, 1)).T
        ).reshape(n, -1)
    every = entries.min(axis=1)
    every[every > length] = np.inf
    moving = casts.distance != 0  # (starts in overlap are decided before any walk)
    assert casts.hit[moving].sum() > 40
    np.testing.assert_allclose(casts.distance[moving], every[moving], rtol=1e-12, atol=0)


@pytest.mark.parametrize("solid", [True, False])
def test_float32_largest_height_raises_no_warning(solid):
    """A vertex at float32's largest value (where an inf height was stored as float32):
    every terrain query runs without a numpy warning (the kernel's float32 extremes round
    it outward to inf), and casts and rays two cells or more from it answer as on the
    terrain without it."""
    import warnings

    from geometry_queries.core import occluded, raycast_all

    rng = np.random.default_rng(90 + solid)
    heights = rng.uniform(0, 2, (12, 13))
    spiked = heights.copy()
    spiked[5, 6] = np.finfo(np.float32).max
    field = Heightfield(spiked, (0.5, 0.75), (-1, 2), solid=solid)
    plain = Heightfield(heights, (0.5, 0.75), (-1, 2), solid=solid)
    # over cells two or more from the spike's (x 1.5 to 2, y 5.75 to 6.5), 0.25 wide
    x = rng.uniform(-0.5, 4.5, 400)
    y = rng.uniform(2.5, 9.75, 400)
    far = (np.abs(x - 2) > 1.4) | (np.abs(y - 5.75) > 2.1)
    starts = np.column_stack([x, y, np.full(400, 4.0)])[far]
    ends = starts + np.column_stack(
        [rng.uniform(-0.2, 0.2, (len(starts), 2)), np.full(len(starts), -6.0)]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        casts = sphere_cast(field, starts, ends, 0.1)
        rays = raycast(field, starts, ends - starts)
        blocked = occluded(field, starts, ends)
        records = raycast_all(field, starts, ends - starts)
        spike = raycast(field, [1.99, 5.76, 1e39], [0, 0, -1])
        spike_cast = sphere_cast(field, [2.0, 5.75, 1e39], [2.0, 5.75, 0.0], 0.2)
    expected_casts = sphere_cast(plain, starts, ends, 0.1)
    expected_rays = raycast(plain, starts, ends - starts)
    assert casts.hit.all() and rays.hit.all() and blocked.all()
    assert casts.distance == pytest.approx(expected_casts.distance, abs=1e-9)
    assert rays.distance == pytest.approx(expected_rays.distance, abs=1e-9)
    assert records.distance[np.r_[True, np.diff(records.ray) > 0]] == pytest.approx(
        rays.distance, abs=1e-9
    )
    assert spike.hit.all() and spike_cast.hit.all()
