"""The add-on end to end: 10,000 GRID rays at a UV sphere, a cylinder and a 512x512
displaced grid together, written as one point mesh, through the operator
(``bpy.ops.geometry_queries.fire_ray``: map the evaluated objects, query core, write the
mesh), against the same job done the usual way: a Python loop over ``scene.ray_cast``
collecting hits and normals, then the same point mesh written with ``foreach_set``.

    .venv/bin/python bench/bench_operators.py

Cold and warm are reported separately, for both jobs:

* cold: the first call on a freshly built scene (the depsgraph evaluated once up front, as
  both jobs need it). The operator's first call makes Blender triangulate the 512x512 mesh
  and reads the triangles item by item (``mesh.loop_triangles``, ~65 ms), with the add-on's
  shape cache emptied first; the loop's first call makes Blender build its BVH trees.
* warm: the best of repeated calls on the unchanged scene. The operator then finds the
  shapes in its cache (operators/shape_cache.py: each reused only while its mesh's positions
  and topology are bit-identical, checked on every call in ~1 ms); the loop
  reuses the BVH trees Blender caches on the evaluated meshes between ``ray_cast`` calls. Both
  sides keep derived data across calls, so warm against warm is the fair comparison for
  repeated queries; cold against cold for a one-off.

The compiled kernels: right after registering (a fresh install, its numba cache empty) the
kernels are still being prepared in the background and the numpy reference answers (the
latency rule, core/backend.py). That first use is timed on its own, in a process of its own
(its kernel cache empty, NUMBA_CACHE_DIR a temporary one); the cold and warm calls here come
after the kernels are prepared and loaded, as they are a minute after a user enables it.

Target: the operator job <= 0.5 s, cold and warm.
"""

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import common  # noqa: F401  (sets BLENDER_USER_RESOURCES before bpy is imported)

# An empty kernel cache of this run's own, shared with the first-use process (the
# checkout's cache holds the kernels of earlier runs: the first use would only load them).
if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="gq-bench-kernels-")
    atexit.register(shutil.rmtree, os.environ["NUMBA_CACHE_DIR"], ignore_errors=True)

# isort: split
import bpy  # noqa: E402
import numpy as np  # noqa: E402
from common import register_with_kernels  # noqa: E402
from mathutils import Vector  # noqa: E402

from demo.addon_from_checkout import register_addon  # noqa: E402

ROWS = COLUMNS = 100
LARGE_ROWS = LARGE_COLUMNS = 316  # ~100,000 rays: how both scale with the batch
WIDTH = 9.5
ORIGIN, DIRECTION, MAX_DISTANCE = (0.0, 0.0, 10.0), (0.0, 0.0, -1.0), 100.0
REPEAT = 5


def build_scene():
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_uv_sphere_add(
        segments=32, ring_count=16, radius=1.5, location=(-2.5, 0.0, 2.0)
    )
    bpy.ops.mesh.primitive_cylinder_add(
        vertices=32, radius=1.0, depth=3.0, location=(2.5, 0.0, 2.0), rotation=(0.3, 0.0, 0.0)
    )
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=511, y_subdivisions=511, size=10.0)
    terrain = bpy.context.object
    displace = terrain.modifiers.new("Displace", "DISPLACE")
    displace.texture = bpy.data.textures.new("Hills", "CLOUDS")
    displace.texture.noise_scale = 2.0
    displace.strength = 0.6
    for obj in bpy.data.objects:
        obj.select_set(True)
    bpy.context.evaluated_depsgraph_get()


def grid_rays(rows=ROWS, columns=COLUMNS):
    from geometry_queries.operators import patterns

    return patterns.ray_pattern(
        "GRID", ORIGIN, DIRECTION, grid_rows=rows, grid_columns=columns, grid_width=WIDTH
    )


def write_point_mesh(points, normals):
    """The same output the operator writes: one vertex per hit, a hit_normal attribute."""
    mesh = bpy.data.meshes.new("Loop Hits")
    mesh.vertices.add(len(points))
    mesh.attributes["position"].data.foreach_set("vector", points.astype(np.float32).ravel())
    attribute = mesh.attributes.new("hit_normal", "FLOAT_VECTOR", "POINT")
    attribute.data.foreach_set("vector", normals.astype(np.float32).ravel())
    mesh.update()
    obj = bpy.data.objects.new("Loop Hits", mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def ray_cast_loop_job(rows=ROWS, columns=COLUMNS):
    """What a script does without the add-on: one scene.ray_cast per ray."""
    scene = bpy.context.scene
    depsgraph = bpy.context.evaluated_depsgraph_get()
    origins, directions = grid_rays(rows, columns)
    points, normals = [], []
    for origin, direction in zip(origins.tolist(), directions.tolist()):
        found, location, normal, _, _, _ = scene.ray_cast(
            depsgraph, Vector(origin), Vector(direction), distance=MAX_DISTANCE
        )
        if found:
            points.append(location[:])
            normals.append(normal[:])
    return write_point_mesh(np.array(points), np.array(normals))


def operator_job(rows=ROWS, columns=COLUMNS):
    bpy.ops.geometry_queries.fire_ray(
        origin=ORIGIN,
        direction=DIRECTION,
        pattern="GRID",
        grid_rows=rows,
        grid_columns=columns,
        grid_width=WIDTH,
        max_distance=MAX_DISTANCE,
        output="POINT_MESH",
    )
    return bpy.data.objects["Ray Hits"]


def timed(job, clean_up):
    start = time.perf_counter()
    result = job()
    elapsed = time.perf_counter() - start
    vertices = len(result.data.vertices)
    clean_up(result)
    return elapsed, vertices


def remove(obj):
    mesh = obj.data
    bpy.data.objects.remove(obj)
    bpy.data.meshes.remove(mesh)


def stage_times(clear_cache):
    """Where the operator's time goes, each stage timed on its own (``clear_cache``: empty
    the shape cache first, so mapping reads the loop triangles again)."""
    from geometry_queries.operators import mapping, nearest, patterns, shape_cache

    if clear_cache:
        shape_cache.SHAPES.clear()
    context = bpy.context
    depsgraph = context.evaluated_depsgraph_get()
    start = time.perf_counter()
    targets = mapping.recognize_all(context.selected_objects, depsgraph)
    mapped = time.perf_counter()
    origins, directions = patterns.ray_pattern(
        "GRID", ORIGIN, DIRECTION, grid_rows=ROWS, grid_columns=COLUMNS, grid_width=WIDTH
    )
    patterned = time.perf_counter()
    hits = nearest.nearest_ray_hits(targets, origins, directions, MAX_DISTANCE)
    queried = time.perf_counter()
    return {
        "map objects": mapped - start,
        "ray pattern": patterned - mapped,
        "query core": queried - patterned,
        "hits": int(hits.hit.sum()),
    }


def clear_hits(_obj):
    bpy.ops.geometry_queries.clear_hits()


def fresh_scene():
    """A newly built scene (no triangulation, no BVH trees yet) and an empty shape cache
    (an identical grid built earlier in this process would otherwise be found in it)."""
    from geometry_queries.operators import shape_cache

    build_scene()
    shape_cache.SHAPES.clear()


def first_use():
    """The operator job right after registering, in a new process whose kernel cache is
    empty (this process's NUMBA_CACHE_DIR, before this process queries anything): its wall
    time."""
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--first-use"],
        env=os.environ,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"]


def main():
    if "--first-use" in sys.argv:
        register_addon()
        fresh_scene()
        print(json.dumps({"seconds": timed(operator_job, clear_hits)[0]}))
        return
    first_ever = first_use()
    register_with_kernels()

    fresh_scene()
    operator_cold, cold_hits = timed(operator_job, clear_hits)
    operator_times, operator_hits = zip(*[timed(operator_job, clear_hits) for _ in range(REPEAT)])
    fresh_scene()
    loop_cold, _ = timed(ray_cast_loop_job, remove)
    loop_times, loop_hits = zip(*[timed(ray_cast_loop_job, remove) for _ in range(3)])
    cold_stages = stage_times(clear_cache=True)
    warm_stages = min(
        (stage_times(clear_cache=False) for _ in range(REPEAT)),
        key=lambda stages: stages["map objects"],
    )

    operator_warm, loop_warm = min(operator_times), min(loop_times)
    print(
        f"\n{ROWS * COLUMNS} GRID rays at a UV sphere (32x16), a cylinder (32) and a 512x512 "
        "displaced grid, point-mesh output"
    )
    print(
        f"  first use ever (empty kernel cache, a process of its own): operator "
        f"{first_ever * 1e3:.0f} ms, kernels not prepared yet"
    )
    print(
        f"  operator  bpy.ops.geometry_queries.fire_ray  cold {operator_cold * 1e3:7.1f} ms "
        f"(first call), warm {operator_warm * 1e3:6.1f} ms (best of {REPEAT})  "
        f"{operator_hits[0]} hits"
    )
    print(
        f"  loop      scene.ray_cast per ray + mesh     cold {loop_cold * 1e3:7.1f} ms "
        f"(first call), warm {loop_warm * 1e3:6.1f} ms (best of 3)  {loop_hits[0]} hits"
    )
    print(
        f"  ratio     loop / operator                   cold {loop_cold / operator_cold:7.1f}x"
        f"               warm {loop_warm / operator_warm:6.1f}x"
    )
    for label, stages in (("cache emptied", cold_stages), ("warm", warm_stages)):
        print(
            f"  stages    {label}: map objects {stages['map objects'] * 1e3:.1f} ms, "
            f"ray pattern {stages['ray pattern'] * 1e3:.1f} ms, "
            f"query core {stages['query core'] * 1e3:.1f} ms"
        )
    large = LARGE_ROWS * LARGE_COLUMNS
    large_operator = min(
        timed(lambda: operator_job(LARGE_ROWS, LARGE_COLUMNS), clear_hits)[0] for _ in range(2)
    )
    large_loop = min(
        timed(lambda: ray_cast_loop_job(LARGE_ROWS, LARGE_COLUMNS), remove)[0] for _ in range(2)
    )
    print(
        f"  {large} rays, warm (best of 2): operator {large_operator * 1e3:.1f} ms, "
        f"loop {large_loop * 1e3:.1f} ms, ratio {large_loop / large_operator:.1f}x"
    )
    target = 0.5
    met = operator_cold <= target and operator_warm <= target
    print(f"  target    operator <= {target} s, cold and warm: {'met' if met else 'NOT met'}")
    assert (
        operator_hits[0] == cold_hits == loop_hits[0] == cold_stages["hits"] == warm_stages["hits"]
    )


if __name__ == "__main__":
    main()
