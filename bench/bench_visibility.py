"""Visibility from Cursor on a 1024 x 1024 terrain (1,048,576 vertices): the operator
(``bpy.ops.geometry_queries.visibility``: map the terrain, 1,048,576 lines of sight through
``core.occluded``, write the two attributes) from 2 m above the terrain's centre, against
the same question asked the usual way: a Python loop of ``scene.ray_cast`` from the observer
towards each vertex, timed on a random sample of 10,000 vertices and extrapolated.

    .venv/bin/python bench/bench_visibility.py

Reported:

* the operator's first call in this process (numba loads or compiles its kernels, the
  terrain's loop triangles are read: ``mesh.loop_triangles``, ~0.5 s at this size),
  then cold (shape cache emptied, kernels loaded) and warm (best of 3, the terrain found in
  the shape cache), and where a warm call's time goes;
* the lines of sight alone on the numpy backend (``core.backend.use("numpy")``), for
  comparison;
* the ``scene.ray_cast`` loop: 10,000 vertices, its rate, the time it would take for all of
  them, and its agreement with the operator on the sample (a vertex counts as visible to
  the loop when the first hit lies within 1e-5 of the segment's length of the vertex:
  Blender's float32; a disagreement is a line grazing the terrain within that tolerance).

Target: the operator <= 2 s (warm and cold).
"""

import time

import common  # noqa: F401  (sets BLENDER_USER_RESOURCES before bpy is imported)

# isort: split
import bpy  # noqa: E402
import numpy as np  # noqa: E402
from common import register_with_kernels  # noqa: E402
from mathutils import Vector  # noqa: E402

SIDE = 1024
SIZE = 200.0  # metres: ~0.2 m between vertices
OBSERVER_HEIGHT = 2.0
SAMPLE = 10_000
TOUCH = 1e-5
REPEAT = 3


def build_scene():
    """The 1024 x 1024 grid with rolling hills (Clouds, 12 m) and the observer's spot: the
    terrain vertex nearest its centre (returned, world space)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=SIDE - 1, y_subdivisions=SIDE - 1, size=SIZE)
    terrain = bpy.context.object
    terrain.name = "Terrain"
    displace = terrain.modifiers.new("Displace", "DISPLACE")
    displace.texture = bpy.data.textures.new("Hills", "CLOUDS")
    displace.texture.noise_scale = 40.0
    displace.strength = 12.0
    terrain.select_set(True)
    points = world_vertices(terrain)
    centre = points[np.argmin(np.hypot(points[:, 0], points[:, 1]))]
    return terrain, centre


def world_vertices(obj):
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = evaluated.data
    positions = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.attributes["position"].data.foreach_get("vector", positions)
    matrix = np.array(evaluated.matrix_world)
    return positions.reshape(-1, 3).astype(np.float64) @ matrix[:3, :3].T + matrix[:3, 3]


def run_operator(centre):
    start = time.perf_counter()
    bpy.ops.geometry_queries.visibility(origin=centre, observer_height=OBSERVER_HEIGHT)
    return time.perf_counter() - start


def read_visible(terrain):
    visible = np.empty(len(terrain.data.vertices), dtype=bool)
    terrain.data.attributes["visible"].data.foreach_get("value", visible)
    return visible


def stage_times(terrain, centre):
    """One warm call's stages: map, lines of sight, write (as the operator runs them)."""
    from geometry_queries.operators import mapping, sightlines, visibility_attributes

    depsgraph = bpy.context.evaluated_depsgraph_get()
    observer = np.array(centre, dtype=np.float32).astype(np.float64) + [0, 0, OBSERVER_HEIGHT]
    start = time.perf_counter()
    shape = mapping.recognize(terrain, depsgraph)
    points = sightlines.terrain_vertices(terrain.evaluated_get(depsgraph), shape)
    mapped = time.perf_counter()
    visible = sightlines.visible_from(observer, points, [shape])
    seen = time.perf_counter()
    visibility_attributes.write_visibility(terrain.data, visible)
    written = time.perf_counter()
    return {
        "map": mapped - start,
        "sight": seen - mapped,
        "write": written - seen,
    }, (observer, points, shape)


def numpy_sight_lines(observer, points, shape):
    from geometry_queries.core.backend import use
    from geometry_queries.operators import sightlines

    with use("numpy"):
        start = time.perf_counter()
        visible = sightlines.visible_from(observer, points, [shape])
        return time.perf_counter() - start, visible


def ray_cast_loop(observer, targets):
    """scene.ray_cast from the observer towards each target, up to the target."""
    scene = bpy.context.scene
    depsgraph = bpy.context.evaluated_depsgraph_get()
    eye = Vector(observer)
    visible = np.empty(len(targets), dtype=bool)
    start = time.perf_counter()
    for index, target in enumerate(targets.tolist()):
        direction = Vector(target) - eye
        length = direction.length
        found, location, _, _, _, _ = scene.ray_cast(depsgraph, eye, direction, distance=length)
        visible[index] = not found or (location - eye).length >= length * (1.0 - TOUCH)
    return time.perf_counter() - start, visible


def main():
    register_with_kernels()
    from geometry_queries.operators import shape_cache

    terrain, centre = build_scene()
    count = len(terrain.data.vertices)
    first = run_operator(centre)
    shape_cache.SHAPES.clear()
    cold = run_operator(centre)
    warm = min(run_operator(centre) for _ in range(REPEAT))
    visible = read_visible(terrain)
    stages, (observer, points, shape) = stage_times(terrain, centre)
    numpy_time, numpy_visible = numpy_sight_lines(observer, points, shape)

    rng = np.random.default_rng(1)
    sample = rng.choice(count, SAMPLE, replace=False)
    loop_time, loop_visible = ray_cast_loop(observer, points[sample])
    disagree = int(np.count_nonzero(loop_visible != visible[sample]))

    print(
        f"\nVisibility of a {SIDE}x{SIDE} terrain ({count:,} vertices, {SIZE:g} m across, "
        f"hills to {12:g} m) from {OBSERVER_HEIGHT:g} m above its centre: "
        f"{100 * visible.mean():.1f} % visible"
    )
    print(
        f"  operator  first call {first:.2f} s (kernels, loop triangles), cold {cold:.2f} s "
        f"(shape cache emptied), warm {warm:.2f} s (best of {REPEAT})"
    )
    print(
        f"  stages    warm: map {stages['map'] * 1e3:.0f} ms, lines of sight "
        f"{stages['sight'] * 1e3:.0f} ms, write attributes {stages['write'] * 1e3:.0f} ms"
    )
    print(
        f"  numpy     lines of sight on the numpy backend {numpy_time:.2f} s "
        f"(same answers: {bool((numpy_visible == visible).all())})"
    )
    rate = SAMPLE / loop_time
    print(
        f"  loop      scene.ray_cast per vertex: {SAMPLE:,} in {loop_time:.2f} s "
        f"({rate / 1e3:.1f} k/s) -> {count / rate:.1f} s for all {count:,} "
        f"({count / rate / warm:.0f}x the warm operator); disagrees on {disagree} of {SAMPLE:,}"
    )
    target = 2.0
    met = max(cold, warm) <= target
    print(f"  target    operator <= {target:g} s, cold and warm: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
