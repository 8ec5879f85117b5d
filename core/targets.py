"""Queries over several targets at once: the nearest hit of each ray, the first contact of
each sphere cast, and lines of sight from one observer past several occluders.

Each target is any core shape (Placed or not); each is asked once for the whole batch. A
target that core refuses raises :class:`TargetError`, which says which one (its index in
the list given), so a caller can name it in its own words.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from .cylinder import Cylinder
from .heightfield import Heightfield
from .placed import Placed
from .queries import occluded, raycast, sphere_cast
from .sphere import Sphere


class TargetError(ValueError):
    """core refused the target at ``index`` of the list: ``reason`` is its message."""

    def __init__(self, index: int, reason: str):
        super().__init__(f"target {index}: {reason}")
        self.index = index
        self.reason = reason


@dataclass
class NearestHits:
    """Per ray: the nearest hit over all targets (arrays of length N)."""

    hit: np.ndarray  # (N,) bool
    distance: np.ndarray  # (N,) float64, inf where no hit
    point: np.ndarray  # (N, D), NaN where no hit
    normal: np.ndarray  # (N, D), NaN where no hit
    target: np.ndarray  # (N,) int index into the target list, -1 where no hit


@dataclass
class NearestCasts:
    """Per cast: the first contact over all targets (arrays of length N)."""

    hit: np.ndarray  # (N,) bool
    distance: np.ndarray  # (N,) centre travel from the start, inf where no contact
    center: np.ndarray  # (N, D) centre of the moving sphere at contact, NaN where none
    point: np.ndarray  # (N, D) contact point on the target, NaN where none
    normal: np.ndarray  # (N, D) target normal at the contact, NaN where none
    target: np.ndarray  # (N,) int index into the target list, -1 where no contact


def _batch(*arrays):
    """Each array as (N, D) float64 (one point or vector (D,) becomes a batch of one)."""
    return [np.atleast_2d(np.asarray(array, dtype=np.float64)) for array in arrays]


def nearest_hits(shapes, origins, directions, max_distance=np.inf) -> NearestHits:
    """Cast every ray (``origins``, ``directions``: (N, D) or (D,)) at every shape
    (``core.raycast``); each ray keeps its nearest hit, the first shape in the list on ties."""
    origins, directions = _batch(origins, directions)
    return _keep_nearest(
        NearestHits,
        origins.shape,
        shapes,
        lambda shape: raycast(shape, origins, directions, max_distance),
    )


def first_contacts(shapes, starts, ends, radius) -> NearestCasts:
    """Cast a sphere of ``radius`` from each start to its end against every shape
    (``core.sphere_cast``); each cast keeps its first contact, the first shape on ties."""
    starts, ends = _batch(starts, ends)
    return _keep_nearest(
        NearestCasts, starts.shape, shapes, lambda shape: sphere_cast(shape, starts, ends, radius)
    )


def _keep_nearest(result_type, rows, shapes, query):
    """A ``result_type`` (NearestHits or NearestCasts) of ``rows`` = (N, D) with each row's
    nearest answer of ``query(shape)`` over ``shapes``: every array field but ``hit`` and
    ``target`` copied from that answer; a row no shape answers stays a miss (inf distance,
    NaN vectors, target -1). The first shape in the list wins ties."""
    count, dimensions = rows
    names = [field.name for field in fields(result_type)]
    vectors = [name for name in names if name not in ("hit", "distance", "target")]
    best = result_type(
        hit=np.zeros(count, dtype=bool),
        distance=np.full(count, np.inf),
        target=np.full(count, -1, dtype=np.int64),
        **{name: np.full((count, dimensions), np.nan) for name in vectors},
    )
    copied = ["distance", *vectors]
    for index, shape in enumerate(shapes):
        try:
            found = query(shape)
        except ValueError as error:
            raise TargetError(index, str(error)) from None
        closer = found.hit & (found.distance < best.distance)
        for name in copied:
            getattr(best, name)[closer] = getattr(found, name)[closer]
        best.target[closer] = index
    best.hit = best.target >= 0
    return best


def query_cost(shape) -> int:
    """A shape's rank in how much one segment costs it: analytic shapes before terrains."""
    local = shape.shape if isinstance(shape, Placed) else shape
    for rank, kind in enumerate((Sphere, Cylinder, Heightfield)):
        if isinstance(local, kind):
            return rank
    return 3


def visible_from(observer, points, occluders) -> np.ndarray:
    """(N,) bool: True where no occluder meets the segment from ``observer`` (D,) to the
    point (``points`` (N, D)) before the point (``core.occluded``: a point lying on a
    surface is not hidden by it; a point at the observer itself is hidden only when the
    observer is inside a solid).

    Each occluder is asked only about the segments still visible, the cheap ones first
    (query_cost), so the terrains' walks get fewer segments."""
    (points,) = _batch(points)
    visible = np.ones(len(points), dtype=bool)
    asked = np.arange(len(points))
    order = sorted(range(len(occluders)), key=lambda index: query_cost(occluders[index]))
    for index in order:
        if not len(asked):
            break
        ends = points[asked]
        starts = np.empty_like(ends)
        starts[:] = observer
        try:
            hidden = occluded(occluders[index], starts, ends)
        except ValueError as error:
            raise TargetError(index, str(error)) from None
        visible[asked[hidden]] = False
        asked = asked[~hidden]
    return visible
