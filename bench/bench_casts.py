"""Sphere casts next to ray casts on the same shapes: casts/s, rays/s and what a cast costs
in rays (issue 13's target: a cast costs at most 2x a ray on the same shape).

    .venv/bin/python bench/bench_casts.py [--casts 100000] [--repeat 5] [--sweep]

Shapes and lines: the sphere and the cylinder of bench_core.py (radius 1; the cylinder of
height 2, capped and as an open tube), lines from 5 units away aimed at random points within
1.2 of the centre (bench_core's rays); each cast moves a sphere of radius 0.1 or 0.5 (times
the shape's radius) along the same line, from the ray's origin to its target. The terrain:
bench_terrain_peers.py's 1024 x 1024 mirror-tiled DEM (74 m x 92.5 m cells), lines from
10 m above its highest point tilted up to 45 degrees, casts of radius 10 m, 37 m (half a
cell) and 74 m (a cell) as long as the rays' max_distance; both terrain models (when the
heightfield has a compiled sphere cast: skipped, with a note, before it exists).

Per backend (numba, then numpy for reference; numpy on the terrain with ``--numpy-terrain``
casts, 5000 by default, its cast walk being ~1000x slower): the CPU time per query on one thread
(process_time, NUMBA_NUM_THREADS=1 for the kernels; the machine's cores are shared, and CPU
time is what load disturbs least), the ratio cast/ray of those, and the wall-clock rates with
every thread (numba's default), best of ``--repeat``, rays and casts interleaved.

With ``--sweep``: where the target holds. Numba only, CPU per query on one thread, the ray
and the casts of every radius interleaved: the open tube at radii 0.05-0.5 (times its
radius; the capped cylinder beside it) and both terrain models at 5-74 m (74 m x 92.5 m
cells).
"""

import argparse
import functools
import time

import common  # noqa: F401  (sys.path, BLENDER_USER_RESOURCES)
import numba
import numpy as np
from bench_terrain_peers import SPACING, rays_from_above, terrains
from common import print_table, rays_toward

from geometry_queries.core import Cylinder, Heightfield, Sphere, raycast, sphere_cast
from geometry_queries.core.backend import use


def best_of(functions, repeat, one_thread):
    """Best CPU time (process_time) and best wall time of each function, calls interleaved
    so all see the same conditions; ``one_thread`` runs the kernels on one thread."""
    cpu = [np.inf] * len(functions)
    wall = [np.inf] * len(functions)
    threads = numba.config.NUMBA_NUM_THREADS
    numba.config.NUMBA_NUM_THREADS = 1 if one_thread else threads
    try:
        for _ in range(repeat):
            for slot, function in enumerate(functions):
                start, start_cpu = time.perf_counter(), time.process_time()
                function()
                wall[slot] = min(wall[slot], time.perf_counter() - start)
                cpu[slot] = min(cpu[slot], time.process_time() - start_cpu)
    finally:
        numba.config.NUMBA_NUM_THREADS = threads
    return cpu, wall


def shapes(count, rng):
    """(shape name, shape, origins, directions, ends, max_distance, whether it is a
    terrain): the analytic shapes on one set of lines, then both terrain models on theirs
    (a model without a compiled sphere cast skipped, with a note)."""
    origins, directions = rays_toward(rng, count, np.zeros(3), 1.2)
    ends = origins + directions
    for name, shape in (
        ("sphere", Sphere((0, 0, 0), 1.0)),
        ("capped cylinder", Cylinder((0, 0, -1), (0, 0, 1), 1.0)),
        ("open tube", Cylinder((0, 0, -1), (0, 0, 1), 1.0, capped=False)),
    ):
        yield name, shape, origins, directions, ends, np.inf, False
    heights = terrains()[1][1]
    terrain_origins, terrain_directions = rays_from_above(heights, count, rng)
    length = 3.0 * (heights.max() - heights.min() + 10.0)
    terrain_ends = terrain_origins + length * terrain_directions
    for solid in (True, False):
        terrain = Heightfield(heights, spacing=SPACING, solid=solid)
        name = f"DEM 1024^2, {'solid' if solid else 'surface'}"
        try:
            with use("numba"):
                sphere_cast(terrain, terrain_origins[:10], terrain_ends[:10], 10.0)
        except ValueError as error:
            print(f"\n(skipped {name}: {error})")
            continue
        yield name, terrain, terrain_origins, terrain_directions, terrain_ends, length, True


def radius_label(radius, terrain):
    """A cast radius as the tables print it (metres on the terrain)."""
    return f"{radius:g} m" if terrain else f"{radius}"


def cases(count, rng):
    """(shape name, cast radius label, shape, origins, directions, ends, max_distance, radius,
    whether it is a terrain)."""
    for name, shape, origins, directions, ends, limit, terrain in shapes(count, rng):
        radii = (10.0, 0.5 * SPACING[0], SPACING[0]) if terrain else (0.1, 0.5)
        for radius in radii:
            label = radius_label(radius, terrain)
            yield name, label, shape, origins, directions, ends, limit, radius, terrain


SWEEP_CYLINDER_RADII = (0.05, 0.1, 0.15, 0.2, 0.3, 0.5)
SWEEP_TERRAIN_RADII = (5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 37.0, 74.0)


def sweep(count, repeat):
    """The cast / ray ratio against the cast's radius (module docstring; not the sphere)."""
    rows = []
    for name, shape, origins, directions, ends, limit, terrain in shapes(
        count, np.random.default_rng(0)
    ):
        if name == "sphere":
            continue
        radii = SWEEP_TERRAIN_RADII if terrain else SWEEP_CYLINDER_RADII
        functions = [functools.partial(raycast, shape, origins, directions, limit)]
        functions += [functools.partial(sphere_cast, shape, origins, ends, r) for r in radii]
        with use("numba"):
            for function in functions:
                function()  # compile / warm up
            cpu, _ = best_of(functions, repeat, one_thread=True)
        for radius, cast_cpu in zip(radii, cpu[1:]):
            rows.append(
                (
                    name,
                    radius_label(radius, terrain),
                    f"{cpu[0] / count * 1e9:.1f} ns",
                    f"{cast_cpu / count * 1e9:.1f} ns",
                    f"{cast_cpu / cpu[0]:.2f}x",
                )
            )
    print_table(
        f"Cast / ray against the cast's radius ({count:,} each; numba, CPU per query on one "
        "thread)",
        ("shape", "cast radius", "ray CPU", "cast CPU", "cast / ray"),
        rows,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--casts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--numpy-terrain", type=int, default=5000)
    parser.add_argument("--sweep", action="store_true", help="cast / ray against the radius")
    arguments = parser.parse_args()
    count = arguments.casts
    if arguments.sweep:
        sweep(count, arguments.repeat)
        return
    rows = []
    for name, label, shape, all_origins, all_directions, all_ends, limit, radius, terrain in cases(
        count, np.random.default_rng(0)
    ):
        for backend in ("numba", "numpy"):
            used = count if backend == "numba" or not terrain else arguments.numpy_terrain
            origins, directions = all_origins[:used], all_directions[:used]
            ends = all_ends[:used]
            with use(backend):
                ray = functools.partial(raycast, shape, origins, directions, limit)
                cast = functools.partial(sphere_cast, shape, origins, ends, radius)
                ray(), cast()  # compile / warm up
                repeat = arguments.repeat if backend == "numba" else max(2, arguments.repeat // 2)
                repeat = repeat if not (terrain and backend == "numpy") else 1
                (ray_cpu, cast_cpu), _ = best_of((ray, cast), repeat, one_thread=True)
                _, (ray_wall, cast_wall) = best_of((ray, cast), repeat, one_thread=False)
                hits = cast().hit.mean()
            rows.append(
                (
                    name,
                    label,
                    backend if used == count else f"{backend} ({used:,})",
                    f"{ray_cpu / used * 1e9:.1f} ns",
                    f"{cast_cpu / used * 1e9:.1f} ns",
                    f"{cast_cpu / ray_cpu:.2f}x",
                    f"{used / ray_wall / 1e6:.3f} M/s",
                    f"{used / cast_wall / 1e6:.3f} M/s",
                    f"{100 * hits:.0f} %",
                )
            )
    print_table(
        f"Sphere casts vs rays on the same shapes and lines ({count:,} each; CPU per query on "
        f"one thread; wall rates with {numba.config.NUMBA_NUM_THREADS} threads)",
        (
            "shape",
            "cast radius",
            "backend",
            "ray CPU",
            "cast CPU",
            "cast / ray",
            "rays/s",
            "casts/s",
            "casts hit",
        ),
        rows,
    )


if __name__ == "__main__":
    main()
