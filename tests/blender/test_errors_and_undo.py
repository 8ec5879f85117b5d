"""Failed operators leave the scene exactly as it was (and raise RuntimeError when called
from Python); undo removes what a query created."""

import bpy
import pytest
from blender_scenes import add_uv_sphere, created_markers, select_only, snapshot


@pytest.fixture
def sphere_and_cube(empty_scene):
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0))
    bpy.ops.mesh.primitive_cube_add(location=(3.0, 0.0, -5.0))
    cube = bpy.context.object
    # An earlier result, so "unchanged" also covers the add-on's own collection.
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1))
    return sphere, cube


def assert_fails_and_changes_nothing(call, message):
    before = snapshot()
    with pytest.raises(RuntimeError, match=message):
        call()
    assert snapshot() == before


def test_nothing_selected(sphere_and_cube):
    select_only()
    assert_fails_and_changes_nothing(bpy.ops.geometry_queries.fire_ray, "Select the objects")
    assert_fails_and_changes_nothing(bpy.ops.geometry_queries.sphere_cast, "Select the objects")


def test_cube_selected_names_the_cube_and_why(sphere_and_cube):
    sphere, cube = sphere_and_cube
    select_only(sphere, cube)  # the sphere alone would work: still nothing is written
    assert_fails_and_changes_nothing(
        lambda: bpy.ops.geometry_queries.fire_ray(origin=(3, 0, 0), direction=(0, 0, -1)),
        "Cube is not a supported shape: .*only 4 vertices per circle",
    )


def test_zero_direction(sphere_and_cube):
    assert_fails_and_changes_nothing(
        lambda: bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, 0)),
        "Direction must not be zero",
    )


def test_zero_scale_names_the_object(sphere_and_cube):
    sphere, _ = sphere_and_cube
    sphere.scale = (1.0, 0.0, 1.0)
    assert_fails_and_changes_nothing(
        lambda: bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1)),
        "Sphere cannot be queried: matrix is singular",
    )


def test_view_direction_without_a_3d_view(sphere_and_cube):
    assert bpy.context.area is None  # headless: no editor to take a view from
    assert_fails_and_changes_nothing(
        lambda: bpy.ops.geometry_queries.fire_ray(direction_source="VIEW"),
        "needs a 3D viewport.*pass direction=",
    )


def test_sphere_cast_at_a_non_uniformly_scaled_sphere(sphere_and_cube):
    sphere, _ = sphere_and_cube
    sphere.scale = (1.0, 1.0, 2.0)
    assert_fails_and_changes_nothing(
        lambda: bpy.ops.geometry_queries.sphere_cast(start=(0, 0, 0), end=(0, 0, -10)),
        "Sphere: Sphere Cast needs a placement without non-uniform scale",
    )


def test_edit_mode_is_refused_by_poll(sphere_and_cube):
    bpy.ops.object.mode_set(mode="EDIT")
    assert not bpy.ops.geometry_queries.fire_ray.poll()
    assert_fails_and_changes_nothing(bpy.ops.geometry_queries.fire_ray, "Object Mode")
    bpy.ops.object.mode_set(mode="OBJECT")


def test_clear_hits_with_nothing_to_clear(empty_scene):
    add_uv_sphere()
    assert_fails_and_changes_nothing(bpy.ops.geometry_queries.clear_hits, "Nothing to clear")


@pytest.mark.parametrize(
    "operator, arguments",
    [
        ("fire_ray", dict(origin=(0, 0, 0), direction=(0, 0, -1), pattern="FAN", fan_count=9)),
        (
            "fire_ray",
            dict(
                origin=(0, 0, 0),
                direction=(0, 0, -1),
                pattern="GRID",
                grid_rows=20,
                grid_columns=20,
                output="POINT_MESH",
            ),
        ),
        ("sphere_cast", dict(start=(0, 0, 0), end=(0, 0, -10), radius=0.5)),
    ],
)
def test_undo_removes_the_hits(empty_scene, operator, arguments):
    """Headless, Blender has no undo stack until ``ed.undo_push`` creates one, and operators
    called from Python push an undo step only when asked (the second positional argument,
    ``undo=True``); then ``ed.undo`` works as in the UI."""
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0))
    select_only(sphere)
    bpy.ops.ed.undo_push(message="Scene ready")
    before = snapshot()
    getattr(bpy.ops.geometry_queries, operator)("EXEC_DEFAULT", True, **arguments)
    after = snapshot()
    assert after != before
    bpy.ops.ed.undo()
    assert snapshot() == before
    bpy.ops.ed.redo()
    assert snapshot() == after


def test_undo_of_clear_hits_brings_them_back(empty_scene):
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0))
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1))
    bpy.ops.ed.undo_push(message="Hit")
    with_hits = snapshot()
    bpy.ops.geometry_queries.clear_hits("EXEC_DEFAULT", True)
    assert created_markers() == []
    bpy.ops.ed.undo()
    assert snapshot() == with_hits


def test_redo_with_edited_properties_replaces_the_result(empty_scene):
    """What the Adjust Last Operation panel does: edit the last operator's properties and
    ``ed.undo_redo``. The origin filled in from the cursor is a set property there. Headless
    this needs a 3D view in the context (without one Blender 5.0.1 crashes in undo_redo)."""
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0))
    select_only(sphere)
    empty_scene.cursor.location = (0.0, 0.0, 0.0)
    bpy.ops.ed.undo_push(message="Scene ready")
    bpy.ops.geometry_queries.fire_ray("EXEC_DEFAULT", True)
    last = bpy.context.window_manager.operators[-1]
    assert last.bl_idname == "GEOMETRY_QUERIES_OT_fire_ray"
    assert last.properties.is_property_set("origin") and tuple(last.direction) == (0, 0, -1)
    last.origin = (0.0, 0.0, 2.0)
    last.pattern, last.fan_count = "FAN", 3
    area = next(a for a in bpy.context.screen.areas if a.type == "VIEW_3D")
    region = next(r for r in area.regions if r.type == "WINDOW")
    with bpy.context.temp_override(area=area, region=region):
        bpy.ops.ed.undo_redo()
    (marker,) = created_markers()
    assert marker["distance"] == pytest.approx(6.0, abs=1e-9)  # from the new origin only
    assert bpy.context.scene.geometry_queries.last_result.startswith("1 of 3 rays hit")
