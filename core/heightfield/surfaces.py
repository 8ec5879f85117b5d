"""One cell's surface along a ray: where a ray first touches it, and its height and slope.

Math. Along a ray ``p(t) = o + t d`` let ``g(t) = z(t) - h(U(t), V(t))``; a ray above the
surface hits it at the first t with ``g <= 0`` inside the footprint (for the solid that is
also the first point in the solid). Clip the ray to the footprint box between the heights
(the box entry ``t0`` is a side wall, the top or the origin). Inside one cell ``g`` is
piecewise linear with at most one kink, where the ray crosses the diagonal (``w = u - v`` is
linear in t, so the kink is at ``t_m = t_a - w_a / w'``); on each piece the first root of a
linear function is ``t_a + g(t_a) / -g'``, with no cancellation since g(t_a) > 0 > g'. For
BILINEAR, ``g(t_a + s) = g0 + g1 s + g2 s^2`` with ``g2 = -c du dv``: the smallest root in
the cell's interval, from the stable quadratic ``q = -(g1 + sign(g1) sqrt(g1^2 - 4 g2 g0))
/ 2``, roots ``q / g2`` and ``g0 / q``. Because the surface is continuous and the cells a
ray visits cover its whole path, testing each visited cell on its closed interval
``[t_enter, t_exit]`` cannot miss: a ray through a vertex or along a grid line is tested
at that point by the cells on both sides.

The tests work on the walk state of many rays at once (walk.py): each ray in its cell
(i, j) on its stretch [ta, tb]. A ray below a surface is tested against the mirror
image, so every test looks for the first point at or below the surface (within the
cell's tolerance), and a crossing inside the tolerance band is still solved exactly.
"""

from __future__ import annotations

import numpy as np

from .grid import as_index


def _corners(terrain, i, j):
    nx = terrain.nx
    k = j * nx + i
    flat = terrain.flat
    return flat.take(k), flat.take(k + 1), flat.take(k + nx), flat.take(k + nx + 1)


def _planes(terrain, h00, h10, h01, h11, i, j):
    """Both triangles' planes h = c + a u + b v of each cell (triangle 0 below the
    split line: u >= v, or u + v <= 1 where anti), and where the split is anti."""
    a0 = h10 - h00
    a1 = h11 - h01
    main_b0 = h11 - h10
    main_b1 = h01 - h00
    if terrain.anti is None:
        return (h00, a0, main_b0), (h00, a1, main_b1), None
    anti = terrain.anti.take((j * (terrain.nx - 1) + i).astype(np.intp)) > 0
    b0 = np.where(anti, main_b1, main_b0)
    b1 = np.where(anti, main_b0, main_b1)
    c1 = np.where(anti, h01 + h10 - h11, h00)
    return (h00, a0, b0), (c1, a1, b1), anti


def _local(terrain, U, V):
    ny, nx = terrain.ny, terrain.nx
    i = np.clip(np.floor(U), 0, nx - 2).astype(np.intp)
    j = np.clip(np.floor(V), 0, ny - 2).astype(np.intp)
    return i, j, U - i, V - j


def surface_at(terrain, surface, U, V):
    """Height, gradient (dh/du, dh/dv) and cell at grid coordinates (U, V) (clamped)."""
    i, j, u, v = _local(terrain, U, V)
    h00, h10, h01, h11 = _corners(terrain, i, j)
    if surface == "BILINEAR":
        a, b, c = h10 - h00, h01 - h00, h00 - h10 - h01 + h11
        return h00 + a * u + b * v + c * u * v, a + c * v, b + c * u, i, j
    (c0, a0, b0), (c1, a1, b1), anti = _planes(terrain, h00, h10, h01, h11, i, j)
    w = u - v if anti is None else np.where(anti, 1.0 - u - v, u - v)
    first = w >= 0
    a, b, c = np.where(first, a0, a1), np.where(first, b0, b1), np.where(first, c0, c1)
    return c + a * u + b * v, a, b, i, j


def _gather(terrain, s, nx):
    """Corner heights and tolerance of each ray's cell. The walk keeps cells inside the
    grid (its cell and box boundaries use one formula); mode="clip" only guards memory."""
    k = as_index(s.j * nx + s.i)
    flat = terrain.flat
    return (
        flat.take(k, mode="clip"),
        flat.take(k + 1, mode="clip"),
        flat.take(k + nx, mode="clip"),
        flat.take(k + nx + 1, mode="clip"),
        terrain.tol.take(k, mode="clip"),
    )


def test_triangles(terrain, s, tb, nx):
    """Which rays meet the cell's two triangles on [ta, tb]; ``finish(rows)`` gives their
    distance and height gradient (dh/du, dh/dv).

    With P1 the plane of triangle 1 and w the split line's function (w >= 0 on triangle
    0), the surface is h = P1 + sigma max(w, 0), sigma = (P0 - P1) / w a constant of the
    cell. Along the ray P1 and w are linear, so g = z - h is linear on both sides of the
    kink where w = 0: evaluating it at ta, the kink and tb decides everything."""
    ta = s.ta
    h00, h10, h01, h11, tol = _gather(terrain, s, nx)
    ua = s.U0 + ta * s.du - s.i
    va = s.V0 + ta * s.dv - s.j
    curl = (h00 - h10) + (h11 - h01)
    a1 = h11 - h01
    b1 = h01 - h00
    if terrain.anti is None:  # every cell split along u = v: w = u - v
        c1, sigma, eu = h00, -curl, 1.0
        wa = ua - va
        dw = s.du - s.dv
    else:  # split along u + v = 1 where anti: w = 1 - u - v
        anti = terrain.anti.take(as_index(s.j * (nx - 1) + s.i), mode="clip")
        eu = 1.0 - 2.0 * anti
        c1 = h00 - anti * curl
        b1 = b1 + anti * curl
        sigma = -curl * eu
        wa = eu * ua - va + anti
        dw = eu * s.du - s.dv
    la = (s.oz + ta * s.dz - c1) - a1 * ua - b1 * va
    slope = s.dz - a1 * s.du - b1 * s.dv
    lb = tb - ta
    lm = np.fmin(np.fmax(-wa / dw, 0.0), lb)  # the kink, within [0, lb] (NaN -> 0)
    ga = la - sigma * np.maximum(wa, 0.0)
    gm = la + slope * lm - sigma * np.maximum(wa + dw * lm, 0.0)
    gb = la + slope * lb - sigma * np.maximum(wa + dw * lb, 0.0)
    # Touching within tol counts on a cell's own stretch of the ray only: where that is
    # a single point (the ray runs along the cell's edge line), the neighbour holding
    # the same point decides, so a crossing there is found exactly.
    hit = np.fmin(np.fmin(ga, gm), gb) <= tol * (lb > 0)

    def finish(rows):
        g_a, g_m, g_b = ga.take(rows), gm.take(rows), gb.take(rows)
        l_m, l_b = lm.take(rows), lb.take(rows)
        tol_ = tol.take(rows)
        first = _piece_root(g_a, g_m, 0.0, l_m, tol_, l_m > 0)
        early = first < np.inf
        distance = np.where(early, first, _piece_root(g_m, g_b, l_m, l_b, tol_, True))
        # Which triangle: the sign of w inside the piece the hit lies on.
        middle = np.where(early & (l_m > 0), 0.5 * l_m, 0.5 * (l_m + l_b))
        w_a, d_w = wa.take(rows), _take(dw, rows)
        on_first = (w_a + d_w * middle > 0).astype(np.float64)
        sig = sigma.take(rows)
        grad_u = a1.take(rows) + on_first * sig * _take(eu, rows)
        grad_v = b1.take(rows) - on_first * sig
        return ta.take(rows) + distance, grad_u, grad_v

    return hit, finish


def test_bilinear(terrain, s, tb, nx):
    """Which rays meet the cell's bilinear patch on [ta, tb]; ``finish(rows)`` gives their
    distance and height gradient. Along the ray g = z - h is the quadratic
    g0 + g1 s + g2 s^2 in s = t - ta: it reaches tol on [0, L] exactly when its least
    value there (at 0, at L or at the vertex -g1 / 2 g2) does."""
    ta = s.ta
    h00, h10, h01, h11, tol = _gather(terrain, s, nx)
    a, b, c = h10 - h00, h01 - h00, (h00 - h10) + (h11 - h01)
    ua = s.U0 + ta * s.du - s.i
    va = s.V0 + ta * s.dv - s.j
    g0 = s.oz + ta * s.dz - (h00 + a * ua + b * va + c * ua * va)
    g1 = s.dz - (a * s.du + b * s.dv + c * (ua * s.dv + va * s.du))
    g2 = -c * s.du * s.dv
    length = tb - ta
    g_end = g0 + length * (g1 + length * g2)
    vertex = np.fmin(np.fmax(-g1 / (2.0 * g2), 0.0), length)
    g_vertex = g0 + vertex * (g1 + vertex * g2)
    hit = np.fmin(np.fmin(g0, g_end), g_vertex) <= tol * (length > 0)  # see triangles

    def finish(rows):
        q0, q1, q2 = g0.take(rows), g1.take(rows), g2.take(rows)
        span = length.take(rows)
        discriminant = q1 * q1 - 4.0 * q2 * q0
        real = discriminant >= 0
        # Stable roots: q = -(g1 + sign(g1) sqrt(disc)) / 2, roots q / g2 and g0 / q.
        q = -0.5 * (q1 + np.copysign(np.sqrt(np.maximum(discriminant, 0.0)), q1))
        r1, r2 = q / q2, q0 / q
        r1 = np.where(real & (r1 >= 0) & (r1 <= span), r1, np.inf)
        r2 = np.where(real & (r2 >= 0) & (r2 <= span), r2, np.inf)
        root = np.minimum(r1, r2)
        # Within the tolerance only: at the start (touching there, or not descending
        # from there), a tangent touch at the vertex, or the interval end.
        tol_ = tol.take(rows)
        touch_at_start = (q0 <= 0.0) | ((q0 <= tol_) & ((q1 >= 0.0) | ~np.isfinite(root)))
        near = np.where(g_vertex.take(rows) <= tol_, vertex.take(rows), span)
        distance = np.where(touch_at_start, 0.0, np.where(np.isfinite(root), root, near))
        u = ua.take(rows) + distance * s.du.take(rows)
        v = va.take(rows) + distance * s.dv.take(rows)
        c_ = c.take(rows)
        return ta.take(rows) + distance, a.take(rows) + c_ * v, b.take(rows) + c_ * u

    return hit, finish


def _piece_root(g_start, g_end, start, end, tol, touch_at_start):
    """First point of [start, end] where the linear g (g_start, g_end at the ends) is
    within ``tol`` of the surface or below it, inf where none: the start if g <= 0 there;
    where g descends to 0 (start + length g_start / (g_start - g_end), no cancellation) or
    to the end when it stops within (0, tol]; the start when g starts within tol and does
    not descend (if ``touch_at_start``). A crossing is found exactly, not at the edge of
    the tolerance band."""
    descending = (g_end < g_start) & (g_end <= tol)
    crossing = start + (end - start) * np.minimum(g_start / (g_start - g_end), 1.0)
    touch = np.where((g_start <= tol) & touch_at_start, start, np.inf)
    return np.where(g_start <= 0.0, start, np.where(descending, crossing, touch))


def _take(value, rows):
    """value[rows] for an array, value itself for a scalar."""
    return value.take(rows) if isinstance(value, np.ndarray) else value
