"""The headless demo behind `make demo`: three scenes, four queries, three pictures, a table.

    .venv/bin/python demo/make_demo.py [--docs]

1. Builds a scene without a window: a UV sphere, a cylinder and a terrain (a Grid with a
   Displace modifier driven by a Clouds texture), and the 3D cursor above them, tilted to
   look down at them.
2. Runs the add-on's operators the way a script does: a FAN of rays from the 3D cursor
   (``bpy.ops.geometry_queries.fire_ray(pattern='FAN', output='POINT_MESH')``) at all three,
   and a sphere cast (``bpy.ops.geometry_queries.sphere_cast``) down onto the sphere.
3. Makes the results render-visible (empties and bare vertices never render): a small
   sphere instanced on every hit by Geometry Nodes, each ray a thin tube (a curve with a
   bevel) from the cursor to its hit, the cast sphere at its contact position on a tube
   along its path, and a marker on the cursor. Adds a camera, a sun and a sky colour.
4. Saves demo/out/demo.blend, renders demo/out/demo.png with Cycles on the CPU (640x400,
   few samples; a few seconds), and prints a table of the hits.
5. Visibility: a new scene, a larger hilly terrain with a cylinder tower on it and the 3D
   cursor on the ground in front of the tower; ``bpy.ops.geometry_queries.visibility``
   (observer 1.7 m above the cursor) colours the terrain by what the observer sees (its
   ``visibility`` colour attribute, rendered through an Attribute node): light where
   visible, dark red where hidden, the tower's "shadow" behind it and the hills' own. The
   observer is a small glowing ball on a thin pole. Saves demo/out/visibility.blend and
   renders demo/out/visibility.png.
6. Cumulative visibility: the same kind of terrain with five empties on the ground as
   observers; ``bpy.ops.geometry_queries.cumulative_visibility`` (observers 1 m above the
   empties) counts how many of them see each vertex and colours the terrain by that count
   (its ``visible_count_color`` attribute: dark red seen by none, orange by one, light by
   all five). Each observer is a blue glowing ball on a pole. Saves
   demo/out/cumulative_visibility.blend and renders demo/out/cumulative_visibility.png.

With --docs the pictures are also copied to docs/demo.png, docs/visibility.png and
docs/cumulative_visibility.png (the README's pictures).

The add-on is registered straight from this checkout (linked as the package
``geometry_queries`` from build/addon-from-checkout, so the kernels compiled by an earlier run
are loaded, not compiled again); installed as an extension, its operators are simply there.
BLENDER_USER_RESOURCES points to a temporary directory (removed at exit) before bpy is
imported, so the demo leaves the user's Blender configuration alone.
"""

import os
import shutil
import sys
import time
from math import radians

from addon_from_checkout import register_addon, temporary_user_resources  # (beside this script)

temporary_user_resources("gq-demo-user-")

import bpy  # noqa: E402  (after BLENDER_USER_RESOURCES)
import numpy as np  # noqa: E402
from mathutils import Vector  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "demo", "out")
DOCS_PNG = os.path.join(ROOT, "docs", "demo.png")
DOCS_VISIBILITY_PNG = os.path.join(ROOT, "docs", "visibility.png")
DOCS_CUMULATIVE_PNG = os.path.join(ROOT, "docs", "cumulative_visibility.png")

CURSOR = Vector((-3.6, -4.2, 6.4))
CURSOR_LOOKS_AT = Vector((0.4, 0.4, 0.8))
FAN_RAYS = 60
FAN_ANGLE = radians(52.0)
CAST_START = Vector((-0.6, 1.35, 6.0))
CAST_END = Vector((-0.6, 1.35, -0.5))
CAST_RADIUS = 0.4

OBSERVER_SPOT = (-3.2, -3.4)  # x, y of the 3D cursor on the ground in the visibility scene
OBSERVER_HEIGHT = 1.7
TOWER_SPOT = (-1.4, -1.5)
# x, y of the empties (observers) on the ground in the cumulative visibility scene
OBSERVER_SPOTS = ((-3.8, -3.6), (2.6, -3.9), (0.3, 0.2), (-3.4, 3.3), (3.6, 3.4))
EMPTIES_HILLS = (2.0, 2.0)  # the terrain's displacement strength and noise scale
EMPTIES_HEIGHT = 1.0  # m: the observers' eyes above the empties
EMPTIES_COLOR = (0.1, 0.45, 1.0)  # the observers' glow: blue against the red-to-sand ramp


# ----------------------------------------------------------------------------- materials


def material(name, color, roughness=0.5, emission=0.0):
    mat = bpy.data.materials.new(name)  # with a node tree (Principled BSDF) since 5.0
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (*color, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    if emission:
        bsdf.inputs["Emission Color"].default_value = (*color, 1.0)
        bsdf.inputs["Emission Strength"].default_value = emission
    return mat


def give(obj, mat):
    obj.data.materials.clear()
    obj.data.materials.append(mat)


# ----------------------------------------------------------------------------- scene


def build_scene():
    """Sphere, cylinder and a displaced-grid terrain; returns the three objects."""
    bpy.ops.wm.read_factory_settings(use_empty=True)

    bpy.ops.mesh.primitive_grid_add(x_subdivisions=96, y_subdivisions=96, size=10.0)
    terrain = bpy.context.object
    terrain.name = "Terrain"
    displace = terrain.modifiers.new("Displace", "DISPLACE")
    displace.texture = bpy.data.textures.new("Hills", "CLOUDS")
    displace.texture.noise_scale = 1.8
    displace.strength = 1.1
    terrain.data.shade_smooth()
    give(terrain, material("Terrain", (0.22, 0.36, 0.16), roughness=0.9))

    bpy.ops.mesh.primitive_uv_sphere_add(
        segments=48, ring_count=24, radius=1.0, location=(-0.9, 1.1, 1.8)
    )
    sphere = bpy.context.object
    sphere.data.shade_smooth()
    give(sphere, material("Sphere", (0.16, 0.36, 0.80), roughness=0.35))

    bpy.ops.mesh.primitive_cylinder_add(
        vertices=48, radius=0.65, depth=2.2, location=(1.9, -0.2, 1.6), rotation=(0.0, 0.3, 0.0)
    )
    cylinder = bpy.context.object
    cylinder.data.set_sharp_from_angle(angle=radians(40.0))
    give(cylinder, material("Cylinder", (0.85, 0.45, 0.12), roughness=0.4))

    scene = bpy.context.scene
    scene.cursor.location = CURSOR
    scene.cursor.rotation_mode = "QUATERNION"
    scene.cursor.rotation_quaternion = (CURSOR_LOOKS_AT - CURSOR).to_track_quat("-Z", "Y")
    return sphere, cylinder, terrain


def select(*objects):
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj in objects)


# ----------------------------------------------------------------------------- queries


def fire_fan(sphere, cylinder, terrain):
    """The fan from the 3D cursor; returns the add-on's point mesh object of the hits."""
    select(sphere, cylinder, terrain)
    bpy.ops.geometry_queries.fire_ray(
        pattern="FAN", fan_count=FAN_RAYS, fan_angle=FAN_ANGLE, output="POINT_MESH"
    )
    return next(obj for obj in bpy.data.objects if obj.type == "MESH" and "targets" in obj)


def cast_sphere(sphere):
    """The sphere cast onto the sphere; returns (centre, contact) empties of the add-on."""
    select(sphere)
    bpy.ops.geometry_queries.sphere_cast(start=CAST_START, end=CAST_END, radius=CAST_RADIUS)
    markers = [obj for obj in bpy.data.objects if obj.type == "EMPTY" and "target" in obj]
    centre = next(obj for obj in markers if obj.empty_display_type == "SPHERE")
    contact = next(obj for obj in markers if obj is not centre)
    return centre, contact


def read_hits(point_mesh):
    """Arrays from the point mesh: points, normals, distances, target names."""
    mesh = point_mesh.data
    count = len(mesh.vertices)
    points = np.empty(count * 3, dtype=np.float32)
    normals = np.empty(count * 3, dtype=np.float32)
    distances = np.empty(count, dtype=np.float32)
    targets = np.empty(count, dtype=np.int32)
    mesh.attributes["position"].data.foreach_get("vector", points)
    mesh.attributes["hit_normal"].data.foreach_get("vector", normals)
    mesh.attributes["distance"].data.foreach_get("value", distances)
    mesh.attributes["target_index"].data.foreach_get("value", targets)
    names = list(point_mesh["targets"])
    world = np.array(point_mesh.matrix_world)
    points = points.reshape(count, 3) @ world[:3, :3].T + world[:3, 3]
    return points, normals.reshape(count, 3), distances, [names[i] for i in targets]


def print_table(points, normals, distances, names, centre, contact):
    print()
    print(f"{'#':>3}  {'target':<9} {'distance':>9}  {'hit point (x, y, z)':<26} normal")
    for row, (point, normal, distance, name) in enumerate(
        zip(points, normals, distances, names), start=1
    ):
        print(
            f"{row:>3}  {name:<9} {distance:9.4f}  "
            f"({point[0]:7.3f},{point[1]:7.3f},{point[2]:7.3f})  "
            f"({normal[0]:6.3f},{normal[1]:6.3f},{normal[2]:6.3f})"
        )
    per_target = {name: names.count(name) for name in sorted(set(names))}
    print(
        f"{len(names)} of {FAN_RAYS} rays hit: "
        + ", ".join(f"{name} {count}" for name, count in per_target.items())
    )
    print(
        f"Sphere cast (radius {CAST_RADIUS}): touches {contact['target']} after "
        f"{contact['distance']:.4f}, centre {tuple(round(v, 4) for v in centre['point'])}, "
        f"contact point {tuple(round(v, 4) for v in contact['point'])}"
    )
    print()


# ----------------------------------------------------------------------------- visible


def instance_spheres_on_points(obj, radius, mat):
    """Geometry Nodes on ``obj``: a small icosphere on every vertex, with ``mat``."""
    group = bpy.data.node_groups.new("Hit Markers", "GeometryNodeTree")
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes, links = group.nodes, group.links
    group_in = nodes.new("NodeGroupInput")
    group_out = nodes.new("NodeGroupOutput")
    ico = nodes.new("GeometryNodeMeshIcoSphere")
    ico.inputs["Radius"].default_value = radius
    ico.inputs["Subdivisions"].default_value = 2
    instance = nodes.new("GeometryNodeInstanceOnPoints")
    set_material = nodes.new("GeometryNodeSetMaterial")
    set_material.inputs["Material"].default_value = mat
    links.new(ico.outputs["Mesh"], set_material.inputs["Geometry"])
    links.new(group_in.outputs["Geometry"], instance.inputs["Points"])
    links.new(set_material.outputs["Geometry"], instance.inputs["Instance"])
    links.new(instance.outputs["Instances"], group_out.inputs["Geometry"])
    obj.modifiers.new("Hit Markers", "NODES").node_group = group


def tubes(name, segments, depth, mat):
    """One curve object: a straight poly spline per (start, end), beveled into a tube."""
    curve = bpy.data.curves.new(name, "CURVE")
    curve.dimensions = "3D"
    curve.bevel_depth = depth
    curve.bevel_resolution = 2
    for start, end in segments:
        spline = curve.splines.new("POLY")
        spline.points.add(1)
        spline.points[0].co = (*start, 1.0)
        spline.points[1].co = (*end, 1.0)
    obj = bpy.data.objects.new(name, curve)
    obj.data.materials.append(mat)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def ball(name, location, radius, mat):
    bpy.ops.mesh.primitive_uv_sphere_add(
        segments=32, ring_count=16, radius=radius, location=location
    )
    obj = bpy.context.object
    obj.name = name
    obj.data.shade_smooth()
    give(obj, mat)
    return obj


def make_visible(point_mesh, points, centre):
    """Render-visible stand-ins for the results: red balls on the hits, yellow ray tubes
    from the cursor to each hit, a white ball on the cursor, the cast sphere (cyan) at its
    first contact on a tube from its start."""
    hit_red = material("Hit", (1.0, 0.02, 0.02), emission=0.6)
    ray_yellow = material("Ray", (1.0, 0.8, 0.1), emission=0.8)
    cast_cyan = material("Cast", (0.2, 0.9, 1.0), roughness=0.3)
    cast_path = material("Cast Path", (0.35, 0.95, 1.0), emission=1.0)
    white = material("Cursor", (1.0, 1.0, 1.0), emission=3.0)

    instance_spheres_on_points(point_mesh, 0.09, hit_red)
    tubes("Rays", [(CURSOR, Vector(point)) for point in points], 0.008, ray_yellow)
    ball("3D Cursor", CURSOR, 0.1, white)

    cast_centre = Vector(centre["point"])
    tubes("Cast Path", [(CAST_START, cast_centre)], 0.03, cast_path)
    ball("Cast Sphere", cast_centre, CAST_RADIUS, cast_cyan)


def camera_and_light():
    scene = bpy.context.scene
    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    camera.location = (6.5, -13.0, 9.5)
    camera.rotation_mode = "QUATERNION"
    camera.rotation_quaternion = (Vector((0.4, 0.3, 1.3)) - camera.location).to_track_quat(
        "-Z", "Y"
    )
    camera.data.lens = 30.0
    scene.collection.objects.link(camera)
    scene.camera = camera

    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.data.energy = 3.5
    sun.data.angle = radians(8.0)
    sun.rotation_euler = (radians(40.0), radians(15.0), radians(-35.0))
    scene.collection.objects.link(sun)

    world = bpy.data.worlds.new("Sky")
    background = world.node_tree.nodes["Background"]
    background.inputs["Color"].default_value = (0.55, 0.65, 0.80, 1.0)
    background.inputs["Strength"].default_value = 0.8
    scene.world = world


def render(path):
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 8
    scene.cycles.max_bounces = 4
    import _cycles  # Cycles' compiled module: says whether OpenImageDenoise is built in

    scene.cycles.use_denoising = bool(_cycles.with_openimagedenoise)
    scene.cycles.denoising_quality = "FAST"  # 8 samples + fast denoising: ~3 s on 2 cores
    scene.cycles.denoising_prefilter = "FAST"
    scene.render.resolution_x = 640
    scene.render.resolution_y = 400
    scene.render.resolution_percentage = 100
    scene.view_settings.view_transform = "Standard"  # keep the marker colours saturated
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGB"
    scene.render.filepath = path
    bpy.ops.render.render(write_still=True)


# ----------------------------------------------------------------------------- visibility


def ground_height(terrain, x, y):
    """The evaluated terrain's height at the vertex nearest (x, y) (world space)."""
    evaluated = terrain.evaluated_get(bpy.context.evaluated_depsgraph_get())
    positions = np.empty(len(evaluated.data.vertices) * 3, dtype=np.float32)
    evaluated.data.vertices.foreach_get("co", positions)
    positions = positions.reshape(-1, 3) @ np.array(evaluated.matrix_world)[:3, :3].T
    nearest = np.argmin(np.hypot(positions[:, 0] - x, positions[:, 1] - y))
    return float(positions[nearest, 2] + evaluated.matrix_world.translation.z)


def visibility_material(attribute):
    """The terrain coloured by its colour attribute ``attribute`` (what a visibility
    operator writes), through an Attribute node into the Base Color."""
    mat = material("Visibility", (1.0, 1.0, 1.0), roughness=0.95)
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    node = nodes.new("ShaderNodeAttribute")
    node.attribute_name = attribute
    links.new(node.outputs["Color"], nodes["Principled BSDF"].inputs["Base Color"])
    return mat


def hilly_terrain(attribute, strength=1.6, noise_scale=2.2):
    """A new empty scene with a hilly terrain (Clouds displaced by ``strength``), coloured
    by its colour ``attribute``."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=199, y_subdivisions=199, size=12.0)
    terrain = bpy.context.object
    terrain.name = "Terrain"
    displace = terrain.modifiers.new("Displace", "DISPLACE")
    displace.texture = bpy.data.textures.new("Hills", "CLOUDS")
    displace.texture.noise_scale = noise_scale
    displace.strength = strength
    terrain.data.shade_smooth()
    give(terrain, visibility_material(attribute))
    return terrain


def build_visibility_scene():
    """A hilly terrain, a tower on it, the 3D cursor on the ground before the tower."""
    terrain = hilly_terrain("visibility")
    x, y = TOWER_SPOT
    base = ground_height(terrain, x, y)
    bpy.ops.mesh.primitive_cylinder_add(
        vertices=48, radius=0.35, depth=3.2, location=(x, y, base + 1.2)
    )
    tower = bpy.context.object
    tower.name = "Tower"
    tower.data.set_sharp_from_angle(angle=radians(40.0))
    give(tower, material("Tower", (0.18, 0.24, 0.36), roughness=0.5))

    x, y = OBSERVER_SPOT
    bpy.context.scene.cursor.location = (x, y, ground_height(terrain, x, y))
    return terrain, tower


def mark_observer(ground, height, name="Observer", color=(1.0, 0.75, 0.05), glow=8.0):
    """A ball of ``color`` glowing with strength ``glow`` at the observer's eye (``height``
    above ``ground``) on a thin pole down to the ground."""
    eye = ground + Vector((0.0, 0.0, height))
    ball_material = bpy.data.materials.get("Observer") or material("Observer", color, emission=glow)
    pole = bpy.data.materials.get("Pole") or material("Pole", (0.1, 0.1, 0.1))
    ball(f"{name} Eye", eye, 0.2, ball_material)
    tubes(f"{name} Pole", [(ground, eye)], 0.035, pole)


def visibility_camera_and_light():
    scene = bpy.context.scene
    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    camera.location = (-9.5, -11.0, 9.0)
    camera.rotation_mode = "QUATERNION"
    camera.rotation_quaternion = (Vector((0.6, 0.4, -0.6)) - camera.location).to_track_quat(
        "-Z", "Y"
    )
    camera.data.lens = 38.0
    scene.collection.objects.link(camera)
    scene.camera = camera

    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.data.energy = 1.6
    sun.data.angle = radians(20.0)
    sun.rotation_euler = (radians(35.0), radians(0.0), radians(-120.0))  # relief, soft
    scene.collection.objects.link(sun)

    world = bpy.data.worlds.new("Sky")
    background = world.node_tree.nodes["Background"]
    background.inputs["Color"].default_value = (0.62, 0.72, 0.88, 1.0)
    background.inputs["Strength"].default_value = 0.55
    scene.world = world


def save_and_render(name, docs_path=None):
    """demo/out/<name>.blend and the picture demo/out/<name>.png, copied to ``docs_path``."""
    os.makedirs(OUT_DIR, exist_ok=True)
    blend_path = os.path.join(OUT_DIR, f"{name}.blend")
    if os.path.exists(blend_path):
        os.remove(blend_path)  # saving over it would leave a .blend1 backup
    bpy.ops.wm.save_as_mainfile(filepath=blend_path, compress=True)
    print("Saved", os.path.relpath(blend_path, ROOT))
    png_path = os.path.join(OUT_DIR, f"{name}.png")
    render_started = time.perf_counter()
    render(png_path)
    print(
        f"Rendered {os.path.relpath(png_path, ROOT)} ({time.perf_counter() - render_started:.1f} s)"
    )
    if docs_path:
        os.makedirs(os.path.dirname(docs_path), exist_ok=True)
        shutil.copyfile(png_path, docs_path)
        print("Copied to", os.path.relpath(docs_path, ROOT))


def visibility_demo(copy_to_docs=False):
    """Step 5: the visibility scene, the operator, its picture."""
    terrain, tower = build_visibility_scene()
    select(terrain, tower)
    started = time.perf_counter()
    bpy.ops.geometry_queries.visibility(observer_height=OBSERVER_HEIGHT)
    print(
        f"{bpy.context.scene.geometry_queries.last_result} "
        f"(observer {OBSERVER_HEIGHT} m above the 3D cursor; "
        f"{time.perf_counter() - started:.2f} s)"
    )
    mark_observer(Vector(bpy.context.scene.cursor.location), OBSERVER_HEIGHT)
    visibility_camera_and_light()
    select()
    save_and_render("visibility", DOCS_VISIBILITY_PNG if copy_to_docs else None)


def cumulative_demo(copy_to_docs=False):
    """Step 6: empties on the ground as observers; Cumulative Visibility counts, for every
    vertex of the terrain, how many of them see it."""
    terrain = hilly_terrain("visible_count_color", *EMPTIES_HILLS)
    empties = []
    for number, (x, y) in enumerate(OBSERVER_SPOTS, start=1):
        empty = bpy.data.objects.new(f"Observer {number}", None)
        empty.location = (x, y, ground_height(terrain, x, y))
        bpy.context.scene.collection.objects.link(empty)
        empties.append(empty)
    select(terrain, *empties)
    started = time.perf_counter()
    bpy.ops.geometry_queries.cumulative_visibility(observer_height=EMPTIES_HEIGHT)
    print(
        f"{bpy.context.scene.geometry_queries.last_result} "
        f"(observers {EMPTIES_HEIGHT} m above the empties; {time.perf_counter() - started:.2f} s)"
    )
    for empty in empties:
        mark_observer(Vector(empty.location), EMPTIES_HEIGHT, empty.name, EMPTIES_COLOR, 1.5)
    visibility_camera_and_light()
    select()
    save_and_render("cumulative_visibility", DOCS_CUMULATIVE_PNG if copy_to_docs else None)


def main(copy_to_docs=False):
    started = time.perf_counter()
    register_addon()
    sphere, cylinder, terrain = build_scene()
    point_mesh = fire_fan(sphere, cylinder, terrain)
    centre, contact = cast_sphere(sphere)
    points, normals, distances, names = read_hits(point_mesh)
    print_table(points, normals, distances, names, centre, contact)

    make_visible(point_mesh, points, centre)
    camera_and_light()
    select()
    save_and_render("demo", DOCS_PNG if copy_to_docs else None)
    visibility_demo(copy_to_docs)
    cumulative_demo(copy_to_docs)
    print(f"Demo done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main(copy_to_docs="--docs" in sys.argv[1:])
