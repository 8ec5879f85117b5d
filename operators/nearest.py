"""The nearest hit of each ray over several targets, and the first contact of a sphere cast
over several targets (numpy and core only; the targets are ``mapping.Recognized``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import core
from .feedback import kernel_waits_shown


@dataclass
class NearestHits:
    """Per ray: the nearest hit over all targets (arrays of length N)."""

    hit: np.ndarray  # (N,) bool
    distance: np.ndarray  # (N,) float64, inf where no hit
    point: np.ndarray  # (N, 3), NaN where no hit
    normal: np.ndarray  # (N, 3), NaN where no hit
    target: np.ndarray  # (N,) int index into the target list, -1 where no hit


def nearest_ray_hits(targets, origins, directions, max_distance) -> NearestHits:
    """Cast every ray at every target; each ray keeps its nearest hit (first target on ties)."""
    count = len(origins)
    best = NearestHits(
        hit=np.zeros(count, dtype=bool),
        distance=np.full(count, np.inf),
        point=np.full((count, 3), np.nan),
        normal=np.full((count, 3), np.nan),
        target=np.full(count, -1, dtype=np.int64),
    )
    for index, target in enumerate(targets):
        try:
            with kernel_waits_shown():
                hits = core.raycast(target.shape, origins, directions, max_distance)
        except ValueError as error:
            raise ValueError(f"{target.name}: {error}") from None
        closer = hits.hit & (hits.distance < best.distance)
        best.distance[closer] = hits.distance[closer]
        best.point[closer] = hits.point[closer]
        best.normal[closer] = hits.normal[closer]
        best.target[closer] = index
    best.hit = best.target >= 0
    return best


@dataclass
class NearestCasts:
    """Per cast: the first contact over all targets (arrays of length N)."""

    hit: np.ndarray  # (N,) bool
    distance: np.ndarray  # (N,) centre travel from the start, inf where no contact
    center: np.ndarray  # (N, 3) centre of the moving sphere at contact, NaN where none
    point: np.ndarray  # (N, 3) contact point on the target, NaN where none
    normal: np.ndarray  # (N, 3) target normal at the contact, NaN where none
    target: np.ndarray  # (N,) int index into the target list, -1 where no contact


def nearest_cast_contacts(targets, starts, ends, radius) -> NearestCasts:
    """Cast a sphere of ``radius`` from each start to its end against every target; each
    cast keeps its first contact (first target on ties)."""
    count = len(starts)
    best = NearestCasts(
        hit=np.zeros(count, dtype=bool),
        distance=np.full(count, np.inf),
        center=np.full((count, 3), np.nan),
        point=np.full((count, 3), np.nan),
        normal=np.full((count, 3), np.nan),
        target=np.full(count, -1, dtype=np.int64),
    )
    for index, target in enumerate(targets):
        try:
            with kernel_waits_shown():
                casts = core.sphere_cast(target.shape, starts, ends, radius)
        except ValueError as error:  # core's reason, named after the operator and object
            reason = str(error).replace("sphere_cast", "Sphere Cast")
            raise ValueError(f"{target.name}: {reason}") from None
        closer = casts.hit & (casts.distance < best.distance)
        best.distance[closer] = casts.distance[closer]
        best.center[closer] = casts.center[closer]
        best.point[closer] = casts.point[closer]
        best.normal[closer] = casts.normal[closer]
        best.target[closer] = index
    best.hit = best.target >= 0
    return best
