"""The cell pieces of the compiled ray walk (ray_kernel.py, ray_walk.py): a cell's surface,
its tolerance, and the tests of its two triangles and of its bilinear patch on a stretch of
the ray, each the one-ray form of surfaces.py, expression for expression (so both backends
give the same bits).

The two tests take the same arguments, so the walk takes either as its cell test (the
primitive test of its traversal) and is compiled with the model's own; a bilinear patch
ignores the split.
"""

import math

from ..kernel_common import INF, fmax, fmin, helper, maximum, minimum
from .grid import TOUCH


@helper
def surface_height(h00, h10, h01, h11, anti, bilinear, u, v):
    """Height at (u, v) of a cell (surfaces.surface_at): the bilinear patch, or the
    triangle holding the point (split along u + v = 1 where ``anti``)."""
    if bilinear:
        a, b, c = h10 - h00, h01 - h00, h00 - h10 - h01 + h11
        return h00 + a * u + b * v + c * u * v
    a0 = h10 - h00
    a1 = h11 - h01
    main_b0 = h11 - h10
    main_b1 = h01 - h00
    if anti:
        w = 1.0 - u - v
        b0, b1, c1 = main_b1, main_b0, h01 + h10 - h11
    else:
        w = u - v
        b0, b1, c1 = main_b0, main_b1, h00
    if w >= 0:
        return h00 + a0 * u + b0 * v
    return c1 + a1 * u + b1 * v


@helper
def cell_tolerance(h00, h10, h01, h11, spacing):
    """The cell's touching tolerance, TOUCH of its largest |corner height| or the largest
    spacing (grid.tolerances, from the corners at hand: no table to read)."""
    a, b, c, d = abs(h00), abs(h10), abs(h01), abs(h11)
    ab = b if b > a else a  # max(a, b), as Python selects
    cd = d if d > c else c
    magnitude = cd if cd > ab else ab
    magnitude = spacing if spacing > magnitude else magnitude
    return magnitude * TOUCH


@helper
def _piece_root(g_start, g_end, start, end, tol, touch_at_start):
    """First point of [start, end] where the linear g is within tol of the surface or
    below it, inf where none (surfaces._piece_root)."""
    if g_start <= 0.0:
        return start
    if g_end < g_start and g_end <= tol:
        return start + (end - start) * minimum(g_start / (g_start - g_end), 1.0)
    if g_start <= tol and touch_at_start:
        return start
    return INF


@helper
def cell_triangles(h00, h10, h01, h11, tol, anti, a, i, j, U0, V0, oz, du, dv, dz, ta, tb):
    """(hit, t, grad_u, grad_v) of cell (i, j)'s two triangles on [ta, tb]: corner heights
    h00 ... h11, the cell's tolerance, split along u + v = 1 if ``anti`` (``a`` 1.0, else
    0.0) (surfaces.test_triangles, expression for expression)."""
    ua = U0 + ta * du - i
    va = V0 + ta * dv - j
    curl = (h00 - h10) + (h11 - h01)
    a1 = h11 - h01
    b1 = h01 - h00
    if anti:
        eu = 1.0 - 2.0 * a
        c1 = h00 - a * curl
        b1 = b1 + a * curl
        sigma = -curl * eu
        wa = eu * ua - va + a
        dw = eu * du - dv
    else:
        eu = 1.0
        c1 = h00
        sigma = -curl
        wa = ua - va
        dw = du - dv
    la = (oz + ta * dz - c1) - a1 * ua - b1 * va
    slope = dz - a1 * du - b1 * dv
    lb = tb - ta
    lm = fmin(fmax(-wa / dw, 0.0), lb)
    ga = la - sigma * maximum(wa, 0.0)
    gm = la + slope * lm - sigma * maximum(wa + dw * lm, 0.0)
    gb = la + slope * lb - sigma * maximum(wa + dw * lb, 0.0)
    if not (fmin(fmin(ga, gm), gb) <= tol * (1.0 if lb > 0 else 0.0)):
        return False, 0.0, 0.0, 0.0
    first = _piece_root(ga, gm, 0.0, lm, tol, lm > 0)
    early = first < INF
    distance = first if early else _piece_root(gm, gb, lm, lb, tol, True)
    middle = 0.5 * lm if (early and lm > 0) else 0.5 * (lm + lb)
    on_first = 1.0 if wa + dw * middle > 0 else 0.0
    grad_u = a1 + on_first * sigma * eu
    grad_v = b1 - on_first * sigma
    return True, ta + distance, grad_u, grad_v


@helper
def cell_bilinear(h00, h10, h01, h11, tol, anti, split, i, j, U0, V0, oz, du, dv, dz, ta, tb):
    """(hit, t, grad_u, grad_v) of cell (i, j)'s bilinear patch on [ta, tb]
    (surfaces.test_bilinear, expression for expression; the split, ``anti`` and ``split``,
    is cell_triangles's and means nothing to a patch)."""
    a, b, c = h10 - h00, h01 - h00, (h00 - h10) + (h11 - h01)
    ua = U0 + ta * du - i
    va = V0 + ta * dv - j
    g0 = oz + ta * dz - (h00 + a * ua + b * va + c * ua * va)
    g1 = dz - (a * du + b * dv + c * (ua * dv + va * du))
    g2 = -c * du * dv
    length = tb - ta
    g_end = g0 + length * (g1 + length * g2)
    vertex = fmin(fmax(-g1 / (2.0 * g2), 0.0), length)
    g_vertex = g0 + vertex * (g1 + vertex * g2)
    if not (fmin(fmin(g0, g_end), g_vertex) <= tol * (1.0 if length > 0 else 0.0)):
        return False, 0.0, 0.0, 0.0
    discriminant = g1 * g1 - 4.0 * g2 * g0
    real = discriminant >= 0
    q = -0.5 * (g1 + math.copysign(math.sqrt(maximum(discriminant, 0.0)), g1))
    r1, r2 = q / g2, g0 / q
    if not (real and r1 >= 0 and r1 <= length):
        r1 = INF
    if not (real and r2 >= 0 and r2 <= length):
        r2 = INF
    root = minimum(r1, r2)
    rooted = abs(root) < INF
    if g0 <= 0.0 or (g0 <= tol and (g1 >= 0.0 or not rooted)):
        distance = 0.0
    elif rooted:
        distance = root
    elif g_vertex <= tol:
        distance = vertex
    else:
        distance = length
    u = ua + distance * du
    v = va + distance * dv
    return True, ta + distance, a + c * v, b + c * u
