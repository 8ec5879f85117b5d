"""Ray batches: validation, unit directions, result types and chunked evaluation.

Every query in ``core`` goes through this module, so the rules live in one place:

* inputs are (N, D) or (D,) arrays of finite floats; directions need not be unit length;
* a bad row raises ``ValueError`` naming the argument and the first bad row;
* large batches are processed in chunks of ``CHUNK`` rays, so temporaries stay small;
* one hit convention (DESIGN.md): ``distance`` is measured along the unit direction,
  ``hit`` only for ``0 <= distance <= max_distance``; a hit at distance 0 (origin inside or
  on a solid) has ``point = origin`` and ``normal = -unit(direction)``. A shape whose
  ``solid`` attribute is False is a surface: a hit at 0 keeps the normal the shape gives
  (facing the ray).

A shape takes part by providing ``dimension`` and one of two kernels, each called with one
chunk of rays with unit directions and returning ``(distance, normal[, cell])``, distance
``np.inf`` or NaN where it misses (any normal there):

* ``_intersect(origins, directions, max_distance)``: C-contiguous float64 (n, D) rows;
  normal (n, D); optional cell (n, 2) int.
* ``_intersect_components(origin, direction, max_distance)``: lists of D contiguous 1D
  arrays (see vectors.py, several times faster for the analytic shapes); normal a list.

On the numba backend (core/backend.py) a shape with ``kernel_module`` is answered by its
compiled kernel instead, on the whole batch in one pass (no chunks), which also does the
finiteness and zero-direction checks; the numpy validation then names the first bad row.

A shape that supports sphere casts provides ``_sphere_cast_components(start, direction,
radius, length)`` (components, direction unit or zero for a zero-length cast, radius and
segment length per row), returning ``(distance, point, normal)``: the centre's travel to
the first contact (inf or NaN where none; a contact beyond ``length`` may be reported or
not, the driver gates it), the contact point on the shape and the shape's normal there.
A Placed shape casts against ``_sphere_cast_target()`` (its placement folded into the
shape where it can be).

"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from .backend import kernel
from .vectors import at_most, components, dot, to_rows

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .cylinder import Cylinder
    from .heightfield import Heightfield
    from .placed import Placed
    from .sphere import Sphere

    # What raycast, sphere_cast and Placed accept (sphere_cast: not a BILINEAR or MARCH
    # terrain, nor a non-uniformly scaled Placed that does not fold).
    Shape: TypeAlias = Sphere | Cylinder | Heightfield | Placed

# Rays per chunk: temporaries of 256 KB, a few of which fit the 1 MB L2 cache, while the
# ~1 us fixed cost of each numpy call is spread over many rays. Measured on 100k and 1M rays
# (with the allocator warm-up below): 8-12 % faster than 8192 for spheres and cylinders.
CHUNK = 32768

# glibc hands blocks over 128 KB back to the system (and faults them in again on the next
# use) until the first such block is freed; then it raises that threshold to the freed
# block's size (and the heap's trim threshold to twice that). Trigger it once with a 24 MB
# block so the chunk temporaries and the output arrays of repeated calls are reused:
# measured 1.3x faster on 100k rays (8 MB was enough there), 2x on 100k sphere casts against
# a cylinder (whose ~20 MB of temporaries and outputs were trimmed and faulted in again on
# every call with 8 MB). No effect elsewhere.
np.empty(3 << 20)


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


def chunks(n: int, size: int | None = None):
    """Slices covering range(n) in steps of ``size`` (default ``CHUNK``)."""
    size = size or CHUNK
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def _first_bad_row(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


def as_rows(
    name: str, value, dimension: int | None = None, check_finite: bool = True
) -> tuple[np.ndarray, bool]:
    """``value`` as a float64 (N, D) array; returns (array, was_single_row).

    Raises ValueError for wrong shapes, a dimension other than ``dimension``, and NaN/inf
    (naming the first bad row; a compiled kernel checks that itself: ``check_finite``)."""
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
        raise ValueError(f"{name} has {array.shape[1]} columns but the shape is {dimension}D")
    if check_finite:
        require_finite(name, array)
    return np.ascontiguousarray(array), single


def require_finite(name: str, array: np.ndarray) -> None:
    """ValueError naming the first row of ``array`` (N, D) holding NaN or inf."""
    # A sum is finite when every term is (one fast pass); only a non-finite sum (NaN/inf,
    # or a finite overflow) pays for the row-wise search.
    if not np.isfinite(np.add.reduce(array, axis=None)):
        for part in chunks(len(array), 1 << 20):
            finite = np.isfinite(array[part]).all(axis=1)
            if not finite.all():
                row = part.start + _first_bad_row(~finite)
                raise ValueError(f"{name} row {row} is not finite: {array[row].tolist()}")


def as_per_row(name: str, value, n: int, allow_inf: bool = False) -> np.ndarray:
    """A scalar or (N,) array of non-negative numbers, broadcast to (N,) float64 (an (N,)
    array is returned as it is: the queries only read it)."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a number or an array of numbers: {error}") from None
    if array.ndim == 0:  # one value for all rows: checked as a float (numpy's ufuncs on a
        # 0-d array cost microseconds, which count on the compiled backend's small batches)
        number = float(array)
        if not (number >= 0.0 and (allow_inf or number < np.inf)):
            raise ValueError(f"{name} must be a non-negative number, got {number}")
        row = np.full(1, number)
        row.flags.writeable = False
        return np.ndarray((n,), np.float64, row, 0, (0,))  # broadcast_to, 1 us cheaper
    if array.ndim > 1 or array.shape[0] != n:
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got shape {array.shape}")
    bad = np.isnan(array) | (array < 0)
    if not allow_inf:
        bad |= np.isinf(array)
    if bad.any():
        first = _first_bad_row(bad)
        raise ValueError(f"{name} row {first} must be a non-negative number, got {array[first]}")
    return array if array.ndim == 1 else np.broadcast_to(array, (n,))


def check_same_length(first_name, first, second_name, second):
    if len(first) != len(second):
        raise ValueError(f"{first_name} has {len(first)} rows but {second_name} has {len(second)}")


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
    Branch-free, because masked assignment costs ~4 ns per element here."""
    gate = at_most(hit * np.inf, 1.0)
    return gate, distance * gate


def component_kernel(shape):
    """The shape's kernel in component form (adapting a row-form ``_intersect``)."""
    kernel = getattr(shape, "_intersect_components", None)
    if kernel is not None:
        return kernel

    def from_rows(origin, direction, max_distance):
        found = shape._intersect(
            np.stack(origin, axis=1), np.stack(direction, axis=1), max_distance
        )
        return (found[0], components(found[1])) + tuple(found[2:])

    return from_rows


def _placement(shape):
    """The kernels' view of the shape's placement (identity unless it is a Placed)."""
    from .kernels.rays import placement

    get = getattr(shape, "_kernel_placement", None)
    return placement() if get is None else get()


def _kernel_array(array: np.ndarray) -> np.ndarray:
    """``array`` as the kernels take every array of rays or values: float64, C-contiguous
    and writable (copied only when it is not). numba compiles a kernel once per argument
    types, and a read-only or strided array is a type of its own (core/backend.py)."""
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


def _squeeze(result, single: bool):
    if not single:
        return result
    fields = {name: (None if value is None else value[0]) for name, value in vars(result).items()}
    return type(result)(**fields)


def raycast(
    shape: Shape, origins: ArrayLike, directions: ArrayLike, max_distance: ArrayLike = np.inf
) -> RayHits:
    """Cast rays against ``shape``; see DESIGN.md for the hit convention.

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
    else:
        hits = RayHits(
            hit=np.empty(n, dtype=bool),
            distance=np.empty(n),
            point=np.empty((n, 3)),
            normal=np.empty((n, 3)),
        )
        out: tuple[np.ndarray, ...] = (hits.hit, hits.distance, hits.point, hits.normal)
        if getattr(shape, "kernel_cells", False):
            hits.cell = np.empty((n, 2), dtype=np.int64)
            out += (hits.cell,)
        bad = compiled(
            shape._kernel_arguments(),
            _placement(shape),
            _in_3d(origins),
            _in_3d(directions),
            _per_row_values(max_distance),
            out,
        )
        if bad:
            _raise_first_bad_ray(raw_origins, raw_directions, dimension)
        hits.point, hits.normal = _in_dimension(dimension, hits.point, hits.normal)
        return _squeeze(hits, single and single_direction)
    kernel_numpy = component_kernel(shape)
    # A surface (open tube, Heightfield(solid=False)) has no inside: a hit at distance 0 is
    # the surface at the origin and keeps the surface's normal (facing the ray).
    solid = getattr(shape, "solid", True)

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
        found = kernel_numpy(origin, unit, limit)
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
        for part in chunks(n, getattr(shape, "chunk_size", CHUNK)):
            work(part)
    if cells:
        hits.cell = np.full((n, 2), -1, dtype=np.int64)
        for part, cell in cells:
            hits.cell[part] = cell
        hits.cell[~hits.hit] = -1
    return _squeeze(hits, single and single_direction)


def sphere_cast(shape: Shape, starts: ArrayLike, ends: ArrayLike, radius: ArrayLike) -> CastHits:
    """Sweep a sphere of ``radius`` from ``starts`` to ``ends`` against ``shape``.

    starts, ends: (N, D) or (D,); radius: scalar or (N,), >= 0 (0 is a ray clipped to the
    segment). ``distance`` is the centre's travel from the start to the first contact.
    """
    dimension = shape.dimension
    cast = getattr(shape, "_sphere_cast_components", None)
    raw_starts, raw_ends = starts, ends
    starts, single = as_rows("starts", starts, dimension, check_finite=False)
    ends, single_end = as_rows("ends", ends, dimension, check_finite=False)
    check_same_length("starts", starts, "ends", ends)
    n = len(starts)
    if cast is None:
        require_finite("starts", starts)
        require_finite("ends", ends)
    radius = as_per_row("radius", radius, n)
    if cast is None:
        raise ValueError(
            f"sphere_cast supports Sphere, Cylinder and Heightfield targets (optionally "
            f"Placed); got {type(shape).__name__}"
        )
    cast_check = getattr(shape, "_check_sphere_cast", None)
    if cast_check is not None:
        cast_check()
    target = getattr(shape, "_sphere_cast_target", None)
    if target is not None:  # a Placed shape: its placement folded into it where it can be
        shape = target()
        cast = shape._sphere_cast_components
    compiled = kernel(shape, "sphere_cast", n)
    if compiled is None:  # a compiled kernel checks finiteness itself
        require_finite("starts", starts)
        require_finite("ends", ends)
    else:
        hit, distance = np.empty(n, dtype=bool), np.empty(n)
        center, point, normal = (np.empty((n, 3)) for _ in range(3))
        # (A shape may give its cast kernel more than its ray kernel's arguments.)
        arguments = getattr(shape, "_kernel_cast_arguments", shape._kernel_arguments)
        bad = compiled(
            arguments(),
            _placement(shape),
            _in_3d(starts),
            _in_3d(ends),
            _per_row_values(radius),
            (hit, distance, center, point, normal),
        )
        if bad:
            _raise_first_bad_segment(raw_starts, raw_ends, dimension)
        center, point, normal = _in_dimension(dimension, center, point, normal)
        return _squeeze(CastHits(hit, distance, center, point, normal), single and single_end)

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
        distance, point, normal = cast(start, unit, radius[part], length)
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
    return _squeeze(result, single and single_end)
