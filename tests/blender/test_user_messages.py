"""What the user reads: errors name the operator's properties and the object at fault (never
internal words such as "row", nothing on stderr), lengths come in the scene's units; and
the Cone Angle slider's maximum works."""

import math

import bpy
import numpy as np
import pytest
from blender_scenes import (
    add_cylinder,
    add_displaced_grid,
    add_uv_sphere,
    created_markers,
    fire_single_ray,
    select_only,
    snapshot,
)


def assert_refused(call, message):
    """``call`` raises the operator's ERROR report (as RuntimeError) and changes nothing."""
    before = snapshot()
    with pytest.raises(RuntimeError, match=message) as error:
        call()
    assert snapshot() == before
    return str(error.value)


def test_fan_at_the_sliders_maximum_angle_fires(empty_scene):
    """The slider's maximum is pi, which the float property stores as float32(pi) > pi."""
    settings = empty_scene.geometry_queries
    settings.fan_angle = math.pi
    assert settings.fan_angle > math.pi
    sphere = add_uv_sphere(location=(0.0, 0.0, -3.0))
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(
        origin=(0.0, 0.0, 0.0),
        direction=(0.0, 0.0, -1.0),
        pattern="FAN",
        fan_count=400,
        fan_angle=settings.fan_angle,
        output="EMPTIES",
    )
    # A full hemisphere of rays: those within asin(1/3) of straight down hit the sphere.
    distances = np.array([marker["distance"] for marker in created_markers()])
    fraction = (1.0 - math.cos(math.asin(1.0 / 3.0))) / 1.0  # solid-angle share
    assert abs(len(distances) / 400 - fraction) < 0.02
    assert abs(distances.min() - 2.0) < 1e-9


def test_a_slightly_larger_angle_is_still_refused_in_degrees(empty_scene, addon):
    from geometry_queries.operators import patterns

    with pytest.raises(ValueError, match="Cone Angle must be between 0 and 180 degrees"):
        patterns.fan_directions(np.array([0.0, 0.0, 1.0]), 4, 3.1416)


def set_vertex(obj, index, co):
    obj.data.vertices[index].co = co
    obj.data.update()


def spike_by_shape_key(obj, index, axis, value):
    obj.shape_key_add(name="Basis")
    key = obj.shape_key_add(name="Spike")
    key.data[index].co[axis] = value
    key.value = 1.0


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: spike_by_shape_key(add_displaced_grid(), 40, 2, math.inf), "Terrain"),
        (lambda: set_vertex(add_uv_sphere(), 100, (math.nan, 0.0, 0.0)), "Sphere"),
        (lambda: spike_by_shape_key(add_cylinder(), 3, 0, -math.nan), "Cylinder"),
    ],
    ids=["terrain inf by shape key", "sphere nan vertex", "cylinder nan by shape key"],
)
def test_a_vertex_that_is_not_finite_is_refused_naming_the_object(empty_scene, capfd, make, name):
    make()
    bystander = add_uv_sphere(name="Bystander", location=(5.0, 0.0, 0.0))
    select_only(bpy.data.objects[name], bystander)
    capfd.readouterr()
    message = assert_refused(
        lambda: bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 5), direction=(0, 0, -1)),
        f"{name} has a vertex that is not finite: vertex [0-9]+ at \\(",
    )
    assert "SVD" not in message and "row" not in message
    assert capfd.readouterr().err == ""  # no LAPACK complaint from a fit on bad numbers


def test_a_transform_that_is_not_finite_is_refused_naming_the_object(empty_scene, capfd):
    sphere = add_uv_sphere()
    sphere.location = (math.nan, 0.0, 0.0)
    bpy.context.view_layer.update()
    select_only(sphere)
    capfd.readouterr()
    assert_refused(
        lambda: bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 5), direction=(0, 0, -1)),
        "Sphere has a transform that is not finite",
    )
    assert capfd.readouterr().err == ""


def test_bad_vectors_are_named_by_their_property(empty_scene):
    sphere = add_uv_sphere()
    select_only(sphere)
    nan = math.nan
    message = assert_refused(
        lambda: bpy.ops.geometry_queries.sphere_cast(start=(nan, 0, 0), end=(0, 0, -5)),
        r"^Error: Start is not finite \(nan, 0, 0\)\s*$",
    )
    assert "row" not in message and "Sphere" not in message
    assert_refused(
        lambda: bpy.ops.geometry_queries.sphere_cast(start=(0, 0, 5), end=(0, nan, 0)),
        r"^Error: End is not finite \(0, nan, 0\)\s*$",
    )
    assert_refused(
        lambda: bpy.ops.geometry_queries.sphere_cast(start=(0, 0, 5), end=(0, 0, 0), radius=nan),
        r"^Error: Radius is not finite \(nan\)\s*$",
    )
    assert_refused(
        lambda: bpy.ops.geometry_queries.fire_ray(origin=(0, nan, 5), direction=(0, 0, -1)),
        r"^Error: Origin is not finite \(0, nan, 5\)\s*$",
    )
    assert_refused(
        lambda: bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 5), direction=(nan, 0, -1)),
        r"^Error: Direction is not finite \(nan, 0, -1\)\s*$",
    )


@pytest.mark.parametrize(
    "system, length_unit, scale, ray_text, cast_text",
    [
        ("METRIC", "CENTIMETERS", 1.0, "4.000 cm", "2.000 cm"),
        ("METRIC", "ADAPTIVE", 1.0, "4 cm", "2 cm"),
        ("METRIC", "MILLIMETERS", 0.5, "20.000 mm", "10.000 mm"),
        ("IMPERIAL", "INCHES", 1.0, '1.575"', '0.787"'),
        ("IMPERIAL", "FEET", 1.0, "0.131'", "0.066'"),
        ("NONE", "ADAPTIVE", 1.0, "0.040", "0.020"),
    ],
)
def test_distances_are_shown_in_the_scenes_units(
    empty_scene, system, length_unit, scale, ray_text, cast_text
):
    units = empty_scene.unit_settings
    units.system = system
    units.length_unit = length_unit
    units.scale_length = scale
    sphere = add_uv_sphere(location=(0.0, 0.0, -1.04))
    select_only(sphere)
    assert fire_single_ray((0.0, 0.0, 0.0), (0.0, 0.0, -1.0))[0] == pytest.approx(0.04)
    result = empty_scene.geometry_queries.last_result
    assert result == f"1 of 1 ray hit; nearest: Sphere at {ray_text}"
    bpy.ops.geometry_queries.sphere_cast(start=(0, 0, 0), end=(0, 0, -5), radius=0.02)
    result = empty_scene.geometry_queries.last_result
    assert result == f"Sphere cast touches Sphere after {cast_text}"


@pytest.mark.parametrize(
    "mode, attribute, value",
    [
        ("XYZ", "rotation_euler", (math.nan, 0.0, 0.0)),
        ("QUATERNION", "rotation_quaternion", (1.0, 0.0, math.nan, 0.0)),
        ("AXIS_ANGLE", "rotation_axis_angle", (math.nan, 0.0, 0.0, 1.0)),
    ],
)
def test_a_cursor_rotation_that_is_not_finite_is_named_as_the_cursors(
    empty_scene, mode, attribute, value
):
    select_only(add_uv_sphere(location=(0.0, 0.0, -5.0)))
    cursor = empty_scene.cursor
    cursor.rotation_mode = mode
    setattr(cursor, attribute, value)
    for call in (
        lambda: bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0)),
        lambda: bpy.ops.geometry_queries.fire_ray(),
        lambda: bpy.ops.geometry_queries.sphere_cast(start=(0, 0, 0)),
    ):
        message = assert_refused(call, r"^Error: The 3D cursor's rotation is not finite\s*$")
        assert "Direction" not in message
    # Given a direction (an end), the cursor's rotation is not asked for.
    bpy.ops.geometry_queries.fire_ray(direction=(0, 0, -1))
    bpy.ops.geometry_queries.sphere_cast(end=(0, 0, -10))
    assert len(created_markers()) == 1 + 2


def test_a_cursor_location_that_is_not_finite_is_named_as_the_cursors(empty_scene):
    terrain = add_displaced_grid(vertices_per_side=5)
    select_only(add_uv_sphere(location=(0.0, 0.0, -5.0)), terrain)
    empty_scene.cursor.location = (math.nan, 0.0, 1.0)
    message = r"^Error: The 3D cursor's location is not finite \(nan, 0, 1\)\s*$"
    for call in (
        lambda: bpy.ops.geometry_queries.fire_ray(direction=(0, 0, -1)),
        lambda: bpy.ops.geometry_queries.sphere_cast(end=(0, 0, -10)),
        bpy.ops.geometry_queries.visibility,
    ):
        assert "Origin" not in assert_refused(call, message)
    assert "visible" not in terrain.data.attributes
    bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1))
    bpy.ops.geometry_queries.visibility(origin=(0, 0, 3))
    assert "visible" in terrain.data.attributes


def test_counts_have_thousands_separators_in_every_report(empty_scene):
    settings = empty_scene.geometry_queries
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0))
    select_only(sphere)
    grid = dict(pattern="GRID", grid_rows=40, grid_columns=40, grid_width=4.0)
    bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1), **grid)
    hit = len(bpy.data.objects["Ray Hits"].data.vertices)
    assert 1_000 > hit > 100
    assert settings.last_result.startswith(f"{hit} of 1,600 rays hit; nearest: Sphere at")
    grid.update(grid_rows=1_500, grid_columns=2, grid_width=0.1)
    bpy.ops.geometry_queries.sphere_cast(start=(0, 0, 0), end=(0, 0, -10), radius=0.1, **grid)
    assert settings.last_result.startswith("3,000 of 3,000 sphere casts touch; nearest:")
    bpy.ops.geometry_queries.fire_ray(
        origin=(0, 0, 0),
        direction=(0, 0, -1),
        **dict(grid, grid_rows=1_001, grid_columns=1),
        output="EMPTIES",
    )
    assert settings.last_result.startswith("1,001 of 1,001 rays hit")
    bpy.ops.geometry_queries.clear_hits()
    assert settings.last_result == "Removed 1,003 objects"


def test_count_wording(addon):
    from geometry_queries.operators.messages import format_count

    assert format_count(3_880_800) == "3,880,800"
    assert format_count(1, "ray") == "1 ray"
    assert format_count(0, "ray") == "0 rays"
    assert format_count(4_000_000, "ray") == "4,000,000 rays"
    assert format_count(1, "vertex", "vertices") == "1 vertex"
    assert format_count(1_048_576, "vertex", "vertices") == "1,048,576 vertices"
