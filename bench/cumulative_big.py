"""A cumulative viewshed larger than memory: a 16,384 x 16,384 DEM (268 M vertices, 1 GiB of
float32) stored as zarr, 64 observers reaching 2,000 cells, counted by geometry_queries.dask
on a LocalCluster of 2 single-threaded workers, each held under a memory limit (2 GB). Reports
the wall time, each worker's peak memory, and the throughput in observer-vertices per second
against core.cumulative_viewshed in this process on reach windows of the same size.

    .venv/bin/python bench/cumulative_big.py [--side 16384] [--observers 64]
        [--reach 2000] [--memory-limit 2GB] [--observers-per-task 4] [--memory-observers 2]

Not part of ``make bench`` (it runs for many minutes); run it by hand.

The DEM: fractal value noise (fBm: 12 octaves, wavelengths 8,192 down to 4 cells, each
lattice rotated by the golden angle so no axis shows, amplitude ~ wavelength^0.9, ridged
below 1,024 cells) on a 30 m grid, a pure function of the vertex indices and a seed, made
chunk by chunk by dask and written to build/bench-cache/ (ignored by git; reused when
present), so the whole grid never sits in memory. Observers stand 2 m above seeded random
vertices; ``max_distance`` is ``reach * 30 m``. The counts are written chunk by chunk by
the workers into a zarr store in a temporary folder (removed at the end): the client never
holds them.

Observer-vertices: the vertices within ``max_distance`` of each observer, summed over the
observers (the lines of sight the run decides; fewer near the DEM's edges). Peak memory: the
high-water mark of each worker process's resident set (getrusage's ru_maxrss, asked of
each worker at the end), the highest RSS sampled every 0.2 s from this process (psutil),
and the most task results a worker held at once (its managed memory, sampled every 1 s):
the rest of its peak is what a running task allocates.
"""

import argparse
import os
import resource
import shutil
import sys
import tempfile
import threading
import time

# Core only, no bpy (dask's worker processes import the package too): the package from this
# checkout, for this process and, through PYTHONPATH, for the workers.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
from demo.addon_from_checkout import import_addon  # noqa: E402

import_addon(subprocesses=True)

import numpy as np  # noqa: E402

from geometry_queries.core import Heightfield, cumulative_viewshed, occluded  # noqa: E402
from geometry_queries.core.backend import threads, use  # noqa: E402
from geometry_queries.core.visibility import reach_window, vertex_coordinates  # noqa: E402

CACHE = os.path.join(ROOT, "build", "bench-cache")
SPACING = 30.0
BASE = 1000.0  # m: lifts the noise (about -1,500..+1,500 m) above sea level
OBSERVER_HEIGHT = 2.0
SEED = 27
CHUNK = 1024

# ----------------------------------------------------------------------------- the DEM

# splitmix64's constants: a lattice point's value is a hash of its indices, so any chunk
# computes the same values on the points it shares with its neighbours.
_GOLDEN, _MIX_COLUMN, _MIX_OCTAVE = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_MIX_1, _MIX_2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
OCTAVES = 12  # wavelengths 8192, 4096, ..., 4 cells
RIDGED_BELOW = 1024  # cells: shorter octaves fold (1 - 2|n|) into ridges and valleys
GOLDEN_ANGLE = 2.399963229728653  # radians: each octave's lattice turned by it


def _lattice_values(rows, columns, octave):
    """[-1, 1) at the lattice points (rows (R, 1), columns (1, C)): splitmix64 of the
    point's indices, the octave and the seed."""
    u64 = np.uint64
    key = (
        rows.astype(u64) * u64(_GOLDEN)
        ^ columns.astype(u64) * u64(_MIX_COLUMN)
        ^ u64(octave * _MIX_OCTAVE + SEED)
    )
    key = (key ^ (key >> u64(30))) * u64(_MIX_1)
    key = (key ^ (key >> u64(27))) * u64(_MIX_2)
    key ^= key >> u64(31)
    return (key >> u64(11)).astype(np.float64) / 2.0**52 - 1.0


def _value_noise(x, y, wavelength, octave):
    """Value noise of one octave at grid points (x, y): the lattice values, turned by
    octave * GOLDEN_ANGLE, interpolated with smoothstep weights."""
    c, s = np.cos(octave * GOLDEN_ANGLE), np.sin(octave * GOLDEN_ANGLE)
    u = (c * x - s * y) / wavelength
    v = (s * x + c * y) / wavelength
    cu, cv = np.floor(u), np.floor(v)
    fu, fv = u - cu, v - cv
    fu, fv = fu * fu * (3.0 - 2.0 * fu), fv * fv * (3.0 - 2.0 * fv)
    u0, v0 = int(cu.min()), int(cv.min())
    grid = _lattice_values(
        np.arange(v0, int(cv.max()) + 2)[:, None], np.arange(u0, int(cu.max()) + 2)[None, :],
        octave,
    )  # fmt: skip
    a, b = (cv - v0).astype(np.intp), (cu - u0).astype(np.intp)
    top = grid[a, b] + (grid[a, b + 1] - grid[a, b]) * fu
    bottom = grid[a + 1, b] + (grid[a + 1, b + 1] - grid[a + 1, b]) * fu
    return top + (bottom - top) * fv


def fbm_block(j0, j1, i0, i1):
    """float32 heights (m) of the DEM's vertices [j0:j1, i0:i1]."""
    y, x = np.mgrid[j0:j1, i0:i1].astype(np.float64)
    heights = np.full(x.shape, BASE)
    for octave in range(OCTAVES):
        wavelength = 2 ** (OCTAVES + 1 - octave)
        noise = _value_noise(x, y, wavelength, octave)
        if wavelength < RIDGED_BELOW:
            noise = 1.0 - 2.0 * np.abs(noise)
        heights += 0.4 * wavelength**0.9 * noise
    return heights.astype(np.float32)


def _fbm_chunk(block, block_info=None):
    (j0, j1), (i0, i1) = block_info[None]["array-location"]
    return fbm_block(j0, j1, i0, i1)


def dem_store(side):
    """The path of the side x side zarr DEM in build/bench-cache/, made when missing."""
    import dask.array as da
    import zarr

    path = os.path.join(CACHE, f"fbm-{side}-seed{SEED}.zarr")
    if os.path.isdir(path) and zarr.open_array(path, mode="r").attrs.get("complete"):
        return path
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(CACHE, exist_ok=True)
    start = time.perf_counter()
    template = da.empty((side, side), chunks=CHUNK, dtype=np.float32)
    heights = da.map_blocks(_fbm_chunk, template, dtype=np.float32)
    import dask

    with dask.config.set(scheduler="threads"):
        heights.to_zarr(path, compute=True)
    zarr.open_array(path, mode="r+").attrs["complete"] = True
    print(f"  DEM written to {path} in {time.perf_counter() - start:.0f} s", flush=True)
    return path


# ------------------------------------------------------------------------- the observers


def observers_on(dem, count, seed=2):
    """(count, 3) observers on seeded random vertices of the dask DEM (2 m above them
    through observer_height)."""
    rng = np.random.default_rng(seed)
    ny, nx = dem.shape
    i, j = rng.integers(0, nx, count), rng.integers(0, ny, count)
    z = dem.vindex[j, i].compute().astype(np.float64)
    return np.column_stack([i * SPACING, j * SPACING, z])


def reached(observer, max_distance, shape):
    """The vertices within max_distance of the observer (the test window_visibility
    makes): the lines of sight it decides."""
    window = reach_window(observer, max_distance, (0.0, 0.0), (SPACING, SPACING), shape)
    if window is None:
        return 0
    x, y = vertex_coordinates((0.0, 0.0), (SPACING, SPACING), window)
    squared = (y - observer[1])[:, None] ** 2 + ((x - observer[0]) ** 2)[None, :]
    return int(np.count_nonzero(squared <= max_distance * max_distance))


# ------------------------------------------------------------------------------- memory


class Sampler(threading.Thread):
    """The highest ``(bytes, detail)`` of ``measure()`` (a dict key -> (bytes, detail)) seen
    every ``seconds``, with the detail at that moment."""

    def __init__(self, measure, seconds):
        super().__init__(daemon=True)
        self.measure, self.seconds = measure, seconds
        self.peak: dict = {}
        self.halt = threading.Event()

    def run(self):
        while not self.halt.wait(self.seconds):
            try:
                values = self.measure()
            except Exception:  # a worker restarting (killed above its limit)
                continue
            for key, value in values.items():
                if value[0] > self.peak.get(key, (0, None))[0]:
                    self.peak[key] = value

    def stop(self):
        self.halt.set()
        self.join()
        return self.peak


def rss_of(pids):
    """measure() for Sampler: the resident set of each process."""
    import psutil

    processes = {pid: psutil.Process(pid) for pid in pids}
    return lambda: {pid: (p.memory_info().rss, None) for pid, p in processes.items()}


def _managed(dask_worker):
    """(bytes, {kind: bytes}): the task results the worker holds, by kind of task (the
    key's name without its token: DEM chunks, counted parts, sums)."""
    by_kind: dict = {}
    for task in dask_worker.state.tasks.values():
        if task.state == "memory" and task.nbytes:
            name = task.key[0] if isinstance(task.key, tuple) else task.key
            kind = "-".join(part for part in name.split("-") if len(part) != 32)
            by_kind[kind] = by_kind.get(kind, 0) + task.nbytes
    return dask_worker.state.nbytes, by_kind


def _warm_up():
    """Loads, in a worker, the kernels a counting task runs (from numba's cache): the sweep
    and the exact line of sight for what it leaves undecided; and dask.array (the
    ``to_zarr`` tasks' module, imported once per worker)."""
    import dask.array  # noqa: F401

    import geometry_queries.dask_graph  # noqa: F401

    terrain = Heightfield(np.random.default_rng(0).random((64, 64)), spacing=SPACING)
    with use("numba"):
        cumulative_viewshed(terrain, [(300.0, 300.0, 2.0)])
        occluded(terrain, (300.0, 300.0, 2.0), (1500.0, 1500.0, 0.0))
    return os.getpid()


def _max_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


# --------------------------------------------------------------------------------- runs


def cluster_run(dem, observers, max_distance, arguments, out_path):
    """(wall seconds, {worker: (ru_maxrss, sampled RSS, task results held)}, counting
    seconds, tasks, summary):
    the counts computed on the cluster and written to out_path."""
    import dask.array as da
    from distributed import Client, LocalCluster, get_task_stream

    from geometry_queries.dask import cumulative_viewshed as dask_cumulative

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True,
            memory_limit=arguments.memory_limit, dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):  # fmt: skip
        pids = client.run(_warm_up)
        rss = Sampler(rss_of(pids.values()), 0.2)
        managed = Sampler(lambda: client.run(_managed), 1.0)
        rss.start()
        managed.start()
        lazy = dask_cumulative(
            dem, observers, spacing=(SPACING, SPACING), origin=(0.0, 0.0),
            observer_height=OBSERVER_HEIGHT, max_distance=max_distance,
            observers_per_task=arguments.observers_per_task,
        )  # fmt: skip
        tasks = len(lazy.__dask_graph__())
        start = time.perf_counter()
        with get_task_stream(client) as stream:
            lazy.to_zarr(out_path, compute=True)
        wall = time.perf_counter() - start
        rss.stop()
        managed.stop()
        maxrss = client.run(_max_rss)
        if set(client.run(os.getpid).values()) != set(pids.values()):
            print("  a worker was restarted during the run (memory limit?)")
        counting = sum(
            part["stop"] - part["start"]
            for task in stream.data
            if str(task["key"]).startswith("('gq-viewshed-part-")
            for part in task["startstops"]
            if part["action"] == "compute"
        )
        counts = da.from_zarr(out_path)
        most, seen = client.compute([counts.max(), (counts > 0).sum()], sync=True)
    memory = {
        address: (maxrss[address], rss.peak.get(pid, (0,))[0], managed.peak.get(address, (0, {})))
        for address, pid in pids.items()
    }
    return wall, memory, counting, tasks, (int(most), int(seen))


def in_memory_run(dem, observers, max_distance, count):
    """(observer-vertices, seconds, CPU seconds, observers, window shape) of
    core.cumulative_viewshed in this process, each of the
    first ``count`` observers whose reach window lies wholly inside the DEM counted on a
    Heightfield of that window alone (the size of a dask task's window)."""
    with use("numba"):  # the kernel loaded before the clock starts
        _warm_up()
    total_vertices, total_seconds, total_cpu, done = 0, 0.0, 0.0, 0
    for observer in observers:
        window = reach_window(observer, max_distance, (0.0, 0.0), (SPACING, SPACING), dem.shape)
        j0, j1, i0, i1 = window
        if j0 == 0 or i0 == 0 or j1 == dem.shape[0] or i1 == dem.shape[1]:
            continue  # cut by the DEM's edge: smaller than a full window
        terrain = Heightfield(
            np.asarray(dem[j0:j1, i0:i1]), spacing=SPACING, origin=(i0 * SPACING, j0 * SPACING)
        )
        start, cpu = time.perf_counter(), time.process_time()
        cumulative_viewshed(
            terrain, observer, observer_height=OBSERVER_HEIGHT, max_distance=max_distance
        )
        total_seconds += time.perf_counter() - start
        total_cpu += time.process_time() - cpu
        total_vertices += reached(observer, max_distance, dem.shape)
        done += 1
        if done == count:
            break
    return total_vertices, total_seconds, total_cpu, done, (j1 - j0, i1 - i0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", type=int, default=16384)
    parser.add_argument("--observers", type=int, default=64)
    parser.add_argument("--reach", type=int, default=2000, help="max_distance in cells")
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--observers-per-task", type=int, default=4)
    parser.add_argument("--memory-observers", type=int, default=2)
    parser.add_argument("--skip-dask", action="store_true", help="the in-memory run alone")
    arguments = parser.parse_args()
    import dask.array as da

    side = arguments.side
    free = shutil.disk_usage(ROOT).free
    print(f"Cumulative viewshed, {side} x {side} float32 DEM ({side * side / 1e6:.0f} M "
          f"vertices), {arguments.observers} observers, max_distance {arguments.reach} cells; "
          f"{free / 2**30:.0f} GiB free on disk", flush=True)  # fmt: skip
    dem = da.from_zarr(dem_store(side))
    observers = observers_on(dem, arguments.observers)
    max_distance = arguments.reach * SPACING
    work = sum(reached(observer, max_distance, dem.shape) for observer in observers)
    dask_speed = None
    if not arguments.skip_dask:
        dask_speed = report_cluster_run(dem, observers, max_distance, work, arguments)
    vertices, seconds, cpu, done, shape = in_memory_run(
        dem, observers, max_distance, arguments.memory_observers
    )
    speed = vertices / seconds
    ratio = "" if dask_speed is None else f"; dask / in memory = {dask_speed / speed:.2f}x"
    print(f"  in memory, core.cumulative_viewshed on {done} reach windows of {shape[0]} x "
          f"{shape[1]} ({threads()} kernel threads): {seconds / done:.1f} s per observer "
          f"({cpu / done:.1f} s CPU), {speed / 1e6:.2f} M observer-vertices/s{ratio}; load "
          f"average {os.getloadavg()[0]:.1f}")  # fmt: skip


def report_cluster_run(dem, observers, max_distance, work, arguments):
    """Runs and prints cluster_run; returns its observer-vertices per second."""
    out_path = tempfile.mkdtemp(prefix="gq-cumulative-big-")
    try:
        wall, memory, counting, tasks, (most, seen) = cluster_run(
            dem, observers, max_distance, arguments, os.path.join(out_path, "counts.zarr")
        )
    finally:
        shutil.rmtree(out_path, ignore_errors=True)
    print(f"  dask, LocalCluster of 2 single-threaded workers (memory_limit "
          f"{arguments.memory_limit}), {CHUNK} x {CHUNK} chunks, observers_per_task "
          f"{arguments.observers_per_task}, {tasks} tasks: {wall:.0f} s wall, "
          f"{work / 1e6:.0f} M observer-vertices, {work / wall / 1e6:.2f} M/s; "
          f"{counting:.0f} s in the counting tasks ({counting / len(observers):.1f} s per "
          f"observer); at most {most} observers see a vertex, {seen / dem.size:.1%} of the "
          f"vertices seen by one or more; load average {os.getloadavg()[0]:.1f}",
          flush=True)  # fmt: skip
    for address, (maxrss, sampled, (held, kinds)) in memory.items():
        largest = sorted(kinds.items(), key=lambda item: -item[1])
        detail = ", ".join(f"{kind} {size / 2**30:.2f}" for kind, size in largest)
        print(f"    worker {address}: peak RSS {maxrss / 2**30:.2f} GiB (ru_maxrss; "
              f"{sampled / 2**30:.2f} GiB sampled), task results held at most "
              f"{held / 2**30:.2f} GiB ({detail})")  # fmt: skip
    return work / wall


if __name__ == "__main__":
    main()
