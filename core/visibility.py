"""Which vertices of a terrain can be seen from observers: a viewshed, and how many of
several observers see each vertex (a cumulative viewshed), with the options a GIS offers.

Definition. The eye is ``observer + observer_height * Z``; a vertex's target is the vertex
raised by ``target_height``. The vertex is visible when ``not occluded(terrain, eye,
target)`` (core.occluded: a point within 1e-9 of the segment's length of the surface is not
hidden by it, a touch blocks) and its horizontal (XY) distance from the observer is at most
``max_distance``. With ``earth_curvature`` every vertex height, the terrain's and so the
target's, is lowered by ``(1 - refraction) d^2 / (2 earth_radius)``, ``d`` the vertex's
horizontal distance from the observer, and the surface tested is the one through the
lowered vertices (the observer's own point has ``d = 0``: the eye is not lowered).

The reach window. A vertex within ``max_distance`` lies in the box ``observer +-
max_distance``, and so does the XY projection of its line of sight (a segment between two
points of the disc stays in the disc), so only the cells of that box matter. Every query
runs on the terrain cut to that box (one cell of margin against rounding, clipped to the
grid; the whole grid when ``max_distance`` is infinite): ``reach_window`` says which, and
``window_terrain`` builds it, its origin ``origin + i0 * spacing`` and its targets
``origin + i * spacing`` in the whole grid's indices. geometry_queries.dask cuts the same
windows out of its chunks, so its counts equal these bit for bit.
"""

from __future__ import annotations

import contextlib
import math
import threading
from typing import TYPE_CHECKING

import numpy as np

from .backend import compile_freely, compiled, first_run, kernels, run_split, threads
from .heightfield import Heightfield
from .heightfield.grid import TOUCH
from .reference import ON_SEGMENT_END

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

EARTH_RADIUS = 6_371_000.0
REFRACTION = 1.0 / 7.0


class Options:
    """The checked options shared by viewshed and cumulative_viewshed."""

    def __init__(
        self,
        observer_height=0.0,
        target_height=0.0,
        max_distance=np.inf,
        earth_curvature=False,
        refraction=REFRACTION,
        earth_radius=EARTH_RADIUS,
    ):
        self.observer_height = _number("observer_height", observer_height, minimum=0.0)
        self.target_height = _number("target_height", target_height, minimum=0.0)
        self.max_distance = _number("max_distance", max_distance, minimum=0.0, infinite=True)
        if not isinstance(earth_curvature, (bool, np.bool_)):
            raise ValueError(f"earth_curvature must be True or False, got {earth_curvature!r}")
        self.earth_curvature = bool(earth_curvature)
        self.refraction = _number("refraction", refraction, minimum=0.0)
        if self.refraction > 1.0:
            raise ValueError(
                f"refraction must be between 0 and 1 (the refraction coefficient; 1/7 is "
                f"usual), got {refraction!r}"
            )
        self.earth_radius = _number("earth_radius", earth_radius, minimum=0.0)
        if self.earth_radius == 0.0:
            raise ValueError("earth_radius must be positive, got 0")

    @property
    def curvature(self) -> float:
        """The factor c of the drop c d^2 (0 without curvature)."""
        if not self.earth_curvature:
            return 0.0
        return (1.0 - self.refraction) / (2.0 * self.earth_radius)


def _number(name, value, *, minimum, infinite=False):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(number) or (math.isinf(number) and not (infinite and number > 0)):
        allowed = " (or +inf)" if infinite else ""
        raise ValueError(f"{name} must be finite{allowed}, got {value!r}")
    if number < minimum:
        raise ValueError(f"{name} must be >= {minimum:g}, got {value!r}")
    return number


def as_terrain(terrain) -> Heightfield:
    if not isinstance(terrain, Heightfield):
        raise ValueError(f"terrain must be a Heightfield, got {type(terrain).__name__}")
    return terrain


def as_observers(observers: ArrayLike) -> np.ndarray:
    """(M, 3) float64 observers; ValueError naming the first non-finite row."""
    array = np.asarray(observers, dtype=np.float64)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"observers must have shape (M, 3) or (3,), got {np.shape(observers)}")
    bad = np.flatnonzero(~np.isfinite(array).all(axis=1))
    if bad.size:
        raise ValueError(f"observers must be finite: row {bad[0]} is {array[bad[0]].tolist()}")
    return array


def reach_window(observer, max_distance, origin, spacing, shape):
    """(j0, j1, i0, i1): the vertex index ranges (half open) of the grid that the lines of
    sight from ``observer`` to the vertices within ``max_distance`` may cross, or None when
    no vertex is within reach. The whole grid for an infinite ``max_distance``."""
    ny, nx = shape
    if not math.isfinite(max_distance):
        return 0, ny, 0, nx
    ranges = []
    for axis, n in ((1, ny), (0, nx)):
        low = (observer[axis] - max_distance - origin[axis]) / spacing[axis]
        high = (observer[axis] + max_distance - origin[axis]) / spacing[axis]
        # One index of margin each side: the division rounds.
        first = max(math.floor(low) - 1, 0)
        last = min(math.ceil(high) + 1, n - 1)
        if first > last:
            return None
        ranges += [first, last + 1]
    j0, j1, i0, i1 = ranges
    if j1 - j0 < 2 or i1 - i0 < 2:  # a Heightfield needs 2x2: grow back inside the grid
        j0, j1 = _at_least_two(j0, j1, ny)
        i0, i1 = _at_least_two(i0, i1, nx)
    return j0, j1, i0, i1


def _at_least_two(first, end, n):
    if end - first >= 2:
        return first, end
    return (first, first + 2) if first + 2 <= n else (n - 2, n)


def vertex_coordinates(origin, spacing, window):
    """World x (columns) and y (rows) of the window's vertices, from the whole grid's
    indices: ``origin + i * spacing``, the same floats whatever window holds them."""
    j0, j1, i0, i1 = window
    x = origin[0] + np.arange(i0, i1, dtype=np.float64) * spacing[0]
    y = origin[1] + np.arange(j0, j1, dtype=np.float64) * spacing[1]
    return x, y


def window_terrain(heights, origin, spacing, window, like) -> Heightfield:
    """The window's Heightfield: ``heights`` (its vertices' heights), origin ``origin + (i0,
    j0) * spacing``, the model and diagonals of ``like``."""
    j0, j1, i0, i1 = window
    diagonals = like.diagonals
    if diagonals is not None:
        diagonals = diagonals[j0 : j1 - 1, i0 : i1 - 1]
    return Heightfield(
        heights,
        spacing=spacing,
        origin=(origin[0] + i0 * spacing[0], origin[1] + j0 * spacing[1]),
        surface=like.surface,
        diagonals=diagonals,
        solid=like.solid,
    )


def window_visibility(heights, origin, spacing, window, observer, options, like, terrains=None):
    """(j1 - j0, i1 - i0) bool: the viewshed of ``observer`` on the window's vertices.

    heights: the window's heights (the whole grid's [j0:j1, i0:i1]); ``like``: the
    Heightfield whose model (surface, solid, diagonals) the window takes; ``terrains``: a
    dict from windows to their Heightfields (without curvature the same for every observer
    of a window, their kernel data kept between observers), filled when a line of sight
    first needs one (the whole grid's is ``like`` itself: the same floats as a window built
    anew)."""
    from .queries import occluded

    j0, j1, i0, i1 = window
    x, y = vertex_coordinates(origin, spacing, window)
    heights = np.asarray(heights, dtype=np.float64)
    curvature = options.curvature
    if curvature:
        heights = heights - curvature * _squared_distances(x, y, observer)
    eye = np.array(
        [observer[0], observer[1], observer[2] + options.observer_height], dtype=np.float64
    )
    state = sweep_states(heights, x, y, eye, options, like, window)
    if state is not None:  # the sweep decided most; the exact line of sight judges the rest
        visible = state == VISIBLE
        rows, columns = np.nonzero(state == UNDECIDED)
    else:
        reach = options.max_distance
        if math.isfinite(reach):
            inside = _squared_distances(x, y, observer) <= reach * reach
        else:
            inside = np.ones(heights.shape, bool)
        visible = np.zeros(heights.shape, dtype=bool)
        rows, columns = np.nonzero(inside)
    if rows.size == 0:
        return visible
    terrain = None if curvature or terrains is None else terrains.get(window)
    if terrain is None:
        terrain = window_terrain(heights, origin, spacing, window, like)
        if not curvature and terrains is not None:
            terrains[window] = terrain
    targets = np.empty((rows.size, 3))
    targets[:, 0] = x[columns]
    targets[:, 1] = y[rows]
    targets[:, 2] = heights[rows, columns] + options.target_height
    starts = np.broadcast_to(eye, targets.shape)
    # After a compiled sweep, its judge runs compiled too: prepared (loaded) in a session,
    # and else one compile instead of numpy's per-call cost for every observer.
    with compile_freely() if state is not None else contextlib.nullcontext():
        visible[rows, columns] = ~occluded(terrain, starts, targets)
    return visible


def _squared_distances(x, y, observer):
    """(ny, nx) squared horizontal distances of the vertices from the observer."""
    dx2 = (x - observer[0]) ** 2
    dy2 = (y - observer[1]) ** 2
    return dy2[:, None] + dx2[None, :]


# The sweep's kernel kind (backend.py): one kernel for every TRIANGLES terrain.
SWEEP_KIND = ("heightfield", "viewshed", "TRIANGLES", False)
SWEEP_MAX_LOG = 10  # at most 1024 sectors per ring
SWEEP_LONGEST = 48  # rings measured exactly next to a target; beyond, occluded judges
VISIBLE, UNDECIDED = 1, 2  # heightfield/viewshed_kernel.py's states
_buffers = threading.local()  # per thread: the sweep's sector tables, kept between observers


def sweep_states(heights, x, y, eye, options, like, window):
    """(ny, nx) int8 states of heightfield/viewshed_kernel.py (VISIBLE, UNDECIDED, else
    hidden) for the window's ``heights`` with vertex coordinates ``x``, ``y``, the model of
    the Heightfield ``like``; None where the sweep does not apply (bilinear patches, an eye
    off the window's footprint) or the latency rule keeps to the exact line of sight alone."""
    if like.surface != "TRIANGLES":
        return None
    if not (x[0] <= eye[0] <= x[-1] and y[0] <= eye[1] <= y[-1]):
        return None
    if not compiled(SWEEP_KIND, lambda: like.numpy_seconds("occluded", heights.size)):
        return None
    sweep = kernels("heightfield.viewshed_kernel")
    heights = np.ascontiguousarray(heights).view()
    heights.flags.writeable = False  # one compiled type, whatever the heights came as
    dx, dy = like.spacing
    width = min(dx, dy)
    far = max(math.hypot(x[k] - eye[0], y[m] - eye[1]) for k in (0, -1) for m in (0, -1))
    if math.isfinite(options.max_distance):
        far = min(far, options.max_distance)
    logs, offsets = sweep.ring_layout(int(far / width) + 2, SWEEP_MAX_LOG)
    # Parts (threads) a power of two, at most a ring's fewest sectors: bound's turns.
    parts = min(1 << (threads().bit_length() - 1), 1 << sweep.MIN_SECTOR_LOG)
    tops, bottoms = _tables(parts, int(offsets[-1]))
    has_anti = like.diagonals is not None and bool(like.diagonals.any())
    anti = np.zeros(1)
    if has_anti:
        j0, j1, i0, i1 = window
        anti = like.diagonals[j0 : j1 - 1, i0 : i1 - 1].ravel().astype(np.float64)
    # The largest cell tolerance (grid.tolerances: TOUCH of a cell's largest |height| or
    # the spacing); max |h| as max(max h, -min h): no grid-sized temporary per observer.
    tol = TOUCH * max(float(heights.max()), -float(heights.min()), dx, dy)
    grid_eye = np.array(
        [(eye[0] - x[0]) / dx, (eye[1] - y[0]) / dy, eye[2], eye[0], eye[1]], dtype=np.float64
    )
    ground = sweep.ground_height(heights, has_anti, anti, grid_eye)
    blocks_below = like.solid or eye[2] - ground > 4.0 * tol
    reach = options.max_distance
    state = np.empty(heights.shape, dtype=np.int8)

    def run():
        marking = (heights, x, y, eye[0], eye[1], reach, width, logs, offsets, tops, bottoms)
        run_split(sweep.mark, marking, parts, parts)
        run_split(sweep.bound, (eye[2], width, logs, offsets, tops, bottoms), parts, parts)
        nearby = nearby_height(heights, x, y, eye, width)
        arguments = (
            heights,
            anti,
            has_anti,
            x,
            y,
            grid_eye,
            nearby,
            options.target_height,
            reach * reach,
            width,
            tol,
            ON_SEGMENT_END,
            blocks_below,
            SWEEP_LONGEST,
            logs,
            offsets,
            tops[0],
            bottoms[0],
            state,
        )
        return run_split(sweep.decide, arguments, len(y), parts)

    first_run(SWEEP_KIND, run)
    return state


def nearby_height(heights, x, y, eye, width):
    """The highest corner of the cells within ``width`` of the eye (XY)."""
    i0 = max(int(np.searchsorted(x, eye[0] - width, side="right")) - 1, 0)
    i1 = min(int(np.searchsorted(x, eye[0] + width, side="left")) + 1, len(x))
    j0 = max(int(np.searchsorted(y, eye[1] - width, side="right")) - 1, 0)
    j1 = min(int(np.searchsorted(y, eye[1] + width, side="left")) + 1, len(y))
    return float(heights[j0:j1, i0:i1].max())


def _tables(parts, size):
    """Two C-contiguous (parts, size) float32 tables, this thread's own, reused while large
    enough."""
    tables = getattr(_buffers, "tables", None)
    if tables is None or len(tables[0]) < parts * size:
        tables = (np.empty(parts * size, np.float32), np.empty(parts * size, np.float32))
        _buffers.tables = tables
    return tuple(table[: parts * size].reshape(parts, size) for table in tables)


def viewshed(
    terrain: Heightfield,
    observer: ArrayLike,
    *,
    observer_height: float = 0.0,
    target_height: float = 0.0,
    max_distance: float = np.inf,
    earth_curvature: bool = False,
    refraction: float = REFRACTION,
    earth_radius: float = EARTH_RADIUS,
) -> np.ndarray:
    """(ny, nx) bool: True where the terrain's vertex (raised by ``target_height``) can be
    seen from ``observer`` (3,) raised by ``observer_height`` (module docstring)."""
    terrain = as_terrain(terrain)
    options = Options(
        observer_height, target_height, max_distance, earth_curvature, refraction, earth_radius
    )
    point = np.asarray(observer, dtype=np.float64)
    if point.shape != (3,):
        raise ValueError(f"observer must be a point (3,), got shape {point.shape}")
    point = as_observers(point)[0]
    return _viewshed(terrain, point, options)


def _viewshed(terrain, observer, options):
    ny, nx = terrain.heights.shape
    visible = np.zeros(terrain.heights.shape, dtype=bool)
    window = reach_window(
        observer, options.max_distance, terrain.origin, terrain.spacing, terrain.heights.shape
    )
    if window is not None:
        j0, j1, i0, i1 = window
        visible[j0:j1, i0:i1] = window_visibility(
            terrain.heights[j0:j1, i0:i1],
            terrain.origin,
            terrain.spacing,
            window,
            observer,
            options,
            terrain,
            terrains={(0, ny, 0, nx): terrain},
        )
    return visible


def cumulative_viewshed(
    terrain: Heightfield,
    observers: ArrayLike,
    *,
    observer_height: float = 0.0,
    target_height: float = 0.0,
    max_distance: float = np.inf,
    earth_curvature: bool = False,
    refraction: float = REFRACTION,
    earth_radius: float = EARTH_RADIUS,
) -> np.ndarray:
    """(ny, nx) int32: how many of ``observers`` (M, 3) see each vertex (viewshed's
    options, the same for every observer)."""
    terrain = as_terrain(terrain)
    options = Options(
        observer_height, target_height, max_distance, earth_curvature, refraction, earth_radius
    )
    points = as_observers(observers)
    counts = np.zeros(terrain.heights.shape, dtype=np.int32)
    for observer in points:
        counts += _viewshed(terrain, observer, options)
    return counts


def _grid_axis(da, dim):
    """(first coordinate, spacing, descending) of a regular 1D coordinate."""
    if dim not in da.coords or da.coords[dim].ndim != 1:
        raise ValueError(f"the DataArray needs a 1D coordinate {dim!r} along its dimension")
    values = np.asarray(da.coords[dim].values, dtype=np.float64)
    if len(values) < 2 or not np.isfinite(values).all():
        raise ValueError(f"coordinate {dim!r} needs at least 2 finite values")
    steps = np.diff(values)
    step = (values[-1] - values[0]) / (len(values) - 1)
    if step == 0 or not np.allclose(steps, step, rtol=1e-6, atol=0.0):
        raise ValueError(f"coordinate {dim!r} is not evenly spaced")
    descending = step < 0
    return (values[-1] if descending else values[0]), abs(step), descending


def terrain_from_xarray(da, **kwargs) -> Heightfield:
    """A Heightfield from a 2D xarray DataArray with 1D coordinates along its dimensions
    (y first, x second, e.g. a DEM read by rioxarray): spacing and origin from the
    coordinates, rows or columns flipped where a coordinate descends (north-up rasters).
    ``kwargs`` go to Heightfield (surface, solid, ...)."""
    if getattr(da, "ndim", None) != 2:
        raise ValueError(f"a terrain needs a 2D DataArray (y, x), got dims {da.dims}")
    ydim, xdim = da.dims
    x0, dx, x_descends = _grid_axis(da, xdim)
    y0, dy, y_descends = _grid_axis(da, ydim)
    heights = np.asarray(da.values, dtype=np.float64)
    if y_descends:
        heights = heights[::-1]
    if x_descends:
        heights = heights[:, ::-1]
    return Heightfield(np.ascontiguousarray(heights), spacing=(dx, dy), origin=(x0, y0), **kwargs)


def from_xarray(cls, da, **kwargs):
    """Heightfield.from_xarray(da, **kwargs): see terrain_from_xarray."""
    return terrain_from_xarray(da, **kwargs)


def as_dataarray(result, da, name=None):
    """``result`` (ny, nx), on the grid of terrain_from_xarray(da), as a DataArray on
    ``da``'s coordinates (flipped back where they descend)."""
    values = np.asarray(result)
    ydim, xdim = da.dims
    if values.shape != da.shape:
        raise ValueError(f"result has shape {values.shape}, the DataArray {da.shape}")
    if _grid_axis(da, ydim)[2]:
        values = values[::-1]
    if _grid_axis(da, xdim)[2]:
        values = values[:, ::-1]
    return da.copy(data=values).rename(name)
