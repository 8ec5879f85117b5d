"""Instances as targets: objects of an instanced collection (an empty instancing it, the same
collection twice with different transforms, and nested instancing) and geometry-nodes
instances (Instance on Points of an object and of a mesh made by a node), at their instance
transforms. Hits are checked against exact references computed from the depsgraph's own
instance matrices (the ellipsoid in closed form, Moeller-Trumbore over the terrain's loop
triangles) and against Blender's scene.ray_cast, which sees instances too."""

import bpy
import numpy as np
import pytest
from blender_scenes import (
    add_displaced_grid,
    add_uv_sphere,
    created_markers,
    ray_ellipsoid,
    ray_triangles,
    select_only,
    snapshot,
    unit,
)


@pytest.fixture
def modules(addon):
    from geometry_queries.operators import mapping, nearest, patterns, shape_cache

    shape_cache.SHAPES.clear()
    yield mapping, nearest, patterns, shape_cache
    shape_cache.SHAPES.clear()


def move_to_collection(obj, collection):
    for owner in obj.users_collection:
        owner.objects.unlink(obj)
    collection.objects.link(obj)


def instancing_empty(name, collection, location=(0, 0, 0), rotation=(0, 0, 0), scale=(1, 1, 1)):
    empty = bpy.data.objects.new(name, None)
    empty.instance_type = "COLLECTION"
    empty.instance_collection = collection
    empty.location, empty.rotation_euler, empty.scale = location, rotation, scale
    bpy.context.scene.collection.objects.link(empty)
    bpy.context.view_layer.update()
    return empty


def rocks_collection():
    """A collection "Rocks" (in no scene) holding a UV sphere of radius 1 at its origin and a
    9x9 displaced grid terrain beside it."""
    rocks = bpy.data.collections.new("Rocks")
    move_to_collection(add_uv_sphere(name="Sphere", radius=1.0), rocks)
    grid = add_displaced_grid(name="Terrain", vertices_per_side=9, location=(3.0, 0.0, -1.0))
    move_to_collection(grid, rocks)
    return rocks


def collection_scene():
    """Rocks instanced twice side by side (the second rotated and scaled non-uniformly) and
    once more through a nested collection; returns the three instancing empties."""
    rocks = rocks_collection()
    first = instancing_empty("Empty", rocks, location=(-6.0, 0.0, 0.0))
    second = instancing_empty(
        "Empty.001", rocks, location=(0.0, 6.0, 0.5), rotation=(0.2, -0.1, 0.7), scale=(1.5, 1, 0.8)
    )
    outer = bpy.data.collections.new("Outer")
    inner = bpy.data.objects.new("Inner Empty", None)
    inner.instance_type, inner.instance_collection = "COLLECTION", rocks
    inner.location = (0.0, 0.0, 1.0)
    outer.objects.link(inner)
    nested = instancing_empty("Nested", outer, location=(2.0, -7.0, 0.0), scale=(0.5, 0.5, 0.5))
    bpy.context.view_layer.update()
    return first, second, nested


def instance_on_points(name="Points", instanced_object=None, node_sphere_radius=0.5, size=4.0):
    """A plane whose Geometry Nodes modifier puts, on each of its 4 vertices, an instance of
    ``instanced_object`` (Object Info, As Instance) and of a UV sphere made by a Mesh UV
    Sphere node (``node_sphere_radius``); its own mesh is replaced by the instances."""
    bpy.ops.mesh.primitive_plane_add(size=size)
    plane = bpy.context.object
    plane.name = name
    tree = bpy.data.node_groups.new(f"{name} nodes", "GeometryNodeTree")
    tree.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    group_input = tree.nodes.new("NodeGroupInput")
    group_output = tree.nodes.new("NodeGroupOutput")
    join = tree.nodes.new("GeometryNodeJoinGeometry")
    sources = []
    if instanced_object is not None:
        info = tree.nodes.new("GeometryNodeObjectInfo")
        info.inputs["Object"].default_value = instanced_object
        info.inputs["As Instance"].default_value = True
        sources.append(info.outputs["Geometry"])
    if node_sphere_radius is not None:
        sphere = tree.nodes.new("GeometryNodeMeshUVSphere")
        sphere.inputs["Radius"].default_value = node_sphere_radius
        sources.append(sphere.outputs["Mesh"])
    for source in sources:
        on_points = tree.nodes.new("GeometryNodeInstanceOnPoints")
        tree.links.new(group_input.outputs[0], on_points.inputs["Points"])
        tree.links.new(source, on_points.inputs["Instance"])
        tree.links.new(on_points.outputs[0], join.inputs[0])
    tree.links.new(join.outputs[0], group_output.inputs[0])
    plane.modifiers.new("Instances", "NODES").node_group = tree
    bpy.context.view_layer.update()
    return plane


# ---------------------------------------------------------------------------- references


def depsgraph_instances(parents):
    """(instance's name as the add-on should start it, mesh positions (V, 3), loop
    triangles (T, 3, 3), matrix_world) of every mesh instance whose top-level instancer is
    one of ``parents``, read without the add-on. The name is the instanced object's, or
    "Geometry" for a mesh made by geometry nodes (it has no object of its own)."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    names = {parent.name for parent in parents}
    found = []
    for item in depsgraph.object_instances:
        if item.is_instance and item.parent.original.name in names and item.object.type == "MESH":
            mesh = item.object.data
            original = item.object.original
            own_mesh = original.evaluated_get(depsgraph).data == mesh
            positions = np.array([v.co[:] for v in mesh.vertices], dtype=np.float64)
            corners = np.array([t.vertices[:] for t in mesh.loop_triangles])
            found.append(
                (
                    original.name if own_mesh else "Geometry",
                    positions,
                    positions[corners],
                    np.array(item.matrix_world, dtype=np.float64),
                )
            )
    return found


def exact_first_hit(instances, origin, direction):
    """(distance, normal, index into ``instances``) of the first hit over every instance:
    a sphere (vertices equidistant from the local origin) as an exact ellipsoid, anything
    else as its loop triangles (a Surface terrain); None for a miss."""
    best = None
    for index, (_, positions, triangles, matrix) in enumerate(instances):
        radii = np.linalg.norm(positions, axis=1)
        if np.ptp(radii) < 1e-5 * radii.max():  # a sphere about its own origin
            hit = ray_ellipsoid(matrix, float(np.round(radii.mean(), 5)), origin, direction)
            if hit is not None:
                hit = (hit[0], hit[2])
        else:
            world = triangles @ matrix[:3, :3].T + matrix[:3, 3]
            found = ray_triangles(world, origin, direction)
            # A Surface terrain's normal faces the ray.
            hit = None if found is None else (found[0], -np.sign(found[2] @ direction) * found[2])
        if hit is not None and (best is None or hit[0] < best[0]):
            best = (hit[0], hit[1], index)
    return best


def grid_rays(patterns, centre, width, count=24, upward=False):
    """A GRID of tilted parallel rays over ``centre`` from 8 above it (or below it)."""
    # Off the terrains' lattice lines, where two triangles' normals meet.
    side = -1.0 if upward else 1.0
    origin = np.array(centre, dtype=np.float64) + (0.0123, -0.0071, 8.0 * side)
    direction = np.array((0.05, -0.03, -side))
    return patterns.ray_pattern(
        "GRID", origin, direction, grid_rows=count, grid_columns=count, grid_width=width
    )


def assert_hits_are_exact_and_agree_with_blender(modules, parents, centre, width, upward=False):
    """Every ray: same hit/miss and the same instance as the exact reference, distance and
    normal to 1e-9; and as scene.ray_cast (the same object and instance matrix, distance
    within the tessellation of a 32x16 sphere), except for rays grazing a sphere."""
    mapping, nearest, patterns, _ = modules
    depsgraph = bpy.context.evaluated_depsgraph_get()
    targets = mapping.recognize_all(list(parents), depsgraph)
    origins, directions = grid_rays(patterns, centre, width, upward=upward)
    hits = nearest.nearest_ray_hits(targets, origins, directions, 100.0)
    instances = depsgraph_instances(parents)
    assert len(targets) == len(instances)
    scene = bpy.context.scene
    hit_count = blender_agreements = 0
    for ray, (origin, direction) in enumerate(zip(origins, directions)):
        expected = exact_first_hit(instances, origin, direction)
        assert hits.hit[ray] == (expected is not None), ray
        if expected is None:
            continue
        hit_count += 1
        distance, normal, index = expected
        assert hits.distance[ray] == pytest.approx(distance, rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(hits.normal[ray], normal, atol=1e-8)
        target = targets[hits.target[ray]]
        name, _, _, matrix = instances[index]
        assert target.name.startswith(f"{name} (instance")
        np.testing.assert_array_equal(target.shape.matrix, matrix)

        facing = abs(normal @ unit(direction))
        grazing = facing < 0.3
        found, location, _, _, obj, blender_matrix = scene.ray_cast(
            depsgraph, origin.tolist(), unit(direction).tolist(), distance=100.0
        )
        if grazing:
            continue
        assert found, ray
        assert obj.original.name in (name, target.name.split(" via ")[-1].rstrip(")"))
        np.testing.assert_allclose(np.array(blender_matrix), matrix, atol=1e-6)
        blender_distance = np.linalg.norm(np.array(location) - origin)
        # A 32x16 UV sphere's faces lie inside the exact one by up to
        # 1 - cos(pi/32) cos(pi/16) < 0.025 of its radius, along the normal.
        scale = np.linalg.norm(matrix[:3, :3], axis=0).max()
        if target.kind == "TERRAIN":  # the same triangles, in float32
            assert blender_distance == pytest.approx(distance, rel=1e-5, abs=1e-5)
        else:
            assert abs(blender_distance - distance) <= 0.025 * scale / facing + 1e-4
        blender_agreements += 1
    assert hit_count >= 30 and blender_agreements >= 25
    return {targets[k].name for k in hits.target[hits.hit]}


def test_collection_instances_are_targets_where_blender_draws_them(empty_scene, modules):
    first, second, nested = collection_scene()
    for parent, centre, width, upward in (
        (first, (-4.5, 0.0, 0.0), 8.0, False),
        (second, (1.0, 7.0, 0.0), 9.0, False),
        (second, (1.0, 7.0, 0.0), 9.0, True),  # the Surface terrain from below
        (nested, (2.75, -7.0, 0.0), 4.0, False),
    ):
        hit = assert_hits_are_exact_and_agree_with_blender(modules, [parent], centre, width, upward)
        via = f"{parent.instance_collection.name} via {parent.name})"
        assert hit == {f"Sphere (instance of {via}", f"Terrain (instance of {via}"}


def test_the_same_collection_twice_gives_targets_at_each_transform(empty_scene, modules):
    mapping, _, _, shape_cache = modules
    first, second, nested = collection_scene()
    targets = mapping.recognize_all([first, second, nested], bpy.context.evaluated_depsgraph_get())
    assert [(t.name, t.description) for t in targets] == [
        ("Sphere (instance of Rocks via Empty)", "Sphere r=1.000"),
        ("Terrain (instance of Rocks via Empty)", "Terrain 9x9"),
        (
            "Sphere (instance of Rocks via Empty.001)",
            "Ellipsoid (sphere r=1.000, non-uniform scale)",
        ),
        ("Terrain (instance of Rocks via Empty.001)", "Terrain 9x9"),
        ("Sphere (instance of Outer via Nested)", "Sphere r=0.500"),
        ("Terrain (instance of Outer via Nested)", "Terrain 9x9"),
    ]
    # Each instanced mesh is recognised once, and cached once under its object's name.
    assert sorted(shape_cache.SHAPES._entries) == ["Sphere", "Terrain"]
    spheres = [t.shape for t in targets if t.kind == "SPHERE"]
    assert spheres[0].shape is spheres[1].shape is spheres[2].shape
    np.testing.assert_allclose(spheres[0].matrix[:3, 3], (-6.0, 0.0, 0.0), atol=1e-6)
    np.testing.assert_allclose(spheres[2].matrix[:3, 3], (2.0, -7.0, 0.5), atol=1e-6)


def test_geometry_nodes_instances_are_targets(empty_scene, modules):
    mapping, _, _, shape_cache = modules
    ball = add_uv_sphere(name="Ball", radius=0.3, location=(0.0, 0.0, 30.0))
    points = instance_on_points(instanced_object=ball, node_sphere_radius=0.5)
    points.location = (1.0, 2.0, 0.0)
    points.rotation_euler = (0.0, 0.0, 0.4)
    bpy.context.view_layer.update()
    targets = mapping.recognize_all([points], bpy.context.evaluated_depsgraph_get())
    names = sorted(t.name for t in targets)
    assert names == [f"Ball (instance {k}/4 via Points)" for k in range(1, 5)] + [
        f"Geometry (instance {k}/4 via Points)" for k in range(1, 5)
    ]
    assert {t.description for t in targets} == {"Sphere r=0.300", "Sphere r=0.500"}
    # The radius-0.5 spheres are bigger and sit where the 0.3 ones are: rays hit them.
    hit = assert_hits_are_exact_and_agree_with_blender(modules, [points], (1.4, 1.8, 0.0), 7.0)
    assert hit == {f"Geometry (instance {k}/4 via Points)" for k in range(1, 5)}
    # The node's mesh has no object: cached under the generating object's name and rank.
    assert sorted(shape_cache.SHAPES._entries) == ["Ball", "Points geometry 0"]


def test_two_different_node_meshes_of_one_object_are_cached_apart(empty_scene, modules):
    """Two instancers each making two different meshes: four entries that stay found (a
    cache keyed by a shared name would evict one with the other on every call)."""
    mapping, _, _, shape_cache = modules
    objects = []
    for name, offset in (("A", 0.0), ("B", 10.0)):
        plane = instance_on_points(name=name, node_sphere_radius=0.5)
        tree = plane.modifiers["Instances"].node_group
        ico = tree.nodes.new("GeometryNodeMeshIcoSphere")
        ico.inputs["Radius"].default_value = 0.25 if name == "A" else 0.75
        ico.inputs["Subdivisions"].default_value = 2
        on_points = tree.nodes.new("GeometryNodeInstanceOnPoints")
        tree.links.new(tree.nodes["Group Input"].outputs[0], on_points.inputs["Points"])
        tree.links.new(ico.outputs["Mesh"], on_points.inputs["Instance"])
        tree.links.new(on_points.outputs[0], tree.nodes["Join Geometry"].inputs[0])
        plane.location.x = offset
        objects.append(plane)
    bpy.context.view_layer.update()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    first = mapping.recognize_all(objects, depsgraph)
    assert len(first) == 16
    assert sorted(shape_cache.SHAPES._entries) == [
        "A geometry 0",
        "A geometry 1",
        "B geometry 0",
        "B geometry 1",
    ]
    assert shape_cache.SHAPES.hits == 0
    second = mapping.recognize_all(objects, depsgraph)
    assert shape_cache.SHAPES.hits == 4 and shape_cache.SHAPES.misses == 4
    assert [t.description for t in second] == [t.description for t in first]
    assert {t.description for t in first} == {
        "Sphere r=0.500",
        "Sphere r=0.250",
        "Sphere r=0.750",
    }


def test_fire_ray_and_sphere_cast_name_the_instance_they_hit(empty_scene, modules):
    first, second, _ = collection_scene()
    select_only(first, second)
    bpy.ops.geometry_queries.fire_ray(origin=(-6.0, 0.0, 5.0), direction=(0, 0, -1))
    (marker,) = created_markers()
    assert marker["target"] == "Sphere (instance of Rocks via Empty)"
    assert marker.name == "Sphere (instance of Rocks via Empty) hit"
    assert marker["distance"] == pytest.approx(4.0, abs=1e-9)
    assert bpy.context.scene.geometry_queries.last_result.startswith(
        "1 of 1 ray hit; nearest: Sphere (instance of Rocks via Empty) at 4.000"
    )
    bpy.ops.geometry_queries.clear_hits()

    balls = bpy.data.collections.new("Balls")
    balls.objects.link(bpy.data.objects["Sphere"])
    ball_empty = instancing_empty("Ball Empty", balls, location=(0.0, 0.0, -3.0), scale=(2, 2, 2))
    select_only(ball_empty)
    bpy.ops.geometry_queries.sphere_cast(start=(0.0, 0.0, 5.0), end=(0.0, 0.0, -5.0), radius=0.5)
    centre = next(m for m in created_markers() if m.empty_display_type == "SPHERE")
    assert centre["target"] == "Sphere (instance of Balls via Ball Empty)"
    assert centre["distance"] == pytest.approx(8.0 - 2.0 - 0.5, abs=1e-9)


def test_an_empty_that_instances_nothing_is_refused_clearly(empty_scene, modules):
    sphere = add_uv_sphere()
    plain = bpy.data.objects.new("Plain Empty", None)
    bpy.context.scene.collection.objects.link(plain)
    bpy.context.view_layer.update()
    lights = bpy.data.collections.new("Lights")
    lights.objects.link(bpy.data.objects.new("Lamp", bpy.data.lights.new("Lamp", "POINT")))
    lamp_instancer = instancing_empty("Lamp Empty", lights)
    for empty, message in (
        (plain, "Plain Empty is an empty object that instances nothing"),
        (lamp_instancer, "Lamp Empty instances the collection Lights, which holds no meshes"),
    ):
        select_only(sphere, empty)
        before = snapshot()
        with pytest.raises(RuntimeError, match=message):
            bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 5), direction=(0, 0, -1))
        assert snapshot() == before


def test_an_unsupported_instanced_mesh_is_named_in_the_error(empty_scene, modules):
    rocks = rocks_collection()
    bpy.ops.mesh.primitive_cube_add(location=(0.0, 3.0, 0.0))
    move_to_collection(bpy.context.object, rocks)
    empty = instancing_empty("Empty", rocks)
    select_only(empty)
    before = snapshot()
    with pytest.raises(RuntimeError, match=r"Cube \(instance of Rocks via Empty\) is not a"):
        bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 5), direction=(0, 0, -1))
    assert snapshot() == before


def test_panel_lists_instancers_with_their_instances(empty_scene, modules):
    from test_ui import draw_panel

    first, _, _ = collection_scene()
    ball = add_uv_sphere(name="Ball", radius=0.3, location=(0.0, 0.0, 30.0))
    points = instance_on_points(instanced_object=ball, node_sphere_radius=0.5)
    plain = bpy.data.objects.new("Plain Empty", None)
    bpy.context.scene.collection.objects.link(plain)
    bpy.context.view_layer.update()
    select_only(first, points, plain)
    labels = draw_panel(bpy.context)["labels"]
    assert ("Empty: 2 instances: Sphere r=1.000, Terrain 9x9", "CHECKMARK") in labels
    assert (
        "Points: 8 instances: 4 x Sphere r=0.500, 4 x Sphere r=0.300",
        "CHECKMARK",
    ) in labels
    (plain_label,) = [label for label in labels if label[0].startswith("Plain Empty: ")]
    assert plain_label[1] == "ERROR" and "instances nothing" in plain_label[0]


def test_a_linked_object_and_a_local_one_of_the_same_name_are_cached_apart(
    empty_scene, modules, tmp_path
):
    """ "Sphere" from a library and a local "Sphere", each instanced: the cache keys them by
    their full names, so both stay cached and neither is mistaken for the other."""
    mapping, _, _, shape_cache = modules
    library_sphere = add_uv_sphere(name="Sphere", radius=2.0)
    library = str(tmp_path / "library.blend")
    bpy.data.libraries.write(library, {library_sphere})
    bpy.data.objects.remove(library_sphere)
    local_sphere = add_uv_sphere(name="Sphere", radius=1.0)
    with bpy.data.libraries.load(library, link=True) as (source, target):
        target.objects = ["Sphere"]
    (linked_sphere,) = target.objects
    assert linked_sphere.name == local_sphere.name == "Sphere"
    assert linked_sphere.name_full != local_sphere.name_full
    local, linked = bpy.data.collections.new("Local"), bpy.data.collections.new("Linked")
    move_to_collection(local_sphere, local)
    linked.objects.link(linked_sphere)
    empties = [
        instancing_empty("Local Empty", local, location=(-5.0, 0.0, 0.0)),
        instancing_empty("Linked Empty", linked, location=(5.0, 0.0, 0.0)),
    ]
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for _ in range(2):
        targets = mapping.recognize_all(empties, depsgraph)
        assert [(t.name, t.description) for t in targets] == [
            ("Sphere (instance of Local via Local Empty)", "Sphere r=1.000"),
            ("Sphere (instance of Linked via Linked Empty)", "Sphere r=2.000"),
        ]
    assert sorted(shape_cache.SHAPES._entries) == sorted(
        [local_sphere.name_full, linked_sphere.name_full]
    )
    assert shape_cache.SHAPES.hits == 2 and shape_cache.SHAPES.misses == 2


def test_instanced_terrains_follow_the_terrain_model(empty_scene, modules):
    """Below an instanced terrain, pointing down: Solid has the origin inside (a hit at
    distance 0), Surface sees nothing below the surface."""
    first, _, _ = collection_scene()
    select_only(first)
    below_terrain = ((-3.0, 0.1, -3.0), (0.0, 0.0, -1.0))  # the terrain sits at (-3, 0, -1)
    bpy.ops.geometry_queries.fire_ray(
        origin=below_terrain[0], direction=below_terrain[1], terrain_model="SOLID"
    )
    (marker,) = created_markers()
    assert marker["target"] == "Terrain (instance of Rocks via Empty)"
    assert marker["distance"] == 0.0
    bpy.ops.geometry_queries.clear_hits()
    bpy.ops.geometry_queries.fire_ray(
        origin=below_terrain[0], direction=below_terrain[1], terrain_model="SURFACE"
    )
    assert created_markers() == []
