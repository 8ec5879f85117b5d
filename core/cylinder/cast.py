"""Sphere cast vs a finite cylinder: capped (a solid) or open (a tube surface).

Math. A sphere of radius R moving along ``start + t u`` first touches the cylinder when its
centre enters the Minkowski sum M of the cylinder and a ball of radius R. In the cylinder's
frame (height z along the axis, radial distance rho) a point's distance to the solid is
``|(max(rho - r, 0), z - clamp(z, 0, h))|`` and to the tube ``|(rho - r, z - clamp(z, 0, h))|``,
so M is a solid of revolution made of straight pieces and two rim tori:

* capped: radius r + R between the caps, radius r between the caps moved out by R, and the
  solid tori ``(rho - r)^2 + (z - c)^2 <= R^2`` around the rims c = 0 and c = h;
* open: the shell ``r - R <= rho <= r + R`` between the end planes (from inside the tube the
  cast meets the inner wall at r - R; with R >= r the shell is solid), and the same tori.

The first entry into a union is the earliest first entry into its pieces. The straight
pieces are intervals of t in closed form (a radial circle with the closest approach first,
as for rays, and slabs). A torus is a quartic in t; rather than solving the quartic, take
its inside as ``F(t) = (rho - r)^2 + (z - c)^2 - R^2 <= 0``. Key step: with
``rho(t) = sqrt(a^2 s^2 + b^2)`` (s = t - t_closest, a the radial speed, b the radial miss
distance, |u| = 1), ``F'' = 2 - 2 r rho'' = 2 - 2 r a^2 b^2 / rho^3``, which only grows with
|s|: F is convex, then concave on the symmetric interval where ``rho^3 < r a^2 b^2`` (only
when b < r a^2), then convex again; and F'' <= 2 everywhere. Newton's tangent never crosses
the root from the left end of a convex piece nor from the right end of a concave one, so
each piece gives its first root or proves it has none (a convex piece whose slope turns
non-negative, a concave piece positive at both ends). The iteration is monotone, quadratic
at transversal contacts and linear at tangent ones; a convex step of length s lands where
0 <= F <= s^2 (F'' <= 2), which ends it without another evaluation.

Fast path: M lies in the box rho <= r + R, -R <= z <= h + R, so where the box's first point
is in M it is the answer (most casts). A capped cylinder's box is M but for its corners past
the rims; a cast entering a corner meets that rim's torus first (leaving the corner toward
the cylinder crosses it), where F is convex (rho >= r): one piece. An open tube's casts whose
first point is in its hole (rho < r - R) stay clear of M until they leave the hole's
cylinder: onto the inner wall between the end planes, or past the box's ends (no contact).
The other casts that enter through its ends or hole take the whole path: the shell skipping
the hole, and the tori only where the path crosses a rim layer before the shell outside
the hole.
"""

from __future__ import annotations

import numpy as np

from ..vectors import at_least, from_frame, linear_combination

# Newton steps per torus piece: quadratic convergence needs < 10; a tangent contact halves
# the gap per step, so 100 steps take any start within 1e30 of it to float64 resolution.
NEWTON_STEPS = 100
EPSILON = np.finfo(np.float64).eps


def sphere_cast_cylinder(cylinder, start, direction, radius):
    """(distance, point, normal) of a sphere of ``radius`` (per row) cast from ``start``
    along the unit (or zero) ``direction`` against ``cylinder``, component lists in world
    space; distance inf or NaN where it never touches."""
    r, h = cylinder.radius, cylinder.height
    relative = [s - p for s, p in zip(start, cylinder.p0)]
    x0, y0, z0 = (linear_combination(axis, relative) for axis in cylinder.frame)
    dx, dy, dz = (linear_combination(axis, direction) for axis in cylinder.frame)
    reach = np.broadcast_to(np.asarray(radius, dtype=np.float64), relative[0].shape)
    line = _Line(x0, y0, z0, dx, dy, dz, reach)
    reach = line.reach

    # Fast path: M lies in the box rho <= r + R, -R <= z <= h + R. Where the box's first
    # point at or after 0 is in M (between the caps, or over a cap for the solid; in the
    # shell for the tube), it is the answer, overlapping starts included.
    outer_enter, outer_leave = line.radial_interval(r + reach)
    slab_enter, slab_leave = line.slab_interval(-reach, h + reach)
    enter, leave = np.maximum(outer_enter, slab_enter), np.minimum(outer_leave, slab_leave)
    zeros = np.zeros(enter.shape)  # (fmax against an array is faster than against a scalar)
    first = np.fmax(enter, zeros)
    z = line.z0 + first * line.dz
    s = first - line.closest
    rho_squared = line.speed_squared * s * s + line.miss_squared
    between_caps = (z >= 0.0) & (z <= h)
    answer = first
    if cylinder.capped:
        settled = between_caps | (rho_squared <= r * r)
    else:
        hole = np.fmax(r - reach, zeros)
        settled = between_caps & (rho_squared >= hole * hole)
        # In the hole: from a first point on an end of the box, inside the cylinder
        # rho < r - R, the line stays clear of the shell and both tori (all at rho >= r - R)
        # until it leaves that cylinder: onto the shell's inner wall where it leaves between
        # the end planes (the answer), beyond the box's ends where it leaves past them (no
        # contact); else it leaves through a rim's layer (the whole path, below). (Only a
        # first point on an end or the start, beyond the end planes: with R = 0 the hole's
        # cylinder is the box's side, where rounding could put a point on it inside.)
        hole_leave = line.radial_interval(hole)[1]
        z_out = line.z0 + hole_leave * line.dz
        on_end = ~between_caps & ((slab_enter >= outer_enter) | (enter <= 0.0))
        inside = on_end & (rho_squared < hole * hole) & (hole_leave >= first)
        onto_wall = inside & (z_out >= 0.0) & (z_out <= h)
        through = inside & ((z_out < -reach) | (z_out > h + reach))
        answer = np.where(onto_wall, hole_leave, np.where(through, np.inf, first))
        settled = settled | onto_wall | through
    in_box = (enter <= leave) & (leave >= 0.0)
    answered = in_box & settled
    distance = answer / answered  # inf or NaN (none) where not answered: no np.where

    # The rest enter the box elsewhere: a solid's corner beyond a rim (then the first
    # contact, if any, is on that rim's torus: leaving the corner toward the cylinder
    # crosses the torus), or the tube's ends and hole, leaving the hole through a rim.
    rest = np.flatnonzero(in_box ^ answered)
    if len(rest):
        part = line.take(rest)
        if cylinder.capped:
            rim = np.where(z[rest] > h, h, 0.0)
            distance[rest] = _torus_entry(part, rim, r, first[rest], leave[rest], convex=True)
        else:
            distance[rest] = _tube_entry(part, r, h, first[rest])

    # Contact: the centre's nearest point on the cylinder; the normal from it to the centre.
    cx, cy = line.x0 + distance * line.dx, line.y0 + distance * line.dy
    cz = line.z0 + distance * line.dz
    if cylinder.capped:
        point, normal = _contact_capped(cx, cy, cz, r, h)
    else:
        point, normal = _contact_tube(cx, cy, cz, line.dx, line.dy, r, h, reach)
    world_point = [p + x for p, x in zip(cylinder.p0, from_frame(point, cylinder.frame))]
    return distance, world_point, from_frame(normal, cylinder.frame)


class _Line:
    """The cast's line in the cylinder's frame, per row: start (x0, y0, z0), unit or zero
    direction (dx, dy, dz), cast radius. The radial part is a 2D line with speed a and
    closest approach to the axis at t = closest, at distance b (the sphere's stable form,
    in the plane); the axial part is z0 + t dz."""

    def __init__(self, x0, y0, z0, dx, dy, dz, reach):
        self.x0, self.y0, self.z0, self.dx, self.dy, self.dz = x0, y0, z0, dx, dy, dz
        self.reach = reach
        self.speed_squared = dx * dx + dy * dy  # a^2
        self.along_axis = self.speed_squared == 0.0
        self.any_along_axis = self.along_axis.any()
        self.inverse_speed_squared = 1.0 / at_least(self.speed_squared, 1e-300)
        self.closest = -(x0 * dx + y0 * dy) * self.inverse_speed_squared
        px, py = x0 + self.closest * dx, y0 + self.closest * dy
        self.miss_squared = px * px + py * py  # b^2
        self.parallel = dz == 0.0
        self.any_parallel = self.parallel.any()
        self.inverse_dz = 1.0 / (dz + self.parallel) if self.any_parallel else 1.0 / dz

    def take(self, rows):
        parts = (self.x0, self.y0, self.z0, self.dx, self.dy, self.dz, self.reach)
        return _Line(*(part[rows] for part in parts))

    def radial_interval(self, radius):
        """[enter, leave] within ``radius`` of the axis; NaN where never, +-inf along it."""
        half = np.sqrt((radius * radius - self.miss_squared) * self.inverse_speed_squared)
        enter, leave = self.closest - half, self.closest + half
        if self.any_along_axis:  # parallel to the axis: all t (or never: NaN stays NaN)
            everywhere = self.along_axis & (half >= 0.0)
            enter = np.where(everywhere, -np.inf, enter)
            leave = np.where(everywhere, np.inf, leave)
        return enter, leave

    def slab_interval(self, low, high):
        """[enter, leave] with low <= z <= high (empty where enter > leave); all t or never
        when the line runs parallel to the caps."""
        to_low = (low - self.z0) * self.inverse_dz
        to_high = (high - self.z0) * self.inverse_dz
        enter, leave = np.minimum(to_low, to_high), np.maximum(to_low, to_high)
        if self.any_parallel:
            inside = (self.z0 >= low) & (self.z0 <= high)
            enter = np.where(self.parallel, np.where(inside, -np.inf, np.inf), enter)
            leave = np.where(self.parallel, np.where(inside, np.inf, -np.inf), leave)
        return enter, leave


def _tube_entry(line, r, h, lower):
    """First t >= lower in the tube's Minkowski sum: the shell r - R <= rho <= r + R between
    the end planes, skipping the hole rho < r - R, or a rim torus crossed before it."""
    reach = line.reach
    outer_enter, outer_leave = line.radial_interval(r + reach)
    slab_enter, slab_leave = line.slab_interval(0.0, h)
    enter, leave = np.maximum(outer_enter, slab_enter), np.minimum(outer_leave, slab_leave)
    hole = np.maximum(r - reach, 0.0)
    hole_enter, hole_leave = line.radial_interval(hole)
    # No hole when R >= r; the hole is open: running along its wall is not inside it.
    hole_enter = np.where(
        (reach >= r) | (line.along_axis & (line.miss_squared >= hole * hole)), np.nan, hole_enter
    )
    first = np.fmax(enter, lower)
    first = np.where((first > hole_enter) & (first < hole_leave), hole_leave, first)
    distance = np.where((enter <= leave) & (first <= leave), first, np.inf)
    rim_rows, rims, starts, stops = [], [], [], []
    for rim, low, high in ((0.0, -reach, 0.0), (h, h, h + reach)):
        # The path's stretch within the rim's layer |z - rim| <= R and radius r + R,
        # before the shell's entry; nothing to find where it stays within the hole.
        layer_enter, layer_leave = line.slab_interval(low, high)
        start = np.fmax(np.maximum(outer_enter, layer_enter), lower)
        stop = np.fmin(np.minimum(outer_leave, layer_leave), distance)
        crossing = (start < stop) & ~((start > hole_enter) & (stop < hole_leave))
        index = np.flatnonzero(crossing)
        rim_rows.append(index)
        rims.append(np.full(len(index), rim))
        starts.append(start[index])
        stops.append(stop[index])
    rows = np.concatenate(rim_rows)
    if len(rows):  # both rims in one batch
        found = _torus_entry(
            line.take(rows),
            np.concatenate(rims),
            r,
            np.concatenate(starts),
            np.concatenate(stops),
            convex=False,
        )
        for rim_rows, rim_found in zip(
            np.split(rows, [len(rims[0])]), np.split(found, [len(rims[0])])
        ):
            distance[rim_rows] = np.fmin(distance[rim_rows], rim_found)  # both rims' layers
    return distance


def _torus_entry(line, rim, r, lower, upper, convex):
    """First t in [lower, upper] inside the solid torus ``(rho - r)^2 + (z - rim)^2 <= R^2``,
    inf where none: Newton on each convex or concave piece of F (module docstring), all
    pieces of all rows in one batch; the first root is the least over the pieces.
    ``convex``: the stretch is known to lie where F is convex (rho >= r), one piece."""
    reach = line.reach
    n = len(lower)
    # F's rounding: the coordinates carry EPSILON * their size; F ~ 2 R * that near a root.
    size = 2.0 * (np.abs(line.x0) + np.abs(line.y0) + np.abs(line.z0 - rim)) + r + 2.0 * reach
    tolerance = 8.0 * EPSILON * reach * size
    pieces = [(lower, upper, 1.0, np.arange(n))]  # (low, high, convex, rows)
    if not convex:
        # F'' < 0 somewhere only if b < r a^2; the concave middle |s| < s_c has
        # rho(s_c)^3 = r a^2 b^2. (b = 0, through the axis: a concave kink at s = 0.)
        a2, b2 = line.speed_squared, line.miss_squared
        split = np.flatnonzero((b2 < r * r * a2 * a2) | (b2 == 0.0))
        if len(split):
            rho_turn = np.cbrt(r * a2[split] * b2[split])
            half = np.maximum(rho_turn * rho_turn - b2[split], 0.0)
            half = np.sqrt(half * line.inverse_speed_squared[split])
            middle_low, middle_high = line.closest[split] - half, line.closest[split] + half
            # Only a stretch reaching into the middle needs three pieces.
            reaches = np.flatnonzero((lower[split] < middle_high) & (upper[split] > middle_low))
            split, middle_low, middle_high = (x[reaches] for x in (split, middle_low, middle_high))
        if len(split):
            first_high = upper.copy()
            first_high[split] = np.minimum(upper[split], middle_low)
            low, high = lower[split], upper[split]
            pieces = [
                (lower, first_high, 1.0, np.arange(n)),
                (np.maximum(low, middle_low), np.minimum(high, middle_high), 0.0, split),
                (np.maximum(low, middle_high), high, 1.0, split),
            ]
    owners, lows, highs, kinds = [], [], [], []
    for low, high, kind, piece_rows in pieces:
        keep = low <= high
        if keep.all():  # (gathers are dear: only where something is left out)
            owners.append(piece_rows)
        else:
            keep = np.flatnonzero(keep)
            owners.append(piece_rows[keep])
            low, high = low[keep], high[keep]
        lows.append(low)
        highs.append(high)
        kinds.append(np.full(len(low), kind))
    owner = owners[0] if len(owners) == 1 else np.concatenate(owners)
    whole = len(owner) == n and owner is pieces[0][3]  # the rows as they are
    # Per piece: the torus function's coefficients, the tolerance and the piece's ends.
    rows = np.empty((_ROWS, len(owner)))
    per_row = (line.closest, line.speed_squared, line.miss_squared, line.z0 - rim, line.dz)
    for row, values in enumerate(per_row + (reach * reach, tolerance)):
        rows[row] = values if whole else values[owner]
    rows[_LOW] = low = lows[0] if len(lows) == 1 else np.concatenate(lows)
    rows[_HIGH] = high = highs[0] if len(highs) == 1 else np.concatenate(highs)
    rows[_CONVEX] = np.concatenate(kinds)
    f, step = _torus_function(rows, low, r)
    tolerance = rows[_TOLERANCE]
    piece_found = np.where(f <= tolerance, low, np.inf)
    todo = f > tolerance
    start = low
    concave = np.flatnonzero(rows[_CONVEX] == 0.0) if not convex else ()
    if len(concave):  # a concave piece positive at its left end has a root only if F(high) <= 0
        f_high, step_high = _torus_function(rows[:, concave], high[concave], r)
        todo[concave] &= f_high <= tolerance[concave]
        start = low.copy()
        start[concave], f[concave], step[concave] = high[concave], f_high, step_high
    if todo.all():
        piece_found = _newton(rows, start, r, f, step)
    else:
        todo = np.flatnonzero(todo)
        if len(todo):  # Newton from the start, whose F and step are known
            piece_found[todo] = _newton(rows[:, todo], start[todo], r, f[todo], step[todo])
    if len(owners) == 1 and whole:
        return piece_found
    found = np.full(n, np.inf)
    offset = 0
    for owned in owners:  # a row appears once per piece
        found[owned] = np.fmin(found[owned], piece_found[offset : offset + len(owned)])
        offset += len(owned)
    return found


# Rows of the coefficient array of _torus_entry and _newton.
_CLOSEST, _SPEED_SQUARED, _MISS_SQUARED, _ZETA0, _DZ = range(5)
_REACH_SQUARED, _TOLERANCE, _LOW, _HIGH, _CONVEX, _ROWS = range(5, 11)


def _torus_function(rows, t, r):
    """F(t) = (rho - r)^2 + zeta^2 - R^2 and the Newton step F / F', rho from the radial
    closest approach (rho^2 = a^2 s^2 + b^2, s = t - closest), zeta = zeta0 + t dz; with
    F' = 2 ((rho - r) a^2 s / rho + zeta dz), the step as F rho / (2 ((rho - r) a^2 s +
    zeta dz rho)): one division."""
    s = t - rows[_CLOSEST]
    a2s = rows[_SPEED_SQUARED] * s
    rho = np.sqrt(a2s * s + rows[_MISS_SQUARED])
    off = rho - r
    zeta = rows[_ZETA0] + t * rows[_DZ]
    f = off * off + zeta * zeta - rows[_REACH_SQUARED]
    rho = rho + 1e-300
    return f, (f * rho) / (2.0 * (off * a2s + zeta * rows[_DZ] * rho))


def _newton(rows, t, r, f, step):
    """Monotone Newton from the root's side: rightward from a convex piece's left end (F > 0),
    leftward from a concave piece's right end (F <= 0), given F and the step at the start.
    A convex piece whose slope stops pointing down, or whose step leaves the piece, has no
    root: inf."""
    result = np.full(len(t), np.inf)
    active = np.arange(len(t))  # rows of ``result`` still iterating (some may have stopped)
    alive = np.ones(len(t), dtype=bool)
    all_convex = (rows[_CONVEX] == 1.0).all()
    for iteration in range(NEWTON_STEPS):
        if iteration:  # (the caller evaluated the start)
            f, step = _torus_function(rows, t, r)
        after = t - step
        tolerance = rows[_TOLERANCE]
        # Convex: F > 0 on the way, the root once F is within the tolerance. Since
        # F'' <= 2, a step of length s lands where 0 <= F <= s^2: within the tolerance
        # when s^2 is, which saves the evaluation that would confirm it.
        done = f <= tolerance
        moving = (after > t) & (after <= rows[_HIGH])
        landed = moving & (step * step <= tolerance)
        if not all_convex:
            # Concave: F <= 0 on the way; a stall (rounding) is inside, a hair past the root.
            convex = rows[_CONVEX] == 1.0
            concave_moving = (after < t) & (after >= rows[_LOW])
            done = np.where(convex, done, (f >= -tolerance) | ~concave_moving)
            moving = np.where(convex, moving, concave_moving)
            landed &= convex
        finished = alive & done
        result[active[finished]] = t[finished]
        finished = alive & landed & ~done
        result[active[finished]] = after[finished]
        alive &= ~done & ~landed & moving
        count = np.count_nonzero(alive)
        if not count:
            break
        if count < len(alive) // 2:  # compress only when it halves the work
            keep = np.flatnonzero(alive)
            active, t, rows, alive = active[keep], after[keep], rows[:, keep], alive[keep]
        else:  # stopped rows keep their t
            t = np.where(alive, after, t)
    return result


def _contact_capped(cx, cy, cz, r, h):
    """Nearest point of the solid cylinder to the centre and the normal toward the centre
    (branch-free: np.where costs more than the multiplies here); centres inside or on the
    solid, or on its axis, are redone by _contact_capped_odd."""
    rho = np.sqrt(cx * cx + cy * cy)
    zeros = np.zeros(rho.shape)
    off_radial = np.fmax(rho - r, zeros)
    nearest_z = np.fmin(np.fmax(cz, zeros), np.full(rho.shape, h))
    off_axial = cz - nearest_z
    gap = np.sqrt(off_radial * off_radial + off_axial * off_axial)
    inverse_gap, inverse_rho = 1.0 / gap, 1.0 / rho
    radial = off_radial * inverse_gap * inverse_rho  # the normal's radial part, over rho
    nearest = (rho - off_radial) * inverse_rho  # the nearest point's rho, over rho
    point = [nearest * cx, nearest * cy, nearest_z]
    normal = [radial * cx, radial * cy, off_axial * inverse_gap]
    odd = np.flatnonzero((gap == 0.0) | (rho == 0.0))
    if len(odd):
        _redo(point, normal, odd, _contact_capped_odd(cx[odd], cy[odd], cz[odd], r, h))
    return point, normal


def _contact_tube(cx, cy, cz, dx, dy, r, h, reach):
    """Nearest point of the tube to the centre and the normal toward the centre; centres on
    the wall (a zero radius: a ray) or on the axis are redone by _contact_tube_odd."""
    rho = np.sqrt(cx * cx + cy * cy)
    nearest_z = np.fmin(np.fmax(cz, np.zeros(rho.shape)), np.full(rho.shape, h))
    off_radial, off_axial = rho - r, cz - nearest_z
    gap = np.sqrt(off_radial * off_radial + off_axial * off_axial)
    inverse_gap, inverse_rho = 1.0 / gap, 1.0 / rho
    radial = off_radial * inverse_gap * inverse_rho
    point = [r * inverse_rho * cx, r * inverse_rho * cy, nearest_z]
    normal = [radial * cx, radial * cy, off_axial * inverse_gap]
    odd = np.flatnonzero((gap == 0.0) | (rho == 0.0) | (reach == 0.0))
    if len(odd):
        parts = (cx[odd], cy[odd], cz[odd], dx[odd], dy[odd])
        _redo(point, normal, odd, _contact_tube_odd(*parts, r, h, reach[odd]))
    return point, normal


def _redo(point, normal, rows, redone):
    for full, part in zip(point + normal, redone[0] + redone[1]):
        full[rows] = part


def _radial_unit(cx, cy, rho):
    """(cx, cy) / rho, and (1, 0) on the axis."""
    on_axis = rho == 0.0
    scale = 1.0 / np.where(on_axis, 1.0, rho)
    return cx * scale + on_axis, cy * scale


def _contact_capped_odd(cx, cy, cz, r, h):
    """_contact_capped for centres inside or on the solid (the nearest boundary point and its
    face's normal) or on the axis (radial direction (1, 0) of the frame)."""
    rho = np.sqrt(cx * cx + cy * cy)
    ex, ey = _radial_unit(cx, cy, rho)
    nearest_rho = np.minimum(rho, r)
    nearest_z = np.clip(cz, 0.0, h)
    off_radial, off_axial = rho - nearest_rho, cz - nearest_z
    gap = np.sqrt(off_radial * off_radial + off_axial * off_axial)
    inverse_gap = 1.0 / np.where(gap > 0.0, gap, 1.0)
    normal_radial, normal_axial = off_radial * inverse_gap, off_axial * inverse_gap
    inside = gap == 0.0
    if inside.any():  # the nearest face: side, bottom or top
        to_side, to_bottom, to_top = r - rho, cz, h - cz
        side = inside & (to_side <= to_bottom) & (to_side <= to_top)
        top = inside & ~side & (to_top < to_bottom)
        bottom = inside & ~side & ~top
        nearest_rho = np.where(side, r, nearest_rho)
        nearest_z = np.where(top, h, np.where(bottom, 0.0, nearest_z))
        normal_radial = np.where(side, 1.0, normal_radial)
        normal_axial = np.where(top, 1.0, np.where(bottom, -1.0, normal_axial))
    point = [nearest_rho * ex, nearest_rho * ey, nearest_z]
    return point, [normal_radial * ex, normal_radial * ey, normal_axial]


def _contact_tube_odd(cx, cy, cz, dx, dy, r, h, reach):
    """_contact_tube for centres on the wall (the wall's normal facing the cast) or on the
    axis (radial direction (1, 0) of the frame)."""
    rho = np.sqrt(cx * cx + cy * cy)
    ex, ey = _radial_unit(cx, cy, rho)
    nearest_z = np.clip(cz, 0.0, h)
    off_radial, off_axial = rho - r, cz - nearest_z
    gap = np.sqrt(off_radial * off_radial + off_axial * off_axial)
    on_wall = (gap == 0.0) | (reach == 0.0)
    inverse_gap = 1.0 / np.where(on_wall, 1.0, gap)
    facing = np.where(ex * dx + ey * dy > 0.0, -1.0, 1.0)
    normal_radial = np.where(on_wall, facing, off_radial * inverse_gap)
    normal_axial = np.where(on_wall, 0.0, off_axial * inverse_gap)
    return [r * ex, r * ey, nearest_z], [normal_radial * ex, normal_radial * ey, normal_axial]
