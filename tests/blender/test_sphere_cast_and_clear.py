"""Sphere Cast against a transformed sphere (exact contact), its defaults, and Clear Hits
removing exactly what the add-on created."""

import bpy
import numpy as np
import pytest
from blender_scenes import TAG, add_uv_sphere, created_markers, float32, select_only, snapshot, unit


def test_contact_on_rotated_translated_uniformly_scaled_sphere_is_exact(empty_scene):
    sphere = add_uv_sphere(
        radius=1.25, location=(1.0, -2.0, -6.0), rotation=(0.5, 0.1, -0.3), scale=(1.5, 1.5, 1.5)
    )
    select_only(sphere)
    start, end, radius = float32((0.3, -1.0, 2.0)), float32((1.5, -2.5, -12.0)), 0.5
    bpy.ops.geometry_queries.sphere_cast(start=start, end=end, radius=radius)

    # Reference: the moving centre start + t u first reaches distance R + r from the centre.
    centre, reach = np.array(sphere.matrix_world.translation), 1.25 * 1.5 + radius
    u = unit(end - start)
    m = start - centre
    b, c = m @ u, m @ m - reach * reach
    t = -b - np.sqrt(b * b - c)
    contact_centre = start + t * u
    contact_point = centre + 1.25 * 1.5 * unit(contact_centre - centre)

    markers = {m.name: m for m in created_markers()}
    assert set(markers) == {"Sphere cast centre", "Sphere cast contact"}
    moving, contact = markers["Sphere cast centre"], markers["Sphere cast contact"]
    assert moving["distance"] == pytest.approx(t, abs=1e-9)
    np.testing.assert_allclose(moving["point"], contact_centre, atol=1e-9)
    np.testing.assert_allclose(contact["point"], contact_point, atol=1e-9)
    np.testing.assert_allclose(contact["normal"], unit(contact_centre - centre), atol=1e-9)
    assert moving.empty_display_type == "SPHERE"
    assert moving.empty_display_size == pytest.approx(radius)
    assert empty_scene.geometry_queries.last_result == f"Sphere cast touches Sphere after {t:.3f} m"


def test_cast_defaults_to_the_cursor_and_max_distance_along_its_minus_z(empty_scene):
    near = add_uv_sphere(name="Near", radius=1.0, location=(0.0, 0.0, -6.0))
    far = add_uv_sphere(name="Far", radius=1.0, location=(0.0, 0.0, -12.0))
    select_only(near, far)
    empty_scene.cursor.location = (0.0, 0.0, 0.0)
    bpy.ops.geometry_queries.sphere_cast(radius=0.5, max_distance=20.0)
    (moving,) = [m for m in created_markers() if m.empty_display_type == "SPHERE"]
    assert moving["target"] == "Near" and moving["distance"] == pytest.approx(4.5, abs=1e-9)
    bpy.ops.geometry_queries.clear_hits()
    bpy.ops.geometry_queries.sphere_cast(radius=0.5, max_distance=4.4)
    assert created_markers() == []
    assert (
        empty_scene.geometry_queries.last_result
        == "Sphere cast touches nothing between start and end"
    )


def test_clear_hits_removes_only_what_the_add_on_created(empty_scene):
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0))
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(
        origin=(0, 0, 0), direction=(0, 0, -1), pattern="FAN", fan_count=5, fan_angle=0.1
    )
    bpy.ops.geometry_queries.fire_ray(
        origin=(0, 0, 0),
        direction=(0, 0, -1),
        pattern="GRID",
        grid_rows=12,
        grid_columns=12,
        output="POINT_MESH",
    )
    bpy.ops.geometry_queries.sphere_cast(start=(0, 0, 0), end=(0, 0, -9))
    user_empty = bpy.data.objects.new("Mine", None)
    empty_scene.collection.objects.link(user_empty)
    user_mesh_count = len(bpy.data.meshes)
    assert len(created_markers()) == 7
    bpy.ops.geometry_queries.clear_hits()
    assert [obj.name for obj in bpy.data.objects if TAG in obj] == []
    assert sorted(obj.name for obj in bpy.data.objects) == ["Mine", "Sphere"]
    assert "Geometry Query Hits" not in bpy.data.collections
    assert len(bpy.data.meshes) == user_mesh_count - 1  # the point mesh's data went too
    assert empty_scene.geometry_queries.last_result == "Removed 8 objects"


def test_clear_hits_keeps_the_collection_when_it_holds_someone_elses_object(empty_scene):
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0))
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1))
    hits = bpy.data.collections["Geometry Query Hits"]
    user_empty = bpy.data.objects.new("Mine", None)
    hits.objects.link(user_empty)
    bpy.ops.geometry_queries.clear_hits()
    assert [obj.name for obj in hits.objects] == ["Mine"]
    assert sorted(obj.name for obj in bpy.data.objects) == ["Mine", "Sphere"]


def test_hits_go_into_one_collection_across_queries(empty_scene):
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0))
    select_only(sphere)
    for _ in range(3):
        bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1))
    before = snapshot()
    assert [c.name for c in bpy.data.collections] == ["Geometry Query Hits"]
    assert len(bpy.data.collections["Geometry Query Hits"].objects) == 3
    assert before == snapshot()
