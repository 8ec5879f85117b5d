"""geometry_queries.dask: cumulative visibility on a DEM held as a dask array, computed by
any dask scheduler (a distributed cluster included). Never imported inside Blender; needs
the extra ``dask`` (``pip install geometry_queries[dask]``).

    from geometry_queries.dask import cumulative_viewshed
    counts = cumulative_viewshed(dem, observers, spacing=(30, 30), origin=(x0, y0),
                                 observer_height=2, max_distance=5000)   # lazy int32
    counts.compute()

The graph. Observers are sorted along the grid and split into groups of at most
``observers_per_task``, a group closed early where its union would hold more vertices than
its observers' windows together, the last few observers one per task (short tasks last);
one task per group reads the part of the DEM its observers reach (the union of their reach
windows, core.visibility.reach_window: the whole DEM when ``max_distance`` is infinite),
never the rest, and counts on it with the compiled kernels; groups whose observers all
reach one window share a task that builds its terrain once, and their parts are summed as
whole windows. Each output chunk then sums the parts (or window sums) that overlap it,
``split_every`` at a time (a tree reduction), so no task ever holds the whole grid unless
an observer reaches all of it.

Exactness. A task cuts each observer's own reach window out of its part and asks the same
question core.cumulative_viewshed asks on the same window (core.visibility's
window_visibility: the same heights, origin and vertex coordinates, all from the whole
grid's indices), so the counts equal core's bit for bit, whatever the chunks or scheduler.
"""

import sys

if __name__ == "dask":  # the checkout's root on sys.path: this file shadows dask
    # Scripts and tests that put the repository root on sys.path find this file as the
    # top-level module dask: load the real dask in its place (the import statement returns
    # what sys.modules holds once this module ran).
    import importlib.machinery
    import importlib.util
    import os

    _here = os.path.dirname(os.path.abspath(__file__))
    _path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
    _spec = importlib.machinery.PathFinder.find_spec("dask", _path)
    if _spec is None or _spec.loader is None:
        raise ImportError("No module named 'dask' (pip install dask[array])")
    _real = importlib.util.module_from_spec(_spec)
    sys.modules["dask"] = _real
    _spec.loader.exec_module(_real)
else:
    from .dask_graph import INSTALL_HINT, cumulative_viewshed

    __all__ = ["cumulative_viewshed", "INSTALL_HINT"]
