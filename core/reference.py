"""The numpy reference of every query: chunked, vectorized over the rays, the readable
definition the compiled kernels repeat bit for bit.

* large batches are processed in chunks of ``CHUNK`` rays, so temporaries stay small;
* one hit convention: ``distance`` is measured along the unit direction, ``hit`` only for
  ``0 <= distance <= max_distance``; a hit at distance 0 (origin inside or on a solid) has
  ``point = origin`` and ``normal = -unit(direction)``. A shape whose ``solid`` is False is
  a surface: a hit at 0 keeps the normal the shape gives (facing the ray).

Line of sight. With ``L = |end - start|``, ``u = (end - start) / L`` and the tolerance
``e = 1e-9 L`` (``ON_SEGMENT_END``), the segment is blocked when the shape meets the ray
``start + t u`` for some ``t`` in ``[e, L - e]``: the ray query from ``start + e u`` with
``max_distance = L - 2 e`` answers it. Trimming both ends by ``e`` is what makes a point
lying on the surface (a target on a terrain vertex, an observer standing on the ground)
not hidden by that surface, while a start inside a solid is still blocked (the trimmed
segment starts inside too: a hit at distance 0). A touch (tangent, grazing a ridge)
counts as blocking, as it counts as a hit for raycast. A zero-length segment is blocked
only when its point is inside (or on) a solid. Any-hit: a shape's ray query stops at its
first blocker (the terrain walk visits cells in order and ends a segment at the first cell
that meets it); nothing is sorted or collected.

All hits. A solid is a set; along a ray it is a union of closed intervals of t, and each
interval's ends are its records: the entry (outward normal, facing the ray; at t = 0 when
the origin is inside, normal -direction as for raycast) and the exit (outward normal,
along the ray). An interval of zero length (a tangent touch) is one record. A surface gives
one record per crossing or touch, its normal facing the ray. Each shape lists its records
for a chunk of rays (``Shape.crossings``); all_hits keeps those in [0, max_distance], sorts
them by (ray, distance), merges records at the same distance of the same ray into the
first (an exit at its own entry is a touch) and computes the points. The first record of a
ray is raycast's hit: each shape's first record is computed as its ray query does, or, for
a shape with ``first_record_from_raycast`` (terrains), is raycast's hit itself
(first_from_raycast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .results import AllHits, CastHits, RayHits
from .vectors import at_most, components, dot, to_rows

if TYPE_CHECKING:
    from .protocol import Shape

# The fraction of a segment's length trimmed at each end (see the module docstring).
ON_SEGMENT_END = 1e-9

# Rays per chunk: temporaries of 256 KB, a few of which fit the 1 MB L2 cache, while the
# fixed cost of each numpy call is spread over many rays.
CHUNK = 32768

# glibc hands blocks over 128 KB back to the system (and faults them in again on the next
# use) until the first such block is freed; then it raises that threshold to the freed
# block's size (and the heap's trim threshold to twice that). Trigger it once with a 24 MB
# block (larger than a cylinder's sphere casts' temporaries and outputs at 100k casts) so
# the chunk temporaries and the output arrays of repeated calls are reused, not faulted in
# again on every call.
np.empty(3 << 20)


def chunks(n: int, size: int | None = None):
    """Slices covering range(n) in steps of ``size`` (default ``CHUNK``)."""
    size = size or CHUNK
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def unit_rows(vectors: np.ndarray):
    """Unit vectors and lengths of the rows of ``vectors`` (length-0 rows stay 0).

    Scales by the largest component first, so tiny and huge vectors do not under- or
    overflow when squared."""
    scale = np.abs(vectors).max(axis=1)
    safe = np.where(scale > 0, scale, 1.0)
    scaled = vectors / safe[:, None]
    length = np.sqrt(dot(scaled.T, scaled.T))  # summed left to right, as the kernels do
    unit = scaled / np.where(length > 0, length, 1.0)[:, None]
    return unit, length * scale


def unit_components(vector):
    """Unit vectors of a component list and the first zero-length row (or None).

    The plain 1/sqrt(x.x) is exact enough in the normal range; rows whose squared length
    under- or overflows are redone with unit_rows's scaling. NaN rows (the normals of
    misses, when Placed maps them back) stay NaN. (Those under- and overflows, and a zero
    row's 1/0, are expected and handled here: numpy does not warn of them.)"""
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        length_squared = dot(vector, vector)
        inverse = 1.0 / np.sqrt(length_squared)
        unit = [x * inverse for x in vector]
    if not (length_squared.min() > 1e-290 and length_squared.max() < 1e290):
        rows = np.flatnonzero((length_squared <= 1e-290) | (length_squared >= 1e290))
        if not len(rows):
            return unit, None
        fixed, length = unit_rows(np.stack([x[rows] for x in vector], axis=1))
        for axis, x in enumerate(unit):
            x[rows] = fixed[:, axis]
        if (length == 0).any():
            return unit, int(rows[np.flatnonzero(length == 0)[0]])
    return unit, None


def gated(distance, hit):
    """(gate, gated distance): gate is 1 for hits and NaN for misses, and the gated
    distance NaN for misses, so whatever is computed from it is NaN for misses too.
    Branch-free, because masked assignment costs more than the arithmetic here."""
    gate = at_most(hit * np.inf, 1.0)
    return gate, distance * gate


def segment_rays(starts, ends):
    """Unit directions and lengths of the segments, the length scaled by the largest
    component first (no under- or overflow), written out per component so that the
    compiled kernels repeat it bit for bit; a zero-length segment gets direction +z (+y
    in 2D)."""
    vector = ends - starts
    scale = np.abs(vector).max(axis=1)
    scaled = vector / np.where(scale > 0, scale, 1.0)[:, None]
    columns = list(scaled.T)
    squared = columns[0] * columns[0]
    for column in columns[1:]:
        squared = squared + column * column
    scaled_length = np.sqrt(squared)
    unit = scaled / np.where(scaled_length > 0, scaled_length, 1.0)[:, None]
    length = scaled_length * scale
    zero = length == 0.0
    if zero.any():
        unit[zero] = 0.0
        unit[zero, -1] = 1.0
    return unit, length


def raycast(shape: Shape, origins, directions, max_distance) -> RayHits:
    """raycast on validated (N, D) rows and (N,) max_distance."""
    n, dimension = origins.shape
    # A surface (open tube, Heightfield(solid=False)) has no inside: a hit at distance 0 is
    # the surface at the origin and keeps the surface's normal (facing the ray).
    solid = shape.solid
    hits = RayHits(
        hit=np.empty(n, dtype=bool),
        distance=np.empty(n),
        point=np.empty((n, dimension)),
        normal=np.empty((n, dimension)),
    )
    cells = []

    def work(part):
        # Column views: the first arithmetic on each reads it once, no copies.
        origin = list(origins[part].T)
        unit, zero_row = unit_components(list(directions[part].T))
        if zero_row is not None:
            raise ValueError(f"directions row {part.start + zero_row} has zero length")
        limit = max_distance[part]
        found = shape.intersect(origin, unit, limit)
        distance, normal = found[0], found[1]
        if len(found) > 2:
            cells.append((part, found[2]))
        hit = (distance <= limit) & (distance < np.inf)
        hits.hit[part] = hit
        inside = distance == 0.0
        if solid and inside.any():  # distance 0 (origin in or on a solid): normal = -direction
            normal = [np.where(inside, -u, n) for n, u in zip(normal, unit)]
        gate, distance = gated(distance, hit)
        point = [o + distance * u for o, u in zip(origin, unit)]
        normal = [x * gate for x in normal]
        distance = np.fmin(distance, np.full(distance.shape, np.inf))  # NaN -> inf
        hits.distance[part] = distance
        to_rows(point, hits.point[part])
        to_rows(normal, hits.normal[part])

    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        # A shape may ask for larger chunks (the heightfield walk loops over steps, and
        # its per-step numpy call overhead is amortized over more rays).
        for part in chunks(n, shape.chunk_size):
            work(part)
    if cells:
        hits.cell = np.full((n, 2), -1, dtype=np.int64)
        for part, cell in cells:
            hits.cell[part] = cell
        hits.cell[~hits.hit] = -1
    return hits


def sphere_cast(shape: Shape, starts, ends, radius) -> CastHits:
    """sphere_cast on validated (N, D) rows and (N,) radii, against ``shape.cast_target()``."""
    n, dimension = starts.shape
    result = CastHits(
        hit=np.empty(n, dtype=bool),
        distance=np.empty(n),
        center=np.empty((n, dimension)),
        point=np.empty((n, dimension)),
        normal=np.empty((n, dimension)),
    )

    def work(part):
        # Column views and component arithmetic, as in raycast (a zero-length cast: unit 0).
        start = list(starts[part].T)
        segment = [e - s for e, s in zip(ends[part].T, start)]
        unit, _ = unit_components(segment)
        length = dot(unit, segment)
        distance, point, normal = shape.sweep(start, unit, radius[part], length)
        hit = (distance <= length) & (distance < np.inf)
        result.hit[part] = hit
        gate, distance = gated(distance, hit)
        to_rows([s + distance * u for s, u in zip(start, unit)], result.center[part])
        to_rows([x * gate for x in point], result.point[part])
        to_rows([x * gate for x in normal], result.normal[part])
        result.distance[part] = np.fmin(distance, np.inf)  # NaN -> inf

    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for part in chunks(n):
            work(part)
    return result


def occluded(shape: Shape, starts, ends) -> np.ndarray:
    """occluded on validated (N, D) rows (module docstring)."""
    blocked = np.empty(len(starts), dtype=bool)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for part in chunks(len(starts), shape.chunk_size):
            blocked[part] = _occluded_part(shape, starts[part], ends[part])
    return blocked


def _occluded_part(shape, starts, ends):
    unit, length = segment_rays(starts, ends)
    trim = ON_SEGMENT_END * length
    origin = components(starts + trim[:, None] * unit)
    limit = length - 2.0 * trim
    distance = shape.intersect(origin, components(unit), limit)[0]
    hit = (distance <= limit) & (distance < np.inf)
    zero = length == 0.0
    if zero.any():  # only a point inside (or on) a solid blocks
        hit &= ~zero | (shape.solid & (distance == 0.0))
    return hit


def all_hits(shape: Shape, origins, directions, max_distance, kernel=None) -> AllHits:
    """raycast_all's records on validated (N, D) rows and (N,) max_distance, merged and
    sorted (module docstring); the first records not yet replaced by raycast's hits.
    ``kernel``: the shape's compiled records (queries.py), None for its numpy reference."""
    n, dimension = origins.shape
    parts = []
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for part in chunks(n, shape.all_hits_chunk):
            origin = list(origins[part].T)
            unit, zero_row = unit_components(list(directions[part].T))
            if zero_row is not None:
                raise ValueError(f"directions row {part.start + zero_row} has zero length")
            limit = np.ascontiguousarray(max_distance[part])
            ray, distance, normal = shape.crossings(origin, unit, limit, kernel)
            keep = (distance >= 0.0) & (distance <= limit[ray])
            ray, distance = ray[keep], distance[keep]
            normal = [x[keep] for x in normal]
            direction = [x[ray] for x in unit]
            if shape.solid:  # distance 0 on a solid: the origin is in it, normal -direction
                at_origin = distance == 0.0
                normal = [np.where(at_origin, -u, x) for x, u in zip(normal, direction)]
            point = [o[ray] + distance * u for o, u in zip(origin, direction)]
            parts.append((ray + part.start, distance, to_rows(point), to_rows(normal)))
    if not parts:
        empty = np.empty((0, dimension))
        return AllHits(np.empty(0, dtype=np.int64), np.empty(0), empty, empty.copy())
    ray, distance, point, normal = (np.concatenate(arrays) for arrays in zip(*parts))
    order = np.lexsort((distance, ray))  # stable: records at one distance keep their order
    ray, distance = ray[order], distance[order]
    first = np.ones(len(ray), dtype=bool)
    first[1:] = (ray[1:] != ray[:-1]) | (distance[1:] != distance[:-1])
    order = order[first]
    return AllHits(
        ray=ray[first].astype(np.int64),
        distance=distance[first],
        point=point[order],
        normal=normal[order],
    )


def first_from_raycast(hits: AllHits, first: RayHits) -> AllHits:
    """``hits`` with each ray's first record made ``first``'s hit (raycast's answer, bit
    for bit; no record where it misses). The records it stands for are those of the same
    event, within 1e-9 (1 + distance) of it (the contract's distance tolerance): the records
    up to its distance are dropped (touches within a tolerance that raycast's rounding does
    not count, or the event itself), and, where none was that near before it, the first
    record after it when that near (the event itself, rounded the other way)."""
    ray, distance = hits.ray, hits.distance
    hit = first.hit
    counted = hit[ray]  # the rays it misses keep no record
    at = np.where(hit, first.distance, 0.0)[ray]
    near = 1e-9 * (1.0 + at)
    keep = counted & (distance > at)
    near_before = np.zeros(len(hit), dtype=bool)
    near_before[ray[counted & (distance >= at - near) & (distance <= at)]] = True
    kept = np.flatnonzero(keep)
    leading = np.ones(len(kept), dtype=bool)  # each ray's first record after raycast's hit
    leading[1:] = ray[kept[1:]] != ray[kept[:-1]]
    same_event = leading & (distance[kept] <= (at + near)[kept]) & ~near_before[ray[kept]]
    keep[kept[same_event]] = False
    kept = np.flatnonzero(keep)
    rows = np.flatnonzero(hit)
    # raycast's hit goes before its ray's records kept, which all lie beyond it
    inserted = np.searchsorted(ray[kept], rows) + np.arange(len(rows))
    order = np.empty(len(kept) + len(rows), dtype=np.int64)  # into kept records, then hits
    mine = np.zeros(len(order), dtype=bool)
    mine[inserted] = True
    order[inserted] = len(kept) + np.arange(len(rows))
    order[~mine] = np.arange(len(kept))
    return AllHits(
        *(
            np.concatenate((ours.take(kept, axis=0), theirs.take(rows, axis=0))).take(order, axis=0)
            for ours, theirs in (
                (ray, np.arange(len(hit))),
                (distance, first.distance),
                (hits.point, first.point),
                (hits.normal, first.normal),
            )
        )
    )
