"""One-off timing (issue 11, item 5): 10,000 GRID rays at one 1500x1500 displaced grid
through the operator, first call (shape recognised, cache empty) against repeated calls
(shape from the cache), and the same rays as a Python loop over ``scene.ray_cast``.

    .venv/bin/python bench/big_terrain_cache.py

Not part of ``make bench`` (building the grid takes a while); run it by hand.
"""

import time

import common  # noqa: F401  (sets BLENDER_USER_RESOURCES before bpy is imported)

# isort: split
import bpy  # noqa: E402
import numpy as np  # noqa: E402
from mathutils import Vector  # noqa: E402

from demo.addon_from_checkout import register_addon  # noqa: E402

SIDE = 1500
ROWS = COLUMNS = 100
WIDTH = 9.5
ORIGIN, DIRECTION, MAX_DISTANCE = (0.0, 0.0, 10.0), (0.0, 0.0, -1.0), 100.0
REPEAT = 5


def build_scene():
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=SIDE - 1, y_subdivisions=SIDE - 1, size=10.0)
    terrain = bpy.context.object
    displace = terrain.modifiers.new("Displace", "DISPLACE")
    displace.texture = bpy.data.textures.new("Hills", "CLOUDS")
    displace.texture.noise_scale = 2.0
    displace.strength = 0.6
    terrain.select_set(True)
    bpy.context.evaluated_depsgraph_get()


def fire():
    start = time.perf_counter()
    bpy.ops.geometry_queries.fire_ray(
        origin=ORIGIN,
        direction=DIRECTION,
        pattern="GRID",
        grid_rows=ROWS,
        grid_columns=COLUMNS,
        grid_width=WIDTH,
        max_distance=MAX_DISTANCE,
        output="POINT_MESH",
    )
    elapsed = time.perf_counter() - start
    bpy.ops.geometry_queries.clear_hits()
    return elapsed


def ray_cast_loop():
    from geometry_queries.operators import patterns

    origins, directions = patterns.ray_pattern(
        "GRID", ORIGIN, DIRECTION, grid_rows=ROWS, grid_columns=COLUMNS, grid_width=WIDTH
    )
    scene = bpy.context.scene
    start = time.perf_counter()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    points = []
    for origin, direction in zip(origins.tolist(), directions.tolist()):
        found, location, _, _, _, _ = scene.ray_cast(
            depsgraph, Vector(origin), Vector(direction), distance=MAX_DISTANCE
        )
        if found:
            points.append(location[:])
    return time.perf_counter() - start, len(points)


def stages():
    """(map objects, query core) seconds of one call's two stages, the shape cached."""
    from geometry_queries.operators import mapping, nearest, patterns

    origins, directions = patterns.ray_pattern(
        "GRID", ORIGIN, DIRECTION, grid_rows=ROWS, grid_columns=COLUMNS, grid_width=WIDTH
    )
    start = time.perf_counter()
    targets = mapping.recognize_all(
        bpy.context.selected_objects, bpy.context.evaluated_depsgraph_get()
    )
    mapped = time.perf_counter()
    nearest.nearest_ray_hits(targets, origins, directions, MAX_DISTANCE)
    return mapped - start, time.perf_counter() - mapped


def main():
    register_addon()
    from geometry_queries.operators import shape_cache

    start = time.perf_counter()
    build_scene()
    print(f"{SIDE}x{SIDE} grid built and evaluated in {time.perf_counter() - start:.1f} s")
    shape_cache.SHAPES.clear()
    first = fire()
    repeated = [fire() for _ in range(REPEAT)]
    print(f"cache: {len(shape_cache.SHAPES)} entries, {shape_cache.SHAPES.nbytes / 2**20:.0f} MiB")
    loop_first, hits = ray_cast_loop()
    loop_repeated = min(ray_cast_loop()[0] for _ in range(2))
    print(f"{ROWS * COLUMNS} GRID rays, {hits} hits")
    print(f"  operator first call      {first * 1e3:8.1f} ms")
    print(
        f"  operator repeated        {min(repeated) * 1e3:8.1f} ms (best of {REPEAT}; "
        f"median {np.median(repeated) * 1e3:.1f} ms)"
    )
    mapped, queried = min(stages() for _ in range(REPEAT))
    print(
        f"  repeated, by stage       map objects {mapped * 1e3:.1f} ms, "
        f"query core {queried * 1e3:.1f} ms"
    )
    print(
        f"  scene.ray_cast loop      {loop_first * 1e3:8.1f} ms first, "
        f"{loop_repeated * 1e3:.1f} ms repeated (best of 2)"
    )


if __name__ == "__main__":
    main()
