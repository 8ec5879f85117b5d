"""The Visibility operator (geometry_queries.visibility) against Blender's own line of sight:
for every terrain vertex, BVHTree.ray_cast from the observer towards it, over the evaluated
meshes' own triangles, as far as the vertex. A hit closer than the vertex by more than
``TOUCH`` hides it; a hit at the vertex (the terrain itself, within ``TOUCH``) does not.

The operator treats spheres and cylinders as exact shapes, the BVH their tessellation, which
lies inside the exact shape. So the reference is a sandwich: the mesh as it is (inscribed: a
line it blocks is blocked by the shape too) and the mesh scaled about its centre until it
encloses the shape (a line it lets through passes the shape too). Lines on which the two
disagree graze the shape within its tessellation error and are left out (with grazing
lines at the terrain, under 10 %).
Terrains are exact in both: their triangles as drawn (SURFACE) or, for SOLID, those
triangles closed by side walls and a deep floor (the ground below them in local axes)."""

import math

import bpy
import numpy as np
import pytest
from blender_scenes import (
    add_cylinder,
    add_displaced_grid,
    add_uv_sphere,
    select_only,
    snapshot,
    world_matrix,
)
from mathutils import Vector
from mathutils.bvhtree import BVHTree

# A hit within TOUCH of the segment's length before the target is the target itself (the
# BVH's float32 arithmetic lands up to ~4e-6 short of a vertex it aims at); one more than
# BLOCKS before it hides it; in between, the reference does not decide.
TOUCH, BLOCKS = 1e-5, 1e-4
SPHERE_SEGMENTS, SPHERE_RINGS, CYLINDER_VERTICES = 64, 32, 64

TRANSFORMS = {
    "plain": dict(),
    "rotated and scaled": dict(rotation=(0.12, -0.1, 0.7), scale=(1.3, 0.8, 1.5)),
}


def visible_attribute(obj):
    values = np.empty(len(obj.data.vertices), dtype=bool)
    obj.data.attributes["visible"].data.foreach_get("value", values)
    return values


def color_attribute(obj):
    values = np.empty(len(obj.data.vertices) * 4, dtype=np.float32)
    obj.data.attributes["visibility"].data.foreach_get("color", values)
    return values.reshape(-1, 4)


# ---------------------------------------------------------------------------- the reference


def world_triangles(obj, scale_about_centre=1.0):
    """(world vertices, triangles) of the evaluated mesh, optionally scaled about the
    mesh's bounding-box centre in local space."""
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = evaluated.data
    local = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", local)
    local = local.reshape(-1, 3).astype(np.float64)
    centre = 0.5 * (local.min(axis=0) + local.max(axis=0))
    local = centre + scale_about_centre * (local - centre)
    triangles = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", triangles)
    return local, triangles.reshape(-1, 3), world_matrix(evaluated)


def closed_ground(local, triangles):
    """The terrain's triangles closed into a solid: a wall under every boundary edge down
    to a floor far below (local -Z), and that floor."""
    edges = np.sort(triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    unique, uses = np.unique(edges, axis=0, return_counts=True)
    boundary = unique[uses == 1]
    floor_z = local[:, 2].min() - 100.0 * np.ptp(local[:, :2], axis=0).max()
    count = len(local)
    below = local.copy()
    below[:, 2] = floor_z
    walls = [[a, b, count + b] for a, b in boundary] + [
        [a, count + b, count + a] for a, b in boundary
    ]
    # The floor: two triangles under the footprint's four corner vertices.
    x_plus_y, x_minus_y = local[:, 0] + local[:, 1], local[:, 0] - local[:, 1]
    corners = count + np.array(
        [np.argmin(x_plus_y), np.argmax(x_minus_y), np.argmax(x_plus_y), np.argmin(x_minus_y)]
    )
    floor = corners[[[0, 1, 2], [0, 2, 3]]]
    return np.vstack([local, below]), np.vstack([triangles, walls, floor])


def tree(local, triangles, matrix):
    world = local @ matrix[:3, :3].T + matrix[:3, 3]
    return BVHTree.FromPolygons(world.tolist(), triangles.tolist(), all_triangles=True)


def first_hit_gap(trees, observer, target, beyond=0.0):
    """How far before ``target`` (relative to the segment's length, negative past it) the
    first hit of ``trees`` on the line from ``observer`` through it lies, looking up to
    ``beyond`` (relative) past the target; -inf when there is none."""
    direction = Vector(target - observer)
    length = direction.length
    gap = -np.inf
    for bvh in trees:
        location, _, _, distance = bvh.ray_cast(Vector(observer), direction, length * (1 + beyond))
        if location is not None:
            gap = max(gap, (length - distance) / length)
    return gap


def reference_visibility(observer, targets, terrains, solids, terrain_model, on_surface):
    """(visible, decided): per target, Blender's line of sight and whether it is decided:
    by the sandwich (see the module docstring), by a hit clearly before the target (more
    than ``BLOCKS`` of the length) or at it (within ``TOUCH``). A target ``on_surface`` (a
    terrain vertex itself) counts as seen only where the line meets the terrain there: a
    line that grazes the terrain at its vertex and misses its triangles in float32 is left
    undecided."""
    exact, inner, outer = [], [], []
    for obj in terrains:
        local, triangles, matrix = world_triangles(obj)
        if terrain_model == "SOLID":
            local, triangles = closed_ground(local, triangles)
        exact.append(tree(local, triangles, matrix))
    for obj, enclosing_scale in solids:
        inner.append(tree(*world_triangles(obj)))
        outer.append(tree(*world_triangles(obj, enclosing_scale)))
    visible = np.empty(len(targets), dtype=bool)
    decided = np.empty(len(targets), dtype=bool)
    for index, target in enumerate(targets):
        gap = max(
            first_hit_gap(exact, observer, target, beyond=BLOCKS),
            first_hit_gap(inner, observer, target),
        )
        if gap > BLOCKS:
            visible[index], decided[index] = False, True
            continue
        visible[index] = True
        reaches = abs(gap) <= TOUCH if on_surface else gap <= TOUCH
        decided[index] = reaches and first_hit_gap(outer, observer, target) <= TOUCH
    return visible, decided


def terrain_targets(obj, target_height):
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    local = np.empty(len(evaluated.data.vertices) * 3, dtype=np.float32)
    evaluated.data.vertices.foreach_get("co", local)
    matrix = world_matrix(evaluated)
    world = local.reshape(-1, 3).astype(np.float64) @ matrix[:3, :3].T + matrix[:3, 3]
    world[:, 2] += target_height
    return world


# ---------------------------------------------------------------------------- scenes


def sphere_enclosing_scale():
    """A UV sphere's faces lie at least r cos(pi/segments) cos(pi/rings) from its centre."""
    return 1.0 / (math.cos(math.pi / SPHERE_SEGMENTS) * math.cos(math.pi / SPHERE_RINGS)) + 1e-6


def cylinder_enclosing_scale():
    return 1.0 / math.cos(math.pi / CYLINDER_VERTICES) + 1e-6


def hills_with_a_ball_and_a_tower(**transform):
    terrain = add_displaced_grid(vertices_per_side=21, size=4.0, strength=0.7, **transform)
    ball = add_uv_sphere(
        radius=0.45, location=(0.3, 0.2, 1.1), segments=SPHERE_SEGMENTS, rings=SPHERE_RINGS
    )
    tower = add_cylinder(
        radius=0.25, depth=1.6, location=(-0.7, 0.6, 0.6), vertices=CYLINDER_VERTICES
    )
    select_only(terrain, ball, tower)
    return terrain, [(ball, sphere_enclosing_scale()), (tower, cylinder_enclosing_scale())]


@pytest.mark.parametrize("terrain_model", ["SURFACE", "SOLID"])
@pytest.mark.parametrize("transform", TRANSFORMS.values(), ids=TRANSFORMS.keys())
@pytest.mark.parametrize(
    "observer, target_height",
    [((1.7, -1.6, 0.4), 0.0), ((-1.9, 1.5, 0.5), 0.15)],
    ids=["ground", "raised targets"],
)
def test_visible_matches_blender_line_of_sight(
    empty_scene, terrain_model, transform, observer, target_height
):
    terrain, solids = hills_with_a_ball_and_a_tower(**transform)
    observer_height = 0.9
    bpy.ops.geometry_queries.visibility(
        origin=observer,
        observer_height=observer_height,
        target_height=target_height,
        terrain_model=terrain_model,
    )
    visible = visible_attribute(terrain)
    eye = np.array(observer, dtype=np.float32).astype(np.float64) + [0, 0, observer_height]
    targets = terrain_targets(terrain, np.float32(target_height))
    expected, decided = reference_visibility(
        eye, targets, [terrain], solids, terrain_model, on_surface=target_height == 0.0
    )
    assert decided.mean() > 0.9
    mismatches = np.flatnonzero(decided & (visible != expected))
    assert not len(mismatches), (mismatches, targets[mismatches])
    # Both answers occur, and the ball and the tower cast shadows of their own.
    assert 0.1 < visible.mean() < 0.95
    terrain_alone, _ = reference_visibility(eye, targets, [terrain], [], terrain_model, False)
    assert (terrain_alone & ~visible).sum() > 5


@pytest.mark.parametrize("transform", TRANSFORMS.values(), ids=TRANSFORMS.keys())
def test_from_below_the_terrain_the_models_differ(empty_scene, transform):
    """An observer under the terrain: inside the SOLID ground, it sees nothing; under the
    SURFACE, it sees the underside where Blender's line of sight reaches it."""
    terrain, _ = hills_with_a_ball_and_a_tower(**transform)
    select_only(terrain)
    observer = (0.2, -0.3, -1.5)
    bpy.ops.geometry_queries.visibility(origin=observer, observer_height=0.0)
    visible = visible_attribute(terrain)
    targets = terrain_targets(terrain, 0.0)
    eye = np.array(observer, dtype=np.float32).astype(np.float64)
    expected, decided = reference_visibility(eye, targets, [terrain], [], "SURFACE", True)
    assert decided.mean() > 0.9 and 0.2 < visible.mean() < 1.0
    assert (visible == expected)[decided].all()
    bpy.ops.geometry_queries.visibility(origin=observer, observer_height=0.0, terrain_model="SOLID")
    assert not visible_attribute(terrain).any()


def test_attributes_colours_and_report(empty_scene):
    terrain, _ = hills_with_a_ball_and_a_tower()
    bpy.ops.geometry_queries.visibility(origin=(1.7, -1.6, 0.4), observer_height=0.9)
    mesh = terrain.data
    flags, color = mesh.attributes["visible"], mesh.attributes["visibility"]
    assert (flags.data_type, flags.domain) == ("BOOLEAN", "POINT")
    assert (color.data_type, color.domain) == ("FLOAT_COLOR", "POINT")
    assert mesh.color_attributes.active_color_name == "visibility"
    assert mesh.color_attributes[mesh.color_attributes.render_color_index].name == "visibility"
    visible, colors = visible_attribute(terrain), color_attribute(terrain)
    light = colors[:, :3].sum(axis=1) > 1.5
    assert (light == visible).all()
    share = 100.0 * visible.mean()
    message = f"Visible: {share:.1f} % of 441 vertices on Terrain"
    assert bpy.context.scene.geometry_queries.last_result == message
    # The evaluated terrain (after its Displace) carries them too, for the viewport.
    evaluated = terrain.evaluated_get(bpy.context.evaluated_depsgraph_get())
    assert "visibility" in evaluated.data.color_attributes


def test_the_cursor_is_the_default_origin_and_attributes_are_overwritten(empty_scene):
    terrain, _ = hills_with_a_ball_and_a_tower()
    empty_scene.cursor.location = (1.7, -1.6, 0.4)
    bpy.ops.geometry_queries.visibility(observer_height=0.9)
    from_cursor = visible_attribute(terrain)
    bpy.ops.geometry_queries.visibility(origin=(1.7, -1.6, 0.4), observer_height=0.9)
    assert (visible_attribute(terrain) == from_cursor).all()
    bpy.ops.geometry_queries.visibility(origin=(-1.9, 1.5, 0.4), observer_height=0.9)
    assert (visible_attribute(terrain) != from_cursor).any()
    assert [a.name for a in terrain.data.attributes].count("visible") == 1


def test_an_attribute_of_another_type_is_replaced(empty_scene):
    terrain, _ = hills_with_a_ball_and_a_tower()
    terrain.data.attributes.new("visible", "FLOAT", "FACE")
    bpy.ops.geometry_queries.visibility(origin=(1.7, -1.6, 0.4), observer_height=0.9)
    flags = terrain.data.attributes["visible"]
    assert (flags.data_type, flags.domain) == ("BOOLEAN", "POINT")


def test_an_observer_inside_a_solid_sees_nothing(empty_scene):
    terrain, _ = hills_with_a_ball_and_a_tower()
    bpy.ops.geometry_queries.visibility(origin=(0.3, 0.2, 1.1), observer_height=0.0)
    assert not visible_attribute(terrain).any()
    assert bpy.context.scene.geometry_queries.last_result.startswith("Visible: 0.0 % of 441")


def test_two_terrains_each_get_their_own_and_hide_each_other(empty_scene):
    near = add_displaced_grid("Near", vertices_per_side=9, size=2.0, strength=0.2)
    far = add_displaced_grid(
        "Far", vertices_per_side=9, size=2.0, strength=0.2, location=(3.0, 0.0, 0.0)
    )
    wall = add_displaced_grid(
        "Wall", vertices_per_side=5, size=2.0, strength=0.0, location=(1.5, 0.0, 0.5),
        rotation=(0.0, math.pi / 2, 0.0),
    )  # fmt: skip
    select_only(near, far, wall)
    bpy.ops.geometry_queries.visibility(origin=(-1.5, 0.0, 0.0), observer_height=0.6)
    result = bpy.context.scene.geometry_queries.last_result
    assert "of 81 vertices on Near" in result and "of 81 vertices on Far" in result
    assert visible_attribute(near).mean() > 0.9
    assert visible_attribute(far).mean() < 0.5  # behind the wall


# ---------------------------------------------------------------------------- errors, undo


def assert_fails_and_changes_nothing(call, message, terrain=None):
    before = snapshot()
    attributes = sorted(a.name for a in terrain.data.attributes) if terrain else None
    with pytest.raises(RuntimeError, match=message):
        call()
    assert snapshot() == before
    if terrain is not None:
        assert sorted(a.name for a in terrain.data.attributes) == attributes


def test_a_modifier_changing_the_vertex_count_is_refused(empty_scene):
    terrain, _ = hills_with_a_ball_and_a_tower()
    terrain.modifiers.new("Subdivision", "SUBSURF").subdivision_type = "SIMPLE"
    assert_fails_and_changes_nothing(
        lambda: bpy.ops.geometry_queries.visibility(origin=(1.7, -1.6, 0.4)),
        r"Terrain: its modifiers change its vertex count from 441 to 1,681",
        terrain,
    )


def test_a_smoothing_subdivision_names_the_vertex_count_too(empty_scene):
    terrain, _ = hills_with_a_ball_and_a_tower()
    terrain.modifiers.new("Subdivision", "SUBSURF")
    assert_fails_and_changes_nothing(
        lambda: bpy.ops.geometry_queries.visibility(origin=(1.7, -1.6, 0.4)),
        r"vertex count from 441 to 1,681",
        terrain,
    )


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(origin=(math.nan, 0.0, 0.0)), r"Origin is not finite \(nan, 0, 0\)"),
        (dict(observer_height=math.nan), r"Observer Height is not finite \(nan\)"),
        (dict(target_height=math.nan), r"Target Height is not finite \(nan\)"),
    ],
)
def test_bad_input_changes_nothing(empty_scene, arguments, message):
    terrain, _ = hills_with_a_ball_and_a_tower()
    assert_fails_and_changes_nothing(
        lambda: bpy.ops.geometry_queries.visibility(**arguments), message, terrain
    )


def test_an_unrecognised_occluder_is_named(empty_scene):
    terrain, _ = hills_with_a_ball_and_a_tower()
    bpy.ops.mesh.primitive_cube_add(location=(0.0, 0.0, 2.0))
    select_only(terrain, bpy.context.object)
    assert_fails_and_changes_nothing(
        lambda: bpy.ops.geometry_queries.visibility(origin=(0, 0, 3)),
        "Cube is not a supported shape",
        terrain,
    )


def test_terrains_sharing_a_mesh_are_refused(empty_scene):
    terrain, _ = hills_with_a_ball_and_a_tower()
    twin = terrain.copy()  # a linked duplicate: the same mesh
    twin.name = "Twin"
    twin.location.x += 5.0
    empty_scene.collection.objects.link(twin)
    select_only(terrain, twin)
    assert_fails_and_changes_nothing(
        lambda: bpy.ops.geometry_queries.visibility(origin=(0, 0, 3)),
        "Terrain and Twin share the mesh",
        terrain,
    )


def test_poll_says_when_no_terrain_is_selected(empty_scene):
    terrain, solids = hills_with_a_ball_and_a_tower()
    select_only(solids[0][0])
    assert not bpy.ops.geometry_queries.visibility.poll()
    assert_fails_and_changes_nothing(bpy.ops.geometry_queries.visibility, "Select a terrain")
    select_only()
    assert_fails_and_changes_nothing(bpy.ops.geometry_queries.visibility, "Select a terrain")
    select_only(terrain)
    assert bpy.ops.geometry_queries.visibility.poll()
    # A change that makes it no terrain: the memo follows depsgraph updates (which the UI
    # runs after every change; headless, evaluating the depsgraph runs them).
    terrain.modifiers["Displace"].direction = "X"
    bpy.context.evaluated_depsgraph_get()
    assert not bpy.ops.geometry_queries.visibility.poll()


def test_undo_restores_the_mesh(empty_scene):
    terrain, _ = hills_with_a_ball_and_a_tower()
    bpy.ops.ed.undo_push(message="Scene ready")
    bpy.ops.geometry_queries.visibility("EXEC_DEFAULT", True, origin=(1.7, -1.6, 0.4))
    first = visible_attribute(bpy.data.objects["Terrain"])
    bpy.ops.geometry_queries.visibility("EXEC_DEFAULT", True, origin=(-1.9, 1.5, 0.4))
    assert (visible_attribute(bpy.data.objects["Terrain"]) != first).any()
    bpy.ops.ed.undo()
    assert (visible_attribute(bpy.data.objects["Terrain"]) == first).all()
    bpy.ops.ed.undo()
    mesh = bpy.data.objects["Terrain"].data
    assert "visible" not in mesh.attributes and "visibility" not in mesh.attributes
    bpy.ops.ed.redo()
    assert (visible_attribute(bpy.data.objects["Terrain"]) == first).all()


def test_instanced_occluders_hide_what_the_objects_hide(empty_scene):
    """An empty instancing a collection of the ball and the tower occludes exactly as the two
    objects selected themselves (instances are targets, as for Fire Ray)."""
    terrain, solids = hills_with_a_ball_and_a_tower()
    ball, tower = (obj for obj, _ in solids)
    bpy.ops.geometry_queries.visibility(origin=(1.7, -1.6, 0.4), observer_height=0.9)
    direct = visible_attribute(terrain).copy()
    assert 0 < direct.sum() < len(direct)

    occluders = bpy.data.collections.new("Occluders")
    for obj in (ball, tower):
        for owner in obj.users_collection:
            owner.objects.unlink(obj)
        occluders.objects.link(obj)
    empty = bpy.data.objects.new("Props", None)
    empty.instance_type, empty.instance_collection = "COLLECTION", occluders
    bpy.context.scene.collection.objects.link(empty)
    bpy.context.view_layer.update()
    select_only(terrain, empty)
    bpy.ops.geometry_queries.visibility(origin=(1.7, -1.6, 0.4), observer_height=0.9)
    assert (visible_attribute(terrain) == direct).all()
    assert bpy.context.scene.geometry_queries.last_result.endswith("vertices on Terrain")
