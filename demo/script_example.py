"""Geometry Queries from a headless Python script (no window, no 3D view).

    .venv/bin/python demo/script_example.py [result.blend]

Registers the add-on straight from this checkout (demo/addon_from_checkout.py: the
checkout is linked as the package ``geometry_queries`` from build/), builds a
UV sphere, a cylinder and a displaced grid terrain, and runs every operator the way a
script would: with explicit origins and directions, or with the 3D cursor. Prints what
each query found; saves the scene when a .blend path is given.

BLENDER_USER_RESOURCES points to a temporary directory (removed at exit) before bpy is
imported, so the script leaves the user's Blender configuration alone.
"""

import os
import sys

from addon_from_checkout import register_addon, temporary_user_resources  # (beside this script)

temporary_user_resources("gq-demo-user-")

import bpy  # noqa: E402  (after BLENDER_USER_RESOURCES)
import numpy as np  # noqa: E402


def build_scene():
    """An empty scene with a sphere, a cylinder and a terrain (Grid + Displace)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, location=(-2.0, 0.0, 1.5))
    sphere = bpy.context.object
    bpy.ops.mesh.primitive_cylinder_add(
        radius=0.6, depth=2.0, location=(2.0, 0.0, 1.5), rotation=(0.0, 0.4, 0.0)
    )
    cylinder = bpy.context.object
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=127, y_subdivisions=127, size=8.0)
    terrain = bpy.context.object
    terrain.name = "Terrain"
    displace = terrain.modifiers.new("Displace", "DISPLACE")
    displace.texture = bpy.data.textures.new("Hills", "CLOUDS")
    displace.texture.noise_scale = 1.5
    displace.strength = 0.5
    return sphere, cylinder, terrain


def select(*objects):
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj in objects)


def main(save_path=None):
    addon = register_addon()
    sphere, cylinder, terrain = build_scene()
    scene = bpy.context.scene
    select(sphere, cylinder, terrain)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for obj in (sphere, cylinder, terrain):
        print(f"{obj.name}: {addon.operators.mapping.describe(obj, depsgraph)[1]}")

    # 1. One ray with an explicit origin and direction: the hit is an empty named after the
    #    target, Z axis along the normal, exact distance and target as custom properties.
    bpy.ops.geometry_queries.fire_ray(origin=(-2.0, -0.3, 6.0), direction=(0.0, 0.0, -1.0))
    print("1.", scene.geometry_queries.last_result)
    hit = bpy.data.objects["Sphere hit"]
    print(
        f"   {hit.name}: distance {hit['distance']:.9f}, normal "
        f"{np.round(hit['normal'], 6).tolist()}"
    )

    # 2. A 100 x 100 grid of parallel rays straight down over all three: more than 64 hits
    #    become ONE point mesh with hit_normal / distance / target_index attributes.
    bpy.ops.geometry_queries.fire_ray(
        origin=(0.0, 0.0, 6.0),
        direction=(0.0, 0.0, -1.0),
        pattern="GRID",
        grid_rows=100,
        grid_columns=100,
        grid_width=7.5,
    )
    print("2.", scene.geometry_queries.last_result)
    cloud = bpy.data.objects["Ray Hits"]
    mesh = cloud.data
    target_index = np.empty(len(mesh.vertices), dtype=np.int32)
    mesh.attributes["target_index"].data.foreach_get("value", target_index)
    counts = np.bincount(target_index, minlength=len(cloud["targets"]))
    print("   hits per target:", dict(zip(cloud["targets"], counts.tolist())))

    # 3. Nothing given: the rays start at the 3D cursor and run along its -Z axis; here a
    #    fan of 24 rays in a 20 degree cone, tilted towards the cylinder.
    scene.cursor.location = (0.0, 0.0, 5.0)
    scene.cursor.rotation_euler = (0.0, -0.35, 0.0)
    bpy.ops.geometry_queries.fire_ray(pattern="FAN", fan_count=24, fan_angle=np.radians(20.0))
    print("3.", scene.geometry_queries.last_result)

    # 4. A sphere cast (radius 0.3) from above down onto the sphere.
    select(sphere)
    bpy.ops.geometry_queries.sphere_cast(start=(-1.5, 0.0, 6.0), end=(-1.5, 0.0, -2.0), radius=0.3)
    print("4.", scene.geometry_queries.last_result)

    # 5. Errors: a cancelled operator raises RuntimeError carrying the report.
    bpy.ops.mesh.primitive_cube_add(location=(0.0, 4.0, 1.0))
    select(bpy.context.object)
    try:
        bpy.ops.geometry_queries.fire_ray(origin=(0.0, 4.0, 5.0), direction=(0.0, 0.0, -1.0))
    except RuntimeError as error:
        print("5.", str(error).strip().split(": not a sphere")[0])

    if save_path:
        bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(save_path))
        print("Saved", save_path)

    # 6. Clear Hits removes exactly what the add-on created.
    bpy.ops.geometry_queries.clear_hits()
    print("6.", scene.geometry_queries.last_result)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
