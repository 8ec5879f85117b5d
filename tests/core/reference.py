"""Independent references for the analytic queries, evaluated with mpmath at 50 digits.

They enumerate candidate roots (sphere: the quadratic |o + t d - c|^2 = r^2 in its textbook
form; cylinder: side roots and both cap planes, each kept only if the point satisfies the
other constraint) rather than reusing core's interval formulation.
"""

import mpmath as mp
import numpy as np

mp.mp.dps = 50
SLACK = mp.mpf("1e-30")


def _vec(values):
    return [mp.mpf(float(v)) for v in values]


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def _unit(v):
    length = mp.sqrt(_dot(v, v))
    return [x / length for x in v]


def ray_sphere(origin, direction, center, radius):
    """(distance, point, normal) as mpf lists, or None for a miss (any dimension)."""
    o, d, c, r = _vec(origin), _unit(_vec(direction)), _vec(center), mp.mpf(float(radius))
    m = [a - b for a, b in zip(o, c)]
    if _dot(m, m) <= r * r:
        return mp.mpf(0), o, [-x for x in d]
    b = 2 * _dot(m, d)
    cc = _dot(m, m) - r * r
    disc = b * b - 4 * cc
    if disc < 0:
        return None
    roots = sorted([(-b - mp.sqrt(disc)) / 2, (-b + mp.sqrt(disc)) / 2])
    t = next((t for t in roots if t >= 0), None)
    if t is None:
        return None
    point = [a + t * b_ for a, b_ in zip(o, d)]
    normal = [(p - q) / r for p, q in zip(point, c)]
    return t, point, normal


def ray_cylinder(origin, direction, p0, p1, radius):
    """(distance, point, normal) for a solid capped cylinder, or None."""
    o, d = _vec(origin), _unit(_vec(direction))
    a0, a1, r = _vec(p0), _vec(p1), mp.mpf(float(radius))
    axis = [y - x for x, y in zip(a0, a1)]
    h = mp.sqrt(_dot(axis, axis))
    w = [x / h for x in axis]

    def height(p):
        return _dot([x - y for x, y in zip(p, a0)], w)

    def radial(p):
        rel = [x - y for x, y in zip(p, a0)]
        z = _dot(rel, w)
        return [x - z * y for x, y in zip(rel, w)]

    def inside(p):
        q = radial(p)
        z = height(p)
        return _dot(q, q) <= r * r * (1 + SLACK) and -SLACK <= z <= h * (1 + SLACK)

    if inside(o):
        return mp.mpf(0), o, [-x for x in d]
    candidates = []
    # Side: |q(o) + t q(d)|^2 = r^2 with q the radial projection (linear in its argument).
    qo = radial(o)
    qd = [x - _dot(d, w) * y for x, y in zip(d, w)]
    A, B, C = _dot(qd, qd), 2 * _dot(qo, qd), _dot(qo, qo) - r * r
    if A > 0:
        disc = B * B - 4 * A * C
        if disc >= 0:
            for t in ((-B - mp.sqrt(disc)) / (2 * A), (-B + mp.sqrt(disc)) / (2 * A)):
                p = [x + t * y for x, y in zip(o, d)]
                if t >= 0 and -SLACK <= height(p) <= h * (1 + SLACK):
                    q = radial(p)
                    n = [x / mp.sqrt(_dot(q, q)) for x in q]
                    candidates.append((t, p, n))
    dz = _dot(d, w)
    if dz != 0:
        for plane, normal in ((0, [-x for x in w]), (h, w)):
            t = (plane - height(o)) / dz
            p = [x + t * y for x, y in zip(o, d)]
            q = radial(p)
            if t >= 0 and _dot(q, q) <= r * r * (1 + SLACK):
                candidates.append((t, p, normal))
    if not candidates:
        return None
    return min(candidates, key=lambda c: c[0])


def ray_tube(origin, direction, p0, p1, radius):
    """(distance, point, normal) for an open tube (the side wall only, a surface), or None:
    the entry and exit roots of the side's quadratic |q(o) + t q(d)|^2 = r^2, kept when
    t >= 0 and the point lies between the cap planes; the first one wins, its radial
    normal turned to face the ray. A ray parallel to the axis (no quadratic) misses."""
    o, d = _vec(origin), _unit(_vec(direction))
    a0, a1, r = _vec(p0), _vec(p1), mp.mpf(float(radius))
    axis = [y - x for x, y in zip(a0, a1)]
    h = mp.sqrt(_dot(axis, axis))
    w = [x / h for x in axis]
    rel = [x - y for x, y in zip(o, a0)]
    qo = [x - _dot(rel, w) * y for x, y in zip(rel, w)]
    qd = [x - _dot(d, w) * y for x, y in zip(d, w)]
    A, B, C = _dot(qd, qd), 2 * _dot(qo, qd), _dot(qo, qo) - r * r
    if A == 0:
        return None
    disc = B * B - 4 * A * C
    if disc < 0:
        return None
    for t in sorted([(-B - mp.sqrt(disc)) / (2 * A), (-B + mp.sqrt(disc)) / (2 * A)]):
        p = [x + t * y for x, y in zip(o, d)]
        z = _dot([x - y for x, y in zip(p, a0)], w)
        if t >= 0 and 0 <= z <= h:
            q = [x + t * y for x, y in zip(qo, qd)]
            n = [x / mp.sqrt(_dot(q, q)) for x in q]
            if _dot(n, d) > 0:
                n = [-x for x in n]
            return t, p, n
    return None


def as_float(result):
    if result is None:
        return None
    t, p, n = result
    return float(t), np.array([float(x) for x in p]), np.array([float(x) for x in n])


def sphere_cast_sphere(start, end, cast_radius, center, radius):
    """(distance, contact centre, contact point, normal) for a sphere swept from start to
    end against a sphere, or None: the first s in [0, |end - start|] with
    |start + s u - center| = radius + cast_radius, solved as a plain quadratic."""
    a, b, c = _vec(start), _vec(end), _vec(center)
    r_cast, r_target = mp.mpf(float(cast_radius)), mp.mpf(float(radius))
    reach = r_cast + r_target
    m = [x - y for x, y in zip(a, c)]
    segment = [y - x for x, y in zip(a, b)]
    length = mp.sqrt(_dot(segment, segment))

    def contact(s, moving):
        toward = [x - y for x, y in zip(moving, c)]
        n = _unit(toward)
        return s, moving, [x + r_target * y for x, y in zip(c, n)], n

    if _dot(m, m) <= reach * reach:
        return contact(mp.mpf(0), a)
    if length == 0:
        return None
    u = [x / length for x in segment]
    bq = 2 * _dot(m, u)
    cq = _dot(m, m) - reach * reach
    disc = bq * bq - 4 * cq
    if disc < 0:
        return None
    s = (-bq - mp.sqrt(disc)) / 2
    if s < 0 or s > length:
        return None
    return contact(s, [x + s * y for x, y in zip(a, u)])


# -- every crossing (raycast_all) ---------------------------------------------------------


def _roots(A, B, C):
    """Real roots of A t^2 + B t + C (A > 0), ascending: two equal ones for a tangent."""
    disc = B * B - 4 * A * C
    if disc < 0:
        return []
    s = mp.sqrt(disc)
    return [(-B - s) / (2 * A), (-B + s) / (2 * A)]


def sphere_all(origin, direction, center, radius):
    """Every crossing [(t, normal)] of a ray with a solid ball (any dimension): the textbook
    quadratic |o + t d - c|^2 = r^2; inside: 0 (normal -d) and the far root; else both
    roots at or after 0 (one for a tangent)."""
    o, d, c, r = _vec(origin), _unit(_vec(direction)), _vec(center), mp.mpf(float(radius))
    m = [a - b for a, b in zip(o, c)]
    roots = _roots(1, 2 * _dot(m, d), _dot(m, m) - r * r)

    def normal(t):
        return [(a + t * b - cc) / r for a, b, cc in zip(o, d, c)]

    if _dot(m, m) <= r * r:
        far = roots[1] if roots else mp.mpf(0)
        return [(mp.mpf(0), [-x for x in d])] + ([(far, normal(far))] if far > 0 else [])
    if not roots:
        return []
    kept = [t for t in (roots[0],) + ((roots[1],) if roots[1] != roots[0] else ()) if t >= 0]
    return [(t, normal(t)) for t in kept]


def _cylinder_parts(origin, direction, p0, p1, radius):
    o, d = _vec(origin), _unit(_vec(direction))
    a0, a1, r = _vec(p0), _vec(p1), mp.mpf(float(radius))
    axis = [y - x for x, y in zip(a0, a1)]
    h = mp.sqrt(_dot(axis, axis))
    w = [x / h for x in axis]
    rel = [x - y for x, y in zip(o, a0)]
    qo = [x - _dot(rel, w) * y for x, y in zip(rel, w)]
    qd = [x - _dot(d, w) * y for x, y in zip(d, w)]
    z0, dz = _dot(rel, w), _dot(d, w)
    side = []  # (t, radial normal) with the point between the cap planes
    A = _dot(qd, qd)
    if A > 0:
        for t in _roots(A, 2 * _dot(qo, qd), _dot(qo, qo) - r * r):
            if 0 <= z0 + t * dz <= h:
                q = [x + t * y for x, y in zip(qo, qd)]
                side.append((t, [x / mp.sqrt(_dot(q, q)) for x in q]))
    return o, d, r, h, w, qo, qd, z0, dz, side


def cylinder_all(origin, direction, p0, p1, radius):
    """Every crossing [(t, normal)] of a ray with a capped solid cylinder: side roots
    between the caps and cap-plane points within the radius are the solid's boundary
    points on the line; the solid is convex, so they are its entry and exit."""
    o, d, r, h, w, qo, qd, z0, dz, side = _cylinder_parts(origin, direction, p0, p1, radius)
    candidates = list(side)
    if dz != 0:
        for plane, normal in ((0, [-x for x in w]), (h, w)):
            t = (plane - z0) / dz
            q = [x + t * y for x, y in zip(qo, qd)]
            if _dot(q, q) <= r * r:
                candidates.append((t, normal))
    if not candidates:
        return []
    entry = min(candidates, key=lambda c: c[0])
    exit_ = max(candidates, key=lambda c: c[0])
    if _dot(qo, qo) <= r * r and 0 <= z0 <= h:
        return [(mp.mpf(0), [-x for x in d])] + ([exit_] if exit_[0] > 0 else [])
    if exit_[0] < 0:
        return []
    return [c for c in ([entry] + ([exit_] if exit_[0] != entry[0] else [])) if c[0] >= 0]


def tube_all(origin, direction, p0, p1, radius):
    """Every crossing [(t, normal facing the ray)] of a ray with an open tube: the side
    roots at or after 0 between the cap planes (one for a tangent)."""
    o, d, r, h, w, qo, qd, z0, dz, side = _cylinder_parts(origin, direction, p0, p1, radius)
    records = []
    for t, n in side:
        if t >= 0 and not (records and records[-1][0] == t):
            records.append((t, [-x for x in n] if _dot(n, d) > 0 else n))
    return records


def as_float_records(records):
    return [(float(t), np.array([float(x) for x in n])) for t, n in records]
