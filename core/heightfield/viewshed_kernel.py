"""Compiled viewshed of one observer on a TRIANGLES terrain: most vertices decided by bounds
shared between all the lines of sight, the rest left to the exact line-of-sight kernel.

A vertex's line of sight runs from the eye E to its target T (horizontal distance D). At
horizontal distance d along it the line's height is ``ez + s d`` with ``s = (tz - ez) / D``,
and its clearance over the terrain is ``g(d) = ez + s d - h(d) = (s - slope(d)) d`` where
``slope(d) = (h(d) - ez) / d``. The line of sight is blocked (core.occluded) when ``g <=
tol`` somewhere on the segment trimmed by ``trim`` of its length at each end, ``tol`` being
a cell's touching tolerance (grid.py). This kernel answers VISIBLE only where ``g > 2 TOL``
on the whole trimmed segment and BLOCKED only where ``g < -TOL`` somewhere on it (with the
segment starting above the terrain, or a solid terrain), ``TOL`` being the largest cell
tolerance; everything else is UNDECIDED and goes to core.occluded. Rounding in what follows
is far below TOL, so the answers are occluded's.

Sectors. Every point of a line of sight lies in the direction of T from E. Rings of width
``w`` around E (ring r: ``r w <= d < (r+1) w``) are cut into ``2^k`` equal sectors of
pseudo-angle (``pseudo_angle``, monotonic in the angle: no trigonometry), ``2^k`` growing
with r so that a sector is about a cell wide and each ring's sectors split its inner
neighbour's. A sector keeps the highest and lowest corner of the cells that may overlap it
(each cell's box in distance and angle; ``mark``), so every terrain point in it has a slope
between ``lower`` and ``upper`` (those heights over the sector's nearest or farthest
distance, whichever bounds). Taken as running maxima outwards along the nested sectors
(``bound``), one lookup gives, for a target's direction and a ring r:

* ``upper``: no terrain point of rings 1..r in that direction has a larger slope. With
  ``s - upper > 2 TOL / w`` the clearance over those rings is ``(s - slope) d > 2 TOL``.
* ``lower``: some point of every ring 0..r in that direction has at least that slope, so
  with ``lower - s > 2 TOL / w`` the point 3/4 of a ring in has ``g < -1.5 TOL``: blocked.

The tables are float32, rounded outwards (``upper`` up, ``lower`` down): bounds still.

Near the ends the bounds cannot decide (the clearance goes to 0 at a target lying on the
terrain), so the stretch from the last ring the bounds clear to the target, and the first
ring when the eye is not clear of its own cells, are measured exactly: the clearance is
linear inside each triangle, so its least value on a stretch is at the stretch's ends or
where the path crosses a grid line or a diagonal (``least_clearance``). A target within
three rings is measured exactly all the way.
"""

import functools
import math

import numpy as np
from numba import njit

from ..kernel_common import INF, borrowed, helper

VISIBLE = 1
HIDDEN = 0
UNDECIDED = 2
ANGLE_SLACK = 1e-9  # of a turn: a cell's sectors are widened by the rounding of its angles
MIN_SECTOR_LOG = 6  # at least 64 sectors per ring (the first rings' cells span wide angles)


@functools.lru_cache(maxsize=8)
def ring_layout(rings, max_log):
    """(log2 of the sector count, offset into the tables) per ring (read-only), and so the
    tables' size: about one sector per ring width of arc, at least 2^MIN_SECTOR_LOG, at
    most 2^max_log."""
    logs = np.empty(rings, dtype=np.int64)
    offsets = np.empty(rings + 1, dtype=np.int64)
    offsets[0] = 0
    for r in range(rings):
        log = max(MIN_SECTOR_LOG, min(max_log, math.ceil(math.log2(2.0 * math.pi * (r + 1)))))
        logs[r] = log
        offsets[r + 1] = offsets[r] + (1 << log)
    logs.setflags(write=False)
    offsets.setflags(write=False)
    return logs, offsets


@helper
def pseudo_angle(dx, dy):
    """A turn's fraction in [0, 1) increasing with the angle of (dx, dy) from +x, counter-
    clockwise (the "diamond angle": p / (|dx| + |dy|) per quadrant)."""
    if dy >= 0.0:
        if dx >= 0.0:
            p = dy / (dx + dy) if dx + dy > 0.0 else 0.0
        else:
            p = 1.0 - dx / (dy - dx)
    elif dx < 0.0:
        p = 2.0 - dy / (-dx - dy)
    else:
        p = 3.0 + dx / (dx - dy)
    return 0.25 * p


@helper
def float32_up(x):
    """x as a float32 at or above it (a bound kept in half the memory), without a call to a
    library in the loop: x raised by 2^-23 of itself, at least the half float32 step that
    rounding to nearest may take away (at most 2^-24 of the raised value), so within 2^-22
    of x; below float32's normal range, where that half step is absolute, the next one up."""
    rounded = np.float32(x + abs(x) * 2.0**-23)
    return rounded if rounded >= x else np.nextafter(rounded, np.float32(INF))


@helper
def float32_down(x):
    """x as a float32 at or below it (float32_up mirrored)."""
    rounded = np.float32(x - abs(x) * 2.0**-23)
    return rounded if rounded <= x else np.nextafter(rounded, np.float32(-INF))


@helper
def sector_of(fraction, log):
    n = 1 << log
    b = int(fraction * n)
    return b if b < n else n - 1


@helper
def triangles(h00, h10, h01, h11, u, v, anti):
    """The TRIANGLES surface of a cell at local (u, v) (grid.py: split along u = v, or
    u + v = 1 where ``anti``)."""
    if anti:
        if u + v <= 1.0:
            return h00 + (h10 - h00) * u + (h01 - h00) * v
        return h11 + (h11 - h01) * (u - 1.0) + (h11 - h10) * (v - 1.0)
    if u >= v:
        return h00 + (h10 - h00) * u + (h11 - h10) * v
    return h00 + (h11 - h01) * u + (h01 - h00) * v


@helper
def slope_bounds(top, bottom, ez, near, far):
    """(upper, lower) bounds of (h - ez) / d over heights in [bottom, top] at distances d in
    [near, far) (near may be 0): each is largest or smallest at one end."""
    if top == -INF:  # no cell: no line of sight passes here
        upper = -INF
    elif top >= ez:
        upper = (top - ez) / near if near > 0.0 else INF
    else:
        upper = (top - ez) / far
    if bottom == INF:
        lower = -INF
    elif bottom >= ez:
        lower = (bottom - ez) / far
    else:
        lower = (bottom - ez) / near if near > 0.0 else -INF
    return upper, lower


@njit(cache=True, nogil=True, error_model="numpy")
def mark(heights, x, y, ex, ey, reach, width, logs, offsets, tops, bottoms, start, stop):
    """For each part p in start..stop (of ``len(tops)``, a band of rows of cells each):
    ``tops[p]`` and ``bottoms[p]`` get each sector's highest and lowest corner of the band's
    cells that may overlap it (a cell's box in distance and angle)."""
    rings = len(logs)
    ny, nx = heights.shape
    for part in range(start, stop):
        upper = tops[part]
        lower = bottoms[part]
        upper[:] = np.float32(-INF)
        lower[:] = np.float32(INF)
        first_row = part * (ny - 1) // len(tops)
        last_row = (part + 1) * (ny - 1) // len(tops)
        mark_rows(
            heights,
            x,
            y,
            ex,
            ey,
            reach,
            width,
            logs,
            offsets,
            upper,
            lower,
            rings,
            first_row,
            last_row,
        )
    return 0


@helper
def mark_rows(
    heights, x, y, ex, ey, reach, width, logs, offsets, upper, lower, rings, first_row, last_row
):
    """mark's work on the cells of rows first_row..last_row."""
    ny, nx = heights.shape
    per_ring = 1.0 / width
    # The pseudo-angles and distances from the eye of rows j (below) and j + 1 (above).
    below, above = np.empty((2, nx)), np.empty((2, nx))
    for i in range(nx):
        dx, dy = x[i] - ex, y[first_row] - ey
        below[0, i], below[1, i] = pseudo_angle(dx, dy), math.sqrt(dx * dx + dy * dy)
    for j in range(first_row, last_row):
        ya = y[j] - ey
        yb = y[j + 1] - ey
        for i in range(nx):
            dx = x[i] - ex
            above[0, i], above[1, i] = pseudo_angle(dx, yb), math.sqrt(dx * dx + yb * yb)
        gy = ya if ya > 0.0 else (-yb if yb < 0.0 else 0.0)
        for i in range(nx - 1):
            xa = x[i] - ex
            xb = x[i + 1] - ex
            gx = xa if xa > 0.0 else (-xb if xb < 0.0 else 0.0)
            d0, d1, d2, d3 = below[1, i], below[1, i + 1], above[1, i], above[1, i + 1]
            # The cell's nearest point: a corner, or on an edge facing the eye (a gap 0).
            if gx > 0.0 and gy > 0.0:
                near = min(min(d0, d1), min(d2, d3))
            else:
                near = gx if gx > gy else gy
            if near > reach:
                continue
            r0 = int(near * per_ring)
            r1 = int(max(max(d0, d1), max(d2, d3)) * per_ring)  # its farthest: a corner
            r1 = r1 if r1 < rings else rings - 1
            h00 = heights[j, i]
            h10 = heights[j, i + 1]
            h01 = heights[j + 1, i]
            h11 = heights[j + 1, i + 1]
            top = float32_up(max(max(h00, h10), max(h01, h11)))
            bottom = float32_down(min(min(h00, h10), min(h01, h11)))
            a0, a1, a2, a3 = below[0, i], below[0, i + 1], above[0, i], above[0, i + 1]
            low = min(min(a0, a1), min(a2, a3))
            high = max(max(a0, a1), max(a2, a3))
            parts = 1
            if gx == 0.0 and gy == 0.0:  # the eye is in this cell: every direction
                low, high = 0.0, 1.0
            elif high - low > 0.5:  # across +x: the cell spans [low', 1) and [0, high']
                parts = 2
                low = min(
                    min(a0 if a0 >= 0.5 else 1.0, a1 if a1 >= 0.5 else 1.0),
                    min(a2 if a2 >= 0.5 else 1.0, a3 if a3 >= 0.5 else 1.0),
                )
                high = max(
                    max(a0 if a0 < 0.5 else 0.0, a1 if a1 < 0.5 else 0.0),
                    max(a2 if a2 < 0.5 else 0.0, a3 if a3 < 0.5 else 0.0),
                )
            for r in range(r0, r1 + 1):
                base = offsets[r]
                log = logs[r]
                for part in range(parts):
                    first = low - ANGLE_SLACK if part == 0 else 0.0
                    last = high + ANGLE_SLACK if parts == 1 or part == 1 else 1.0
                    k = base + sector_of(first if first > 0.0 else 0.0, log)
                    end = base + sector_of(last, log)
                    while k <= end:
                        upper[k] = top if top > upper[k] else upper[k]
                        lower[k] = bottom if bottom < lower[k] else lower[k]
                        k += 1
        below, above = above, below


@njit(cache=True, nogil=True, error_model="numpy")
def bound(ez, width, logs, offsets, tops, bottoms, start, stop):
    """The slope bounds, into ``tops[0]`` (upper) and ``bottoms[0]`` (lower), from mark's
    heights over all parts, as running maxima outwards (module docstring): ``upper`` from
    ring 1, ``lower`` from ring 0. Angles are cut in ``len(tops)`` equal turns (start..stop
    here): a sector's inner neighbour lies in its own (every ring has at least that many
    sectors, a power of two), so the turns need no order between them."""
    upper = tops[0]
    lower = bottoms[0]
    parts = len(tops)
    for r in range(len(logs)):
        base = offsets[r]
        parent = offsets[r - 1] if r > 0 else 0
        shift = logs[r] - logs[r - 1] if r > 0 else 0
        count = 1 << logs[r]
        for b in range(start * count // parts, stop * count // parts):
            top = upper[base + b]
            bottom = lower[base + b]
            for part in range(1, parts):
                other = tops[part, base + b]
                top = other if other > top else top
                other = bottoms[part, base + b]
                bottom = other if other < bottom else bottom
            su, sl = slope_bounds(top, bottom, ez, r * width, (r + 1) * width)
            if r >= 2:
                inner = upper[parent + (b >> shift)]
                su = inner if inner > su else su
            if r >= 1:
                inner = lower[parent + (b >> shift)]
                sl = inner if inner > sl else sl
            upper[base + b] = float32_up(su)
            lower[base + b] = float32_down(sl)
    return 0


@helper
def clear_rings(upper, offsets, logs, fraction, s, margin, last, guess):
    """Rings 1..r (r <= last) whose bounds clear a line of slope s in the direction
    ``fraction`` (0: none), as many as a few probes find: ``upper``'s running maxima grow
    outwards, so the rings that clear are 1..r for some r. Lines of neighbouring vertices
    being alike, ``guess`` (the row's previous answer) is tried first, one ring further
    out, then as is; failing both, steps double inwards and then halve."""
    for probe in (guess + 1, guess):
        if probe >= 1 and probe <= last:
            if s - upper[offsets[probe] + sector_of(fraction, logs[probe])] > margin:
                return probe
    low, high, gap = 0, (guess if guess <= last else last + 1) - 1, 1
    while high >= 1:
        probe = high - gap + 1 if high - gap + 1 >= 1 else 1
        if s - upper[offsets[probe] + sector_of(fraction, logs[probe])] > margin:
            low = probe
            break
        high, gap = probe - 1, 2 * gap
    while low < high:
        probe = (low + high + 1) >> 1
        if s - upper[offsets[probe] + sector_of(fraction, logs[probe])] > margin:
            low = probe
        else:
            high = probe - 1
    return low


@helper
def surface_at(heights, anti, has_anti, U, V):
    """The surface's height at grid coordinates (U, V), clamped to the grid."""
    ny, nx = heights.shape
    ci = min(max(int(math.floor(U)), 0), nx - 2)
    cj = min(max(int(math.floor(V)), 0), ny - 2)
    split = has_anti and anti[cj * (nx - 1) + ci] > 0.0
    return triangles(
        heights[cj, ci],
        heights[cj, ci + 1],
        heights[cj + 1, ci],
        heights[cj + 1, ci + 1],
        U - ci,
        V - cj,
        split,
    )


@helper
def least_clearance(heights, anti, has_anti, line, a, b, lowest, stop_below):
    """``lowest`` lowered to the least clearance of the line of sight over lambda in
    [a, b]: at the ends and where the path crosses a grid line or a cell's diagonal (the
    clearance is linear in between), visited cell by cell (Amanatides-Woo). On a grid line
    the surface is its edge's interpolation, on a diagonal the diagonal's. Stops once the
    clearance is below ``stop_below``. line = (Ue, Ve, dU, dV, ez, dz): the eye in grid
    coordinates, the path's grid extent, the eye's height and the rise to the target."""
    ny, nx = heights.shape
    Ue, Ve, dU, dV, ez, dz = line
    for lam in (a, b):
        g = ez + lam * dz - surface_at(heights, anti, has_anti, Ue + lam * dU, Ve + lam * dV)
        lowest = g if g < lowest else lowest
    ci = min(max(int(math.floor(Ue + a * dU)), 0), nx - 2)  # the walk starts in a's cell
    cj = min(max(int(math.floor(Ve + a * dV)), 0), ny - 2)
    step_i = 1 if dU > 0.0 else -1
    step_j = 1 if dV > 0.0 else -1
    line_i = ci + 1 if dU > 0.0 else ci  # the next column and row lines the path meets
    line_j = cj + 1 if dV > 0.0 else cj
    inverse_u = 1.0 / dU if dU != 0.0 else 0.0
    inverse_v = 1.0 / dV if dV != 0.0 else 0.0
    inverse_main = 1.0 / (dU - dV) if dU != dV else 0.0  # diagonals U - V = k
    inverse_anti = 1.0 / (dU + dV) if dU != -dV else 0.0  # and U + V = k
    next_u = (line_i - Ue) * inverse_u if dU != 0.0 else INF
    next_v = (line_j - Ve) * inverse_v if dV != 0.0 else INF
    enter = a
    while lowest >= stop_below:
        leave = next_u if next_u < next_v else next_v
        leave = leave if leave < b else b
        # The cell's diagonal: u = v (U - V = ci - cj), or u + v = 1 where split.
        if has_anti and anti[cj * (nx - 1) + ci] > 0.0:
            lam = (ci + cj + 1 - Ue - Ve) * inverse_anti
            corner, far = heights[cj + 1, ci], heights[cj, ci + 1]  # at u = 0 and u = 1
        else:
            lam = (ci - cj - Ue + Ve) * inverse_main
            corner, far = heights[cj, ci], heights[cj + 1, ci + 1]
        if lam > enter and lam < leave:
            h = corner + (Ue + lam * dU - ci) * (far - corner)
            g = ez + lam * dz - h
            lowest = g if g < lowest else lowest
        if leave >= b:
            break
        enter = leave
        if next_u <= next_v:  # onto column line_i, between rows cj and cj + 1
            h0 = heights[cj, line_i]
            h = h0 + (Ve + leave * dV - cj) * (heights[cj + 1, line_i] - h0)
            ci += step_i
            line_i += step_i
            next_u = (line_i - Ue) * inverse_u
        else:  # onto row line_j, between columns ci and ci + 1
            h0 = heights[line_j, ci]
            h = h0 + (Ue + leave * dU - ci) * (heights[line_j, ci + 1] - h0)
            cj += step_j
            line_j += step_j
            next_v = (line_j - Ve) * inverse_v
        g = ez + leave * dz - h
        lowest = g if g < lowest else lowest
        if ci < 0 or ci > nx - 2 or cj < 0 or cj > ny - 2:
            break  # on the grid's border (rounding at the target's end)
    return lowest


@njit(cache=True, nogil=True, error_model="numpy")
def decide(
    heights,
    anti,
    has_anti,
    x,
    y,
    eye,
    nearby,
    target_height,
    reach2,
    width,
    tol,
    trim,
    blocks_below,
    longest,
    logs,
    offsets,
    upper,
    lower,
    state,
    start,
    stop,
):
    """state[j, i] for rows start..stop: VISIBLE, HIDDEN (blocked, or beyond reach) or
    UNDECIDED (module docstring); returns how many are UNDECIDED. eye = (Ue, Ve, ez, ex,
    ey): grid and world coordinates; nearby: the highest corner of the cells within a ring
    of the eye; blocks_below: a point below the terrain blocks (a solid, or a segment that
    starts above a surface); longest: the most rings next to the target measured exactly,
    beyond which occluded judges."""
    heights, anti = borrowed(heights), borrowed(anti)  # helpers take them per vertex
    upper, offsets, logs = borrowed(upper), borrowed(offsets), borrowed(logs)
    nx = heights.shape[1]
    Ue, Ve, ez, ex, ey = eye[0], eye[1], eye[2], eye[3], eye[4]
    margin = 2.0 * tol / width
    per_ring = 1.0 / width
    # Below this clearance a point blocks (a solid, or a line that starts above a surface).
    stop_below = -tol if blocks_below else -INF
    undecided = 0
    for j in range(start, stop):
        DY = y[j] - ey
        previous = 1  # rings left to measure exactly for the row's previous vertex
        for i in range(nx):
            DX = x[i] - ex
            D2 = DX * DX + DY * DY
            if D2 > reach2:
                state[j, i] = HIDDEN
                continue
            dz = heights[j, i] + target_height - ez
            D = math.sqrt(D2)
            rings = int(D * per_ring)
            line = (Ue, Ve, i - Ue, j - Ve, ez, dz)
            if rings < 3:  # near: the whole segment exactly
                lowest = least_clearance(heights, anti, has_anti, line, trim, 1.0 - trim, INF,
                                         stop_below)  # fmt: skip
            else:
                s = dz / D
                fraction = pseudo_angle(DX, DY)
                r = rings - 1  # ring r lies wholly before the target
                if blocks_below and lower[offsets[r] + sector_of(fraction, logs[r])] - s > margin:
                    state[j, i] = HIDDEN
                    continue
                r = clear_rings(upper, offsets, logs, fraction, s, margin, r, rings - previous)
                previous = rings - r
                if previous > longest:
                    state[j, i] = UNDECIDED
                    undecided += 1
                    continue
                lowest = INF
                if ez - nearby + (s if s < 0.0 else 0.0) * width <= 2.0 * tol:
                    # Not clear of the highest corner within a ring: that ring exactly.
                    lowest = least_clearance(heights, anti, has_anti, line, trim, width / D,
                                             lowest, stop_below)  # fmt: skip
                if lowest > 2.0 * tol:
                    lowest = least_clearance(heights, anti, has_anti, line, (r + 1) * width / D,
                                             1.0 - trim, lowest, stop_below)  # fmt: skip
            verdict = UNDECIDED
            if lowest > 2.0 * tol:
                verdict = VISIBLE
            elif lowest < stop_below:
                verdict = HIDDEN
            state[j, i] = verdict
            undecided += verdict == UNDECIDED
    return undecided


def ground_height(heights, has_anti, anti, eye):
    """The terrain's height under the eye (eye as for ``decide``), in Python."""
    ny, nx = heights.shape
    i = min(max(int(math.floor(eye[0])), 0), nx - 2)
    j = min(max(int(math.floor(eye[1])), 0), ny - 2)
    split = bool(has_anti and anti[j * (nx - 1) + i] > 0.0)
    corners = heights[j, i], heights[j, i + 1], heights[j + 1, i], heights[j + 1, i + 1]
    return triangles.py_func(*corners, eye[0] - i, eye[1] - j, split)
