"""The one dispatch layer: raycast, sphere_cast, raycast_all and occluded.

Each query runs the same steps: validate its input (validate.py: (N, D) or (D,) arrays of
finite floats; directions need not be unit length; a bad row raises ValueError naming the
argument and the first bad row), ask backend.py whether the shape's compiled kernel answers
the batch (the latency rule), then run that kernel on the whole batch in one pass or the
numpy reference (reference.py, in chunks), and return the result type (results.py).
raycast_all's kernel lists each ray's records, which the shape computes on its own rays:
queries.py hands it to reference.all_hits, whose chunks of rays the shape answers with it
(Shape.crossings). A
compiled kernel does the finiteness and zero-direction checks itself and counts bad rows;
the numpy validation then names the first. Shapes take part through the protocol in
protocol.py: ``supports`` and ``check`` say what a shape answers, the rest is called.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from . import reference
from .backend import kernel
from .reference import ON_SEGMENT_END, chunks, unit_components
from .results import AllHits, CastHits, RayHits, squeeze
from .validate import as_per_row, as_rows, check_same_length, require_finite

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .protocol import Shape

__all__ = ["ON_SEGMENT_END", "occluded", "raycast", "raycast_all", "sphere_cast"]


def raycast(
    shape: Shape, origins: ArrayLike, directions: ArrayLike, max_distance: ArrayLike = np.inf
) -> RayHits:
    """Cast rays against ``shape``: the hit convention of reference.py.

    origins, directions: (N, D) or (D,); directions need not be unit length.
    max_distance: scalar or (N,), measured along the unit direction.
    """
    dimension = shape.dimension
    raw_origins, raw_directions = origins, directions
    origins, single = as_rows("origins", origins, dimension, check_finite=False)
    directions, single_direction = as_rows("directions", directions, dimension, False)
    check_same_length("origins", origins, "directions", directions)
    n = len(origins)
    max_distance = as_per_row("max_distance", max_distance, n, allow_inf=True)
    compiled = kernel(shape, "raycast", n)
    if compiled is None:  # a compiled kernel checks finiteness itself, in its one pass
        require_finite("origins", origins)
        require_finite("directions", directions)
        return squeeze(
            reference.raycast(shape, origins, directions, max_distance),
            single and single_direction,
        )
    hits = RayHits(
        hit=np.empty(n, dtype=bool),
        distance=np.empty(n),
        point=np.empty((n, 3)),
        normal=np.empty((n, 3)),
    )
    out: tuple[np.ndarray, ...] = (hits.hit, hits.distance, hits.point, hits.normal)
    if shape.kernel_cells:
        hits.cell = np.empty((n, 2), dtype=np.int64)
        out += (hits.cell,)
    bad = compiled(
        shape.kernel_arguments("raycast"),
        shape.kernel_placement(),
        _in_3d(origins),
        _in_3d(directions),
        _per_row_values(max_distance),
        out,
    )
    if bad:
        _raise_first_bad_ray(raw_origins, raw_directions, dimension)
    hits.point, hits.normal = _in_dimension(dimension, hits.point, hits.normal)
    return squeeze(hits, single and single_direction)


def sphere_cast(shape: Shape, starts: ArrayLike, ends: ArrayLike, radius: ArrayLike) -> CastHits:
    """Sweep a sphere of ``radius`` from ``starts`` to ``ends`` against ``shape``.

    starts, ends: (N, D) or (D,); radius: scalar or (N,), >= 0 (0 is a ray clipped to the
    segment). ``distance`` is the centre's travel from the start to the first contact.
    """
    dimension = shape.dimension
    supported = "sphere_cast" in shape.supports
    raw_starts, raw_ends = starts, ends
    starts, single = as_rows("starts", starts, dimension, check_finite=False)
    ends, single_end = as_rows("ends", ends, dimension, check_finite=False)
    check_same_length("starts", starts, "ends", ends)
    n = len(starts)
    if not supported:
        require_finite("starts", starts)
        require_finite("ends", ends)
    radius = as_per_row("radius", radius, n)
    if not supported:
        raise ValueError(
            f"sphere_cast supports Sphere, Cylinder and Heightfield targets (optionally "
            f"Placed); got {type(shape).__name__}"
        )
    shape.check("sphere_cast")
    shape = shape.cast_target()  # a Placed shape: its placement folded in where it can be
    compiled = kernel(shape, "sphere_cast", n)
    if compiled is None:  # a compiled kernel checks finiteness itself
        require_finite("starts", starts)
        require_finite("ends", ends)
        return squeeze(reference.sphere_cast(shape, starts, ends, radius), single and single_end)
    hit, distance = np.empty(n, dtype=bool), np.empty(n)
    center, point, normal = (np.empty((n, 3)) for _ in range(3))
    bad = compiled(
        shape.kernel_arguments("sphere_cast"),
        shape.kernel_placement(),
        _in_3d(starts),
        _in_3d(ends),
        _per_row_values(radius),
        (hit, distance, center, point, normal),
    )
    if bad:
        _raise_first_bad_segment(raw_starts, raw_ends, dimension)
    center, point, normal = _in_dimension(dimension, center, point, normal)
    return squeeze(CastHits(hit, distance, center, point, normal), single and single_end)


def occluded(shape: Shape, starts: ArrayLike, ends: ArrayLike) -> np.ndarray:
    """(N,) bool: True where ``shape`` meets the segment from ``starts`` to ``ends``
    before its end (a bool for a single segment).

    starts, ends: (N, D) or (D,). A point within ``1e-9`` of the segment's length of a
    surface, at either end, is not hidden by that surface (a target lying on a terrain is
    visible); a start inside a solid is occluded; a touch blocks (reference.py).
    """
    dimension = shape.dimension
    raw_starts, raw_ends = starts, ends
    starts, single = as_rows("starts", starts, dimension, check_finite=False)
    ends, single_end = as_rows("ends", ends, dimension, check_finite=False)
    check_same_length("starts", starts, "ends", ends)
    n = len(starts)
    compiled = kernel(shape, "occluded", n)
    if compiled is None:  # a compiled kernel checks finiteness itself
        require_finite("starts", starts)
        require_finite("ends", ends)
        blocked = reference.occluded(shape, starts, ends)
    else:
        blocked = np.empty(n, dtype=bool)
        bad = compiled(
            shape.kernel_arguments("occluded"),
            shape.kernel_placement(),
            _in_3d(starts),
            _in_3d(ends),
            np.array([ON_SEGMENT_END]),  # (1,) float64, as a scalar max_distance
            (blocked,),
        )
        if bad:
            _raise_first_bad_segment(raw_starts, raw_ends, dimension)
    return blocked[0] if single and single_end else blocked


def raycast_all(
    shape: Shape, origins: ArrayLike, directions: ArrayLike, max_distance: ArrayLike = np.inf
) -> AllHits:
    """Every crossing of each ray with ``shape`` within [0, max_distance] (reference.py).

    origins, directions: (N, D) or (D,) (one ray: ``ray`` is all 0); max_distance: scalar
    or (N,). Returns :class:`AllHits` sorted by (ray, distance).
    """
    if "raycast_all" not in shape.supports:
        raise ValueError(f"raycast_all does not support {type(shape).__name__}")
    shape.check("raycast_all")
    dimension = shape.dimension
    origins, _ = as_rows("origins", origins, dimension)
    directions, _ = as_rows("directions", directions, dimension)
    check_same_length("origins", origins, "directions", directions)
    n = len(origins)
    max_distance = as_per_row("max_distance", max_distance, n, allow_inf=True)
    # The shape's records: its compiled kernel (called by the shape on its own rays) or
    # its numpy reference; merged and sorted in numpy either way.
    records = kernel(shape, "raycast_all", n)
    hits = reference.all_hits(shape, origins, directions, max_distance, records)
    if shape.first_record_from_raycast:
        first = raycast(shape, origins, directions, max_distance)
        hits = reference.first_from_raycast(hits, first)
    return hits


def _kernel_array(array: np.ndarray) -> np.ndarray:
    """``array`` as the kernels take every array of rays or values: float64, C-contiguous
    and writable (copied only when it is not). numba compiles a kernel once per argument
    types, and a read-only or strided array is a type of its own (backend.py)."""
    with warnings.catch_warnings():
        # numpy 1.26 warns when the flag of a np.broadcast_arrays result is read (that
        # array will become read-only); reading it changes nothing, so no warning for that.
        warnings.simplefilter("ignore", FutureWarning)
        writeable = array.flags.writeable
    if array.flags.c_contiguous and writeable and array.dtype == np.float64:
        return array
    return np.array(array, dtype=np.float64, order="C")


def _in_3d(rows: np.ndarray) -> np.ndarray:
    """(N, 3) rows for the kernels, which work in 3D: 2D rows get z = 0."""
    if rows.shape[1] == 3:
        return _kernel_array(rows)
    padded = np.zeros((len(rows), 3))
    padded[:, :2] = rows
    return padded


def _in_dimension(dimension: int, *arrays):
    """The kernels' (N, 3) results cut back to (N, dimension)."""
    if dimension == 3:
        return arrays
    return tuple(np.ascontiguousarray(array[:, :dimension]) for array in arrays)


def _per_row_values(values: np.ndarray) -> np.ndarray:
    """A broadcast scalar as one value, per-row values as they are: kernels read either."""
    if values.ndim == 1 and len(values) and values.strides[0] == 0:
        return np.array(values[:1])
    return _kernel_array(values)


def _raise_first_bad_ray(origins, directions, dimension):
    """A kernel counted rows with NaN/inf or a zero direction: name the first as the numpy
    path does."""
    as_rows("origins", origins, dimension)
    directions, _ = as_rows("directions", directions, dimension)
    for part in chunks(len(directions)):
        with np.errstate(invalid="ignore", divide="ignore"):
            _, zero_row = unit_components(list(directions[part].T))
        if zero_row is not None:
            raise ValueError(f"directions row {part.start + zero_row} has zero length")
    raise RuntimeError("a compiled kernel reported a bad ray that the validation accepts")


def _raise_first_bad_segment(starts, ends, dimension):
    """A kernel counted segments with NaN/inf: name the first as the numpy path does."""
    as_rows("starts", starts, dimension)
    as_rows("ends", ends, dimension)
    raise RuntimeError("a compiled kernel reported a bad segment that the validation accepts")
