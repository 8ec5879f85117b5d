"""The dask graph behind geometry_queries.dask.cumulative_viewshed (see that module)."""

from __future__ import annotations

import contextlib
import itertools
import threading

import numpy as np

from .core import Heightfield
from .core.backend import backend
from .core.visibility import (
    EARTH_RADIUS,
    REFRACTION,
    Options,
    as_observers,
    reach_window,
    window_terrain,
    window_visibility,
)

INSTALL_HINT = "geometry_queries.dask needs dask: pip install geometry_queries[dask]"

# Observers share a task only while their union window holds at most this many vertices: a
# task holds its part's heights (float64) and counts, and one window's terrain at a time, so
# wide windows (a max_distance of thousands of cells) get a task each.
GROUP_VERTICES = 1 << 22
# The last ALONE_AT_END * observers_per_task observers (in the groups' order, which dask's
# ordering mostly keeps) count one per task: the tasks handed out last are short, so workers
# run out of work about one observer apart, not a whole group apart.
ALONE_AT_END = 2


def _dask_array():
    try:
        import dask.array as da
    except ImportError as error:
        raise ImportError(f"{INSTALL_HINT} ({error})") from error
    return da


def cumulative_viewshed(
    heights,
    observers,
    *,
    spacing=None,
    origin=None,
    observer_height: float = 0.0,
    target_height: float = 0.0,
    max_distance: float = np.inf,
    earth_curvature: bool = False,
    refraction: float = REFRACTION,
    earth_radius: float = EARTH_RADIUS,
    surface: str = "TRIANGLES",
    solid: bool = True,
    observers_per_task: int = 4,
    split_every: int = 4,
    threads_per_task: int | None = None,
):
    """Lazy (ny, nx) int32 dask array, chunked like ``heights``: how many of ``observers``
    (M, 3) see each vertex, equal to core.cumulative_viewshed on
    ``Heightfield(heights, spacing, origin, surface=surface, solid=solid)``.

    heights: a 2D dask array (or numpy array), or an xarray DataArray backed by one: then
    spacing and origin may come from its coordinates (as Heightfield.from_xarray reads
    them) and the answer is a DataArray on the same coordinates.
    observers_per_task: observers counted by one task; split_every: parts summed by one
    task of the reduction; threads_per_task: the compiled kernels' threads in a task
    (default: 1 inside a dask worker thread, where each of the worker's threads runs a
    task of its own, e.g. a single-threaded worker gives a task 1; all cores otherwise).
    """
    da = _dask_array()
    if _is_dataarray(heights):
        return _on_dataarray(heights, observers, spacing, origin, locals())
    if spacing is None or origin is None:
        raise ValueError("spacing and origin are needed unless heights is an xarray DataArray")
    for name, value in (("observers_per_task", observers_per_task), ("split_every", split_every)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if split_every < 2:
        raise ValueError(f"split_every must be at least 2, got {split_every!r}")
    if threads_per_task is not None and (
        not isinstance(threads_per_task, (int, np.integer)) or threads_per_task < 1
    ):
        raise ValueError(f"threads_per_task must be a positive integer, got {threads_per_task!r}")
    options = Options(
        observer_height, target_height, max_distance, earth_curvature, refraction, earth_radius
    )
    points = as_observers(observers)
    heights = da.asarray(heights)
    if heights.ndim != 2 or min(heights.shape) < 2:
        raise ValueError(f"heights must be 2D, at least 2x2, got shape {heights.shape}")
    # The model and the grid, checked by Heightfield itself.
    model = Heightfield(np.zeros((2, 2)), spacing=spacing, origin=origin, surface=surface,
                        solid=solid)  # fmt: skip
    groups = _groups(points, options, model, heights.shape, observers_per_task)
    return _graph(da, heights, groups, options, model, split_every, threads_per_task)


def _is_dataarray(value) -> bool:
    return type(value).__name__ == "DataArray" and hasattr(value, "dims")


def _on_dataarray(data, observers, spacing, origin, arguments):
    """The DataArray's grid: its coordinates, flipped where they descend (as
    terrain_from_xarray), the counts flipped back onto them."""
    from .core.visibility import _grid_axis

    if data.ndim != 2:
        raise ValueError(f"heights must be a 2D DataArray (y, x), got dims {data.dims}")
    ydim, xdim = data.dims
    x0, dx, x_descends = _grid_axis(data, xdim)
    y0, dy, y_descends = _grid_axis(data, ydim)
    array = data.data
    flip = (slice(None, None, -1 if y_descends else 1), slice(None, None, -1 if x_descends else 1))
    keywords = {
        key: value
        for key, value in arguments.items()
        if key not in ("heights", "observers", "spacing", "origin", "da")
    }
    counts = cumulative_viewshed(
        array[flip],
        observers,
        spacing=(dx, dy) if spacing is None else spacing,
        origin=(x0, y0) if origin is None else origin,
        **keywords,
    )
    return data.copy(data=counts[flip]).rename("visible_count")


def _groups(points, options, model, shape, per_task):
    """[(observers (K, 3), windows, union window)] for the observers that reach the grid,
    sorted along the grid (rows of blocks of ~64 vertices) so a group's union stays small.
    Consecutive observers share a group, up to ``per_task`` of them, while its union holds
    no more vertices than their windows together (a task never reads or holds more of the
    grid than its observers' tasks would apart: observers in one band of rows may lie far
    apart along it) and no more than GROUP_VERTICES; the last ALONE_AT_END * per_task
    observers alone."""
    reach = []
    for observer in points:
        window = reach_window(observer, options.max_distance, model.origin, model.spacing, shape)
        if window is not None:
            reach.append((observer, window))
    reach.sort(key=lambda item: (item[1][0] // 64, item[1][2] // 64, item[1]))
    groups: list = []
    tail = len(reach) - ALONE_AT_END * per_task
    for k, (observer, window) in enumerate(reach):
        if groups and k < tail:
            observers, windows, union = groups[-1]
            grown = _union(union, window)
            apart = sum(map(_area, windows + [window]))
            if len(windows) < per_task and _area(grown) <= min(apart, GROUP_VERTICES):
                groups[-1] = (observers + [observer], windows + [window], grown)
                continue
        groups.append(([observer], [window], window))
    return [(np.array(observers), windows, union) for observers, windows, union in groups]


def _shared_windows(groups, options):
    """The union windows whose terrain one task builds for the groups counting on them: a
    window two or more groups share, every observer of theirs reaching exactly it (the
    whole grid, where max_distance reaches that far), of at most GROUP_VERTICES vertices;
    none with curvature (which lowers each observer's terrain its own way). Those groups'
    tasks read the built terrain (hierarchy and kernel arguments included) instead of the
    window's heights: building it costs about what counting one observer does."""
    if options.curvature:
        return set()
    counts: dict = {}
    for _, windows, union in groups:
        if all(window == union for window in windows) and _area(union) <= GROUP_VERTICES:
            counts[union] = counts.get(union, 0) + 1
    return {window for window, count in counts.items() if count > 1}


def _union(a, b):
    """The smallest (j0, j1, i0, i1) range holding both."""
    return min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3])


def _area(window):
    return (window[1] - window[0]) * (window[3] - window[2])


def _graph(da, heights, groups, options, model, split_every, threads):
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    token = tokenize(heights, [g[0] for g in groups], vars(options), repr(model), split_every)
    part_name = f"gq-viewshed-part-{token}"
    name = f"gq-cumulative-viewshed-{token}"
    terrain_name = f"gq-viewshed-terrain-{token}"
    layer: dict = {}
    reads = []
    grid = (model.origin, model.spacing, model.surface, model.solid)

    def read(window):
        j0, j1, i0, i1 = window
        part = heights[j0:j1, i0:i1]
        reads.append(part)
        return part.__dask_keys__()

    shared = _shared_windows(groups, options)
    for window in shared:
        layer[(terrain_name, *window)] = (_window_terrain, read(window), window, grid)
    for g, (observers, windows, union) in enumerate(groups):
        source = (terrain_name, *union) if union in shared else read(union)
        layer[(part_name, g)] = (
            _count_group,
            source,
            observers,
            windows,
            union,
            grid,
            vars(options).copy(),
            threads,
        )
    # Parts of one window (groups reaching the same window, as a shared terrain's) are summed
    # as whole windows first: a task per split_every parts instead of one per chunk.
    by_window: dict = {}
    for g, (observers, _, union) in enumerate(groups):
        by_window.setdefault(union, []).append(((part_name, g), len(observers)))
    parts = [
        (key, union)
        for union, members in by_window.items()
        for key in _window_sums(layer, f"{name}-window", union, members, split_every)
    ]
    row_bounds = np.cumsum((0,) + heights.chunks[0])
    column_bounds = np.cumsum((0,) + heights.chunks[1])
    for bj, bi in itertools.product(range(len(heights.chunks[0])), range(len(heights.chunks[1]))):
        block = (
            int(row_bounds[bj]),
            int(row_bounds[bj + 1]),
            int(column_bounds[bi]),
            int(column_bounds[bi + 1]),
        )
        overlapping = [(key, union) for key, union in parts if _overlap(union, block) is not None]
        layer[(name, bj, bi)] = _reduce(layer, name, (bj, bi), overlapping, block, split_every)
    graph = HighLevelGraph.from_collections(name, layer, dependencies=reads)
    meta = np.empty((0, 0), dtype=np.int32)
    return da.Array(graph, name, chunks=heights.chunks, dtype=np.int32, meta=meta)


def _window_sums(layer, name, window, members, split_every):
    """Keys of at most ``split_every`` arrays over ``window`` that together hold the counts
    of ``members`` ((part key, observers) pairs, parts over that window): sums of
    ``split_every`` parts at a time, level by level, each in the smallest type holding its
    observers' count; the members themselves where there are few or the window is wide (a
    sum holds its window whole)."""
    level = 0
    while len(members) > split_every and _area(window) <= GROUP_VERTICES:
        summed = []
        for start in range(0, len(members), split_every):
            some = members[start : start + split_every]
            observers = sum(count for _, count in some)
            key = (name, *window, level, start // split_every)
            layer[key] = (_sum, [k for k, _ in some], _count_type(observers))
            summed.append((key, observers))
        members = summed
        level += 1
    return [key for key, _ in members]


def _count_type(observers):
    """The smallest unsigned type holding counts up to ``observers``, int32 beyond 65535."""
    if observers < 256:
        return np.uint8
    return np.uint16 if observers < 65536 else np.int32


def _reduce(layer, name, index, parts, block, split_every):
    """The task for one output chunk: the sum of the ``parts`` ((key, union window) pairs)
    overlapping it, ``split_every`` at a time: the first level adds the parts' slices into
    chunk-shaped int32 arrays (each part is read whole by its sums, never copied per chunk),
    the levels above add those."""
    shape = (block[1] - block[0], block[3] - block[2])
    if not parts:
        return (np.zeros, shape, np.int32)
    if len(parts) <= split_every:
        return (_add_parts, [key for key, _ in parts], [union for _, union in parts], block)
    leaves = []
    for start in range(0, len(parts), split_every):
        some = parts[start : start + split_every]
        key = (f"{name}-sum-0", *index, start // split_every)
        layer[key] = (_add_parts, [k for k, _ in some], [union for _, union in some], block)
        leaves.append(key)
    level = 1
    while len(leaves) > split_every:
        grouped = []
        for start in range(0, len(leaves), split_every):
            key = (f"{name}-sum-{level}", *index, start // split_every)
            layer[key] = (_sum, leaves[start : start + split_every], np.int32)
            grouped.append(key)
        leaves = grouped
        level += 1
    return (_sum, leaves, np.int32)


def _overlap(window, block):
    """The intersection of two (j0, j1, i0, i1) ranges, or None."""
    j0, j1 = max(window[0], block[0]), min(window[1], block[1])
    i0, i1 = max(window[2], block[2]), min(window[3], block[3])
    return (j0, j1, i0, i1) if j0 < j1 and i0 < i1 else None


def _sum(parts, dtype):
    """The sum of same-shaped ``parts`` as a new ``dtype`` array (wide enough for it)."""
    total = parts[0].astype(dtype)
    for part in parts[1:]:
        total += part
    return total


def _add_parts(parts, unions, block):
    """The block's int32 counts: the sum of each part's slice over it (a part covers its
    union window)."""
    out = np.zeros((block[1] - block[0], block[3] - block[2]), dtype=np.int32)
    for counts, union in zip(parts, unions):
        j0, j1, i0, i1 = _overlap(union, block)
        out[j0 - block[0] : j1 - block[0], i0 - block[2] : i1 - block[2]] += counts[
            j0 - union[0] : j1 - union[0], i0 - union[2] : i1 - union[2]
        ]
    return out


def _window_terrain(chunks, window, grid):
    """The window's Heightfield (its heights arrive as the nested list of its chunks), with
    what lines of sight on it need built: its hierarchy, and the kernel's arguments where
    the compiled kernels answer."""
    terrain = window_terrain(_heights(chunks), grid[0], grid[1], window, _like(grid))
    _ = terrain.hierarchy
    if backend() == "numba":
        terrain.kernel_arguments("occluded")
    return terrain


def _heights(chunks):
    return np.block(chunks) if isinstance(chunks, list) else np.asarray(chunks)


def _like(grid):
    """A Heightfield with the grid's model (window_visibility's ``like``)."""
    origin, spacing, surface, solid = grid
    return Heightfield(np.zeros((2, 2)), spacing=spacing, origin=origin, surface=surface,
                       solid=solid)  # fmt: skip


def _count_group(source, observers, windows, union, grid, options, threads):
    """(union rows, union columns), in the smallest type holding the group's count
    (_count_type): how many of the group's observers see each vertex of the union window.
    ``source``: the union's heights as the nested list of its chunks, or its Heightfield (a
    shared window's, _shared_windows)."""
    # window -> its Heightfield, built when a line of sight first needs it; only the last
    # window's kept (sorted, an observer's window follows the same window's observers): a
    # window's terrain and its kernel data take several times its heights.
    terrains: dict = {}
    if isinstance(source, Heightfield):
        terrains[union] = source
        heights = source.heights
    else:
        heights = _heights(source)
    origin, spacing = grid[:2]
    like = _like(grid)
    checked = Options(**options)
    # The part's counts in the smallest type holding them (a quarter of int32's memory for
    # up to 255 observers); _add_parts widens them into the output's int32.
    counts = np.zeros(heights.shape, dtype=_count_type(len(observers)))
    with _kernel_threads(threads):
        for observer, window in zip(observers, windows):
            j0, j1, i0, i1 = window
            rows = slice(j0 - union[0], j1 - union[0])
            columns = slice(i0 - union[2], i1 - union[2])
            if window not in terrains:
                terrains.clear()  # the previous window's terrain freed first
            counts[rows, columns] += window_visibility(
                heights[rows, columns], origin, spacing, window, observer, checked, like,
                terrains=terrains,
            )  # fmt: skip
    return counts


_threads_lock = threading.Lock()
_threads_users = 0
_threads_before: int | None = None


def _task_threads(requested):
    if requested is not None:
        return int(requested)
    try:
        from distributed import get_worker

        get_worker()
        return 1  # a worker thread runs one task: one kernel thread each
    except (ImportError, ValueError):
        pass
    if threading.current_thread() is not threading.main_thread():
        return 1  # dask's thread pool runs one task per core
    return None


@contextlib.contextmanager
def _kernel_threads(requested):
    """The compiled kernels' thread count (NUMBA_NUM_THREADS, which core's backend reads for
    each batch) while tasks run; the setting before restored when the last task ends."""
    global _threads_users, _threads_before
    count = _task_threads(requested)
    try:
        from numba.core import config
    except ImportError:
        count = None
    if count is None:
        yield
        return
    with _threads_lock:
        if _threads_users == 0:
            _threads_before = config.NUMBA_NUM_THREADS
        _threads_users += 1
        config.NUMBA_NUM_THREADS = count
    try:
        yield
    finally:
        with _threads_lock:
            _threads_users -= 1
            if _threads_users == 0 and _threads_before is not None:
                config.NUMBA_NUM_THREADS = _threads_before
