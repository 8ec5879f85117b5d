"""Line of sight on a large terrain: core.occluded for every vertex of a 1024x1024 terrain.

    NUMBA_NUM_THREADS=2 .venv/bin/python bench/bench_occluded.py [--size 1024] [--repeat 3]

The scene of issue 14's speed target: a fractal terrain (bench_heightfield.fractal_terrain,
spacing 1, relief ~100), the observer 2 m above the surface at the terrain's centre, one
segment to each of the 1,048,576 vertices, raised by 0 (targets on the surface: not hidden
by it) and by 1.7 m. Prints the best wall and CPU time of a few runs of the whole batch on
the numba backend (the compiled any-hit walk; threads: NUMBA_NUM_THREADS), the visible
share, and that the numpy reference gives the same answers on a sample of 20,000 segments.
"""

import argparse
import time

import common  # noqa: F401  (sys.path, BLENDER_USER_RESOURCES)
import numpy as np
from bench_heightfield import fractal_terrain

from geometry_queries.core import Heightfield, occluded
from geometry_queries.core.backend import threads, use


def scene(n):
    heights = fractal_terrain(n, np.random.default_rng(0))
    terrain = Heightfield(heights)
    middle = (n - 1) / 2.0
    observer = np.array([middle, middle, float(terrain.height_at(middle, middle)) + 2.0])
    rows, columns = np.mgrid[0:n, 0:n]
    vertices = np.stack([columns.ravel(), rows.ravel(), heights.ravel()], axis=1).astype(float)
    return terrain, observer, vertices


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    terrain, observer, vertices = scene(options.size)
    starts = np.broadcast_to(observer, vertices.shape)
    with use("numba"):
        occluded(terrain, starts[:10], vertices[:10])  # compile (or load the cache)
    print(
        f"{len(vertices):,} segments, {options.size}x{options.size} terrain, numba, "
        f"{threads()} threads"
    )
    for raise_by in (0.0, 1.7):
        targets = vertices + [0.0, 0.0, raise_by]
        best_wall = best_cpu = np.inf
        with use("numba"):
            for _ in range(options.repeat):
                wall, cpu = time.perf_counter(), time.process_time()
                blocked = occluded(terrain, starts, targets)
                best_wall = min(best_wall, time.perf_counter() - wall)
                best_cpu = min(best_cpu, time.process_time() - cpu)
        sample = np.random.default_rng(1).choice(len(targets), 20_000, replace=False)
        with use("numpy"):
            reference = occluded(terrain, starts[sample], targets[sample])
        same = bool((reference == blocked[sample]).all())
        print(
            f"targets +{raise_by} m: {best_wall:.3f} s wall, {best_cpu:.3f} s CPU "
            f"(best of {options.repeat}); visible {100 * (1 - blocked.mean()):.1f} %; "
            f"numpy reference agrees on 20,000: {same}"
        )


if __name__ == "__main__":
    main()
