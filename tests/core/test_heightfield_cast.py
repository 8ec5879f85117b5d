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

from core import Heightfield, sphere_cast

mp.mp.dps = 50

# --- the oracle ------------------------------------------------------------------------------


def grid_points(field):
    ny, nx = field.heights.shape
    (x0, y0), (dx, dy) = field.origin, field.spacing
    x = x0 + np.arange(nx) * dx
    y = y0 + np.arange(ny) * dy
    return x, y


def triangles(field):
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
    """The surface height at (px, py) from the triangle containing it (NaN outside)."""
    a, b, c = triangles(field)
    height = np.full(np.shape(px), np.nan)
    for k in range(len(a)):
        (x1, y1, z1), (x2, y2, z2), (x3, y3, z3) = a[k], b[k], c[k]
        det = (y2 - y3) * (x1 - x3) + (x3 - x2) * (y1 - y3)
        l1 = ((y2 - y3) * (px - x3) + (x3 - x2) * (py - y3)) / det
        l2 = ((y3 - y1) * (px - x3) + (x1 - x3) * (py - y3)) / det
        l3 = 1.0 - l1 - l2
        inside = (l1 >= -1e-12) & (l2 >= -1e-12) & (l3 >= -1e-12) & np.isnan(height)
        height = np.where(inside, l1 * z1 + l2 * z2 + l3 * z3, height)
    return height


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
            strips, lines = wall_pieces(field)
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
    """mpmath distance from ``point`` to the terrain's ``count`` nearest triangles (by
    float64), enough where the nearest piece is a triangle."""
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
    return best


def advance(field, start, unit, length, reach, steps=3000, contact=1e-11):
    """Conservative advancement: t += distance - R from 0 while under ``length``."""
    t = np.zeros(len(start))
    converged = np.zeros(len(start), dtype=bool)
    for _ in range(steps):
        gap = distance_to_terrain(field, start + t[:, None] * unit) - reach
        converged |= gap <= contact * (1 + reach)
        active = ~converged & (t <= length)
        if not active.any():
            break
        t = np.where(active, t + np.maximum(gap, 0.0), t)
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
