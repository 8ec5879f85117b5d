"""Ray batches: validation, unit directions, result types and chunked evaluation.

Every query in ``core`` goes through this module, so the rules live in one place:

* inputs are (N, D) or (D,) arrays of finite floats; directions need not be unit length;
* a bad row raises ``ValueError`` naming the argument and the first bad row;
* large batches are processed in chunks of ``CHUNK`` rays, so temporaries stay small;
* one hit convention (DESIGN.md): ``distance`` is measured along the unit direction,
  ``hit`` only for ``0 <= distance <= max_distance``; a hit at distance 0 (origin inside or
  on a solid) has ``point = origin`` and ``normal = -unit(direction)``.

A shape takes part by providing ``dimension`` and ``_intersect(origins, directions,
max_distance)``, which gets one chunk of C-contiguous float64 rows with unit directions and
returns ``(distance, normal)``: ``np.inf`` where it misses, any normal where it misses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

CHUNK = 65536


@dataclass
class RayHits:
    """Result of :func:`raycast`; arrays of length N (scalars for a single ray)."""

    hit: np.ndarray        # (N,) bool
    distance: np.ndarray   # (N,) float64, inf where no hit
    point: np.ndarray      # (N, D) float64, NaN where no hit
    normal: np.ndarray     # (N, D) float64 unit, NaN where no hit
    cell: Optional[np.ndarray] = None  # (N, 2) int (i, j) for Heightfield hits, -1 where none


@dataclass
class CastHits:
    """Result of :func:`sphere_cast`; arrays of length N (scalars for a single cast)."""

    hit: np.ndarray        # (N,) bool
    distance: np.ndarray   # (N,) centre travel along start -> end, inf where no hit
    center: np.ndarray     # (N, 3) centre of the moving sphere at contact
    point: np.ndarray      # (N, 3) contact point on the target
    normal: np.ndarray     # (N, 3) target normal at the contact


def chunks(n: int, size: int = CHUNK):
    """Slices covering range(n) in steps of ``size``."""
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def _first_bad_row(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


def as_rows(name: str, value, dimension: Optional[int] = None):
    """``value`` as a float64 (N, D) array; returns (array, was_single_row).

    Raises ValueError for wrong shapes, a dimension other than ``dimension``, and NaN/inf
    (naming the first bad row)."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be an array of numbers: {error}") from None
    single = array.ndim == 1
    if single:
        array = array[np.newaxis, :]
    if array.ndim != 2:
        raise ValueError(f"{name} must have shape (N, D) or (D,), got shape {np.shape(value)}")
    if dimension is None and array.shape[1] not in (2, 3):
        raise ValueError(f"{name} must have 2 or 3 columns, got {array.shape[1]}")
    if dimension is not None and array.shape[1] != dimension:
        raise ValueError(
            f"{name} has {array.shape[1]} columns but the shape is {dimension}D")
    for part in chunks(len(array)):
        finite = np.isfinite(array[part]).all(axis=1)
        if not finite.all():
            row = part.start + _first_bad_row(~finite)
            raise ValueError(f"{name} row {row} is not finite: {array[row].tolist()}")
    return array, single


def as_per_row(name: str, value, n: int, allow_inf: bool = False) -> np.ndarray:
    """A scalar or (N,) array of non-negative numbers, broadcast to (N,) float64."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a number or an array of numbers: {error}") from None
    if array.ndim > 1 or (array.ndim == 1 and array.shape[0] != n):
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got shape {array.shape}")
    bad = np.isnan(array) | (array < 0)
    if not allow_inf:
        bad |= np.isinf(array)
    if bad.any():
        if array.ndim == 0:
            raise ValueError(f"{name} must be a non-negative number, got {float(array)}")
        row = _first_bad_row(bad)
        raise ValueError(f"{name} row {row} must be a non-negative number, got {array[row]}")
    return np.broadcast_to(array, (n,))


def check_same_length(first_name, first, second_name, second):
    if len(first) != len(second):
        raise ValueError(
            f"{first_name} has {len(first)} rows but {second_name} has {len(second)}")


def check_nonzero_rows(name: str, array: np.ndarray):
    """Raise ValueError naming the first all-zero row of ``array`` (a direction)."""
    for part in chunks(len(array)):
        zero = ~np.any(array[part] != 0.0, axis=1)
        if zero.any():
            row = part.start + _first_bad_row(zero)
            raise ValueError(f"{name} row {row} has zero length")


def unit_rows(vectors: np.ndarray):
    """Unit vectors and lengths of the rows of ``vectors`` (length 0 rows stay 0).

    Scales by the largest component first, so tiny and huge vectors do not under- or
    overflow when squared."""
    scale = np.abs(vectors).max(axis=1)
    safe = np.where(scale > 0, scale, 1.0)
    scaled = vectors / safe[:, None]
    length = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
    unit = scaled / np.where(length > 0, length, 1.0)[:, None]
    return unit, length * scale


def _squeeze(result, single: bool):
    if not single:
        return result
    fields = {name: (None if value is None else value[0]) for name, value in vars(result).items()}
    return type(result)(**fields)


def raycast(shape, origins, directions, max_distance=np.inf) -> RayHits:
    """Cast rays against ``shape``; see DESIGN.md for the hit convention.

    origins, directions: (N, D) or (D,); directions need not be unit length.
    max_distance: scalar or (N,), measured along the unit direction.
    """
    dimension = shape.dimension
    origins, single = as_rows("origins", origins, dimension)
    directions, single_direction = as_rows("directions", directions, dimension)
    check_same_length("origins", origins, "directions", directions)
    check_nonzero_rows("directions", directions)
    n = len(origins)
    max_distance = as_per_row("max_distance", max_distance, n, allow_inf=True)

    hit = np.zeros(n, dtype=bool)
    distance = np.full(n, np.inf)
    point = np.full((n, dimension), np.nan)
    normal = np.full((n, dimension), np.nan)
    cell = None
    for part in chunks(n):
        origin = np.ascontiguousarray(origins[part])
        unit, _ = unit_rows(directions[part])
        limit = np.ascontiguousarray(max_distance[part])
        found = shape._intersect(origin, unit, limit)
        t, n_local = found[0], found[1]
        if len(found) > 2:
            if cell is None:
                cell = np.full((n, 2), -1, dtype=np.int64)
            cell[part] = found[2]
        ok = (t <= limit) & np.isfinite(t)
        hit[part] = ok
        distance[part] = np.where(ok, t, np.inf)
        t = np.where(ok, t, 0.0)
        inside = ok & (t == 0.0)
        n_local = np.where(inside[:, None], -unit, n_local)
        point[part] = np.where(ok[:, None], origin + t[:, None] * unit, np.nan)
        normal[part] = np.where(ok[:, None], n_local, np.nan)
    if cell is not None:
        cell[~hit] = -1
    return _squeeze(RayHits(hit, distance, point, normal, cell), single and single_direction)


def sphere_cast(shape, starts, ends, radius) -> CastHits:
    """Sweep a sphere of ``radius`` from ``starts`` to ``ends`` against ``shape``.

    starts, ends: (N, D) or (D,); radius: scalar or (N,), >= 0 (0 is a ray clipped to the
    segment). ``distance`` is the centre's travel from the start to the first contact.
    """
    dimension = shape.dimension
    starts, single = as_rows("starts", starts, dimension)
    ends, single_end = as_rows("ends", ends, dimension)
    check_same_length("starts", starts, "ends", ends)
    n = len(starts)
    radius = as_per_row("radius", radius, n)
    cast = getattr(shape, "_sphere_cast", None)
    if cast is None:
        raise ValueError(
            f"sphere_cast supports Sphere targets (optionally Placed); got {type(shape).__name__}")
    cast_check = getattr(shape, "_check_sphere_cast", None)
    if cast_check is not None:
        cast_check()

    result = CastHits(
        hit=np.zeros(n, dtype=bool), distance=np.full(n, np.inf),
        center=np.full((n, dimension), np.nan), point=np.full((n, dimension), np.nan),
        normal=np.full((n, dimension), np.nan))
    for part in chunks(n):
        start = np.ascontiguousarray(starts[part])
        unit, length = unit_rows(ends[part] - start)
        t, center, point, normal = cast(start, unit, length, np.ascontiguousarray(radius[part]))
        ok = (t <= length) & np.isfinite(t)
        result.hit[part] = ok
        result.distance[part] = np.where(ok, t, np.inf)
        result.center[part] = np.where(ok[:, None], center, np.nan)
        result.point[part] = np.where(ok[:, None], point, np.nan)
        result.normal[part] = np.where(ok[:, None], normal, np.nan)
    return _squeeze(result, single and single_end)
