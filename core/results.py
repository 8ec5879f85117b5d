"""The queries' result types (arrays of length N; scalars for a single ray)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RayHits:
    """Result of :func:`raycast`; arrays of length N (scalars for a single ray)."""

    hit: np.ndarray  # (N,) bool
    distance: np.ndarray  # (N,) float64, inf where no hit
    point: np.ndarray  # (N, D) float64, NaN where no hit
    normal: np.ndarray  # (N, D) float64 unit, NaN where no hit
    cell: np.ndarray | None = None  # (N, 2) int (i, j) for Heightfield hits, -1 where none


@dataclass
class AllHits:
    """Result of :func:`core.raycast_all`: every surface crossing of every ray, as flat
    arrays of K records sorted by (ray, distance)."""

    ray: np.ndarray  # (K,) int64, the row of the ray each record belongs to
    distance: np.ndarray  # (K,) float64, along the unit direction
    point: np.ndarray  # (K, D) float64
    normal: np.ndarray  # (K, D) float64 unit: out of a solid; facing the ray on a surface


@dataclass
class CastHits:
    """Result of :func:`sphere_cast`; arrays of length N (scalars for a single cast)."""

    hit: np.ndarray  # (N,) bool
    distance: np.ndarray  # (N,) centre travel along start -> end, inf where no hit
    center: np.ndarray  # (N, 3) centre of the moving sphere at contact
    point: np.ndarray  # (N, 3) contact point on the target
    normal: np.ndarray  # (N, 3) target normal at the contact


def squeeze(result, single: bool):
    """``result`` with each array's first row, for a single ray."""
    if not single:
        return result
    fields = {name: (None if value is None else value[0]) for name, value in vars(result).items()}
    return type(result)(**fields)
