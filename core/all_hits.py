"""Every crossing of a ray with a shape's surface, in order: entries and exits of solids,
each crossing (or touch) of a surface.

Math. A solid is a set; along a ray it is a union of closed intervals of t, and each
interval's ends are its records: the entry (outward normal, facing the ray; at t = 0 when
the origin is inside, normal -direction as for :func:`raycast`) and the exit (outward
normal, along the ray). An interval of zero length (a tangent touch) is one record. A
surface (open tube, ``Heightfield(solid=False)``) gives one record per crossing or touch,
its normal facing the ray. Each shape lists its records for a chunk of rays
(``_all_hits_components(origin, direction, max_distance)`` -> ray rows, distances,
normals, in order per ray); this module keeps those in [0, max_distance], sorts them by
(ray, distance), merges records at the same distance of the same ray into the first
(an exit at its own entry is a touch) and computes the points. The first record of a ray
is :func:`raycast`'s hit: each shape's first record is computed as its ray query does, or,
for a shape with ``first_record_from_raycast`` (terrains), is raycast's hit itself
(_first_from_raycast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .rays import (
    CHUNK,
    AllHits,
    RayHits,
    as_per_row,
    as_rows,
    check_same_length,
    chunks,
    raycast,
    unit_components,
)
from .vectors import to_rows

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .rays import Shape


def raycast_all(
    shape: Shape, origins: ArrayLike, directions: ArrayLike, max_distance: ArrayLike = np.inf
) -> AllHits:
    """Every crossing of each ray with ``shape`` within [0, max_distance] (module docstring).

    origins, directions: (N, D) or (D,) (one ray: ``ray`` is all 0); max_distance: scalar
    or (N,). Returns :class:`AllHits` sorted by (ray, distance).
    """
    records = getattr(shape, "_all_hits_components", None)
    if records is None:
        raise ValueError(f"raycast_all does not support {type(shape).__name__}")
    check = getattr(shape, "_check_all_hits", None)
    if check is not None:
        check()
    dimension = shape.dimension
    origins, _ = as_rows("origins", origins, dimension)
    directions, _ = as_rows("directions", directions, dimension)
    check_same_length("origins", origins, "directions", directions)
    n = len(origins)
    max_distance = as_per_row("max_distance", max_distance, n, allow_inf=True)
    solid = getattr(shape, "solid", True)
    parts = []
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for part in chunks(n, getattr(shape, "all_hits_chunk", CHUNK)):
            origin = list(origins[part].T)
            unit, zero_row = unit_components(list(directions[part].T))
            if zero_row is not None:
                raise ValueError(f"directions row {part.start + zero_row} has zero length")
            limit = np.ascontiguousarray(max_distance[part])
            ray, distance, normal = records(origin, unit, limit)
            keep = (distance >= 0.0) & (distance <= limit[ray])
            ray, distance = ray[keep], distance[keep]
            normal = [x[keep] for x in normal]
            direction = [x[ray] for x in unit]
            if solid:  # distance 0 on a solid: the origin is in it, normal -direction
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
    hits = AllHits(
        ray=ray[first].astype(np.int64),
        distance=distance[first],
        point=point[order],
        normal=normal[order],
    )
    if getattr(shape, "first_record_from_raycast", False):
        hits = _first_from_raycast(hits, raycast(shape, origins, directions, max_distance))
    return hits


def _first_from_raycast(hits: AllHits, first: RayHits) -> AllHits:
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
