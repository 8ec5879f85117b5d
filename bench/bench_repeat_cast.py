"""Repeated single queries through the operators on an unchanged 1000 x 1000 terrain: the
per-call time of ``bpy.ops.geometry_queries.sphere_cast`` (one cast), ``fire_ray`` (one ray)
and ``visibility`` (every vertex), against ``core.sphere_cast`` / ``core.raycast`` on the same
shape. A repeated call should cost what its query costs, not what reading the terrain costs.

    .venv/bin/python bench/bench_repeat_cast.py [--profile]

The kernels are prepared first (as in a session a minute after enabling the extension).
Each operator runs once first (the terrain is recognised and cached), then REPEAT times;
the median per call is printed. --profile prints cProfile's top entries of the repeated
sphere casts.
"""

import cProfile
import pstats
import sys
import time

import common  # noqa: F401  (sets BLENDER_USER_RESOURCES before bpy is imported)
from common import register_with_kernels

# isort: split
import bpy  # noqa: E402
import numpy as np  # noqa: E402

SIDE = 1000
SIZE = 100.0
REPEAT = 20
VISIBILITY_REPEAT = 3
START, END, RADIUS = (3.0, 2.0, 40.0), (3.5, 2.5, -40.0), 0.5
OBSERVER = (3.0, 2.0, 10.0)  # above the hills (Displace: up to 8 m)


def build_scene():
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=SIDE - 1, y_subdivisions=SIDE - 1, size=SIZE)
    terrain = bpy.context.object
    terrain.name = "Terrain"
    displace = terrain.modifiers.new("Displace", "DISPLACE")
    displace.texture = bpy.data.textures.new("Hills", "CLOUDS")
    displace.texture.noise_scale = 20.0
    displace.strength = 8.0
    terrain.select_set(True)
    bpy.context.view_layer.objects.active = terrain
    bpy.context.evaluated_depsgraph_get()
    return terrain


def sphere_cast():
    bpy.ops.geometry_queries.sphere_cast(start=START, end=END, radius=RADIUS)


def fire_ray():
    direction = np.subtract(END, START)
    bpy.ops.geometry_queries.fire_ray(origin=START, direction=direction)


def visibility():
    bpy.ops.geometry_queries.visibility(origin=OBSERVER)


def per_call(function, repeat):
    """Median wall time of ``repeat`` calls (seconds), after one call not counted."""
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def core_times(terrain):
    """core.sphere_cast and core.raycast on the shape the operators query."""
    from geometry_queries import core
    from geometry_queries.operators import mapping

    target = mapping.recognize(terrain, bpy.context.evaluated_depsgraph_get())
    cast_target = mapping.as_cast_target(target.shape, target.kind)
    starts, ends = np.array([START]), np.array([END])
    return (
        per_call(lambda: core.sphere_cast(cast_target, starts, ends, RADIUS), REPEAT),
        per_call(lambda: core.raycast(target.shape, starts, ends - starts), REPEAT),
    )


def main():
    register_with_kernels()  # the kernels loaded, as a minute after enabling
    terrain = build_scene()
    if "--profile" in sys.argv[1:]:
        sphere_cast()
        profile = cProfile.Profile()
        profile.runcall(lambda: [sphere_cast() for _ in range(REPEAT)])
        pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
    cast = per_call(sphere_cast, REPEAT)
    ray = per_call(fire_ray, REPEAT)
    seen = per_call(visibility, VISIBILITY_REPEAT)
    core_cast, core_ray = core_times(terrain)
    print(f"\nRepeated queries on a {SIDE}x{SIDE} terrain (median per call)")
    print(f"  sphere_cast  operator {cast * 1e3:8.1f} ms   core {core_cast * 1e3:6.2f} ms")
    print(f"  fire_ray     operator {ray * 1e3:8.1f} ms   core {core_ray * 1e3:6.2f} ms")
    print(f"  visibility   operator {seen * 1e3:8.1f} ms   ({SIDE * SIDE:,} lines of sight)")


if __name__ == "__main__":
    main()
