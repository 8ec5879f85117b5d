"""Sphere Cast against a transformed sphere (exact contact), its defaults, and Clear Hits
removing exactly what the add-on created."""

import bpy
import numpy as np
import pytest
from blender_scenes import (
    TAG,
    add_uv_sphere,
    created_markers,
    created_point_meshes,
    float32,
    select_only,
    snapshot,
    unit,
)


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


def scene_with_markers(name):
    """A new scene holding a sphere and the markers of one Fire Ray (two hits: a fan of 2)
    and one point mesh, with a user empty named like a marker and a user collection named
    like the hits collection; returns the scene."""
    scene = bpy.data.scenes.new(name)
    bpy.context.window.scene = scene
    look_alike = bpy.data.objects.new(f"{name} Sphere hit", None)  # named like a marker
    look_alike_collection = bpy.data.collections.new("Geometry Query Hits")
    scene.collection.children.link(look_alike_collection)
    look_alike_collection.objects.link(look_alike)
    sphere = add_uv_sphere(name=f"{name} Sphere", radius=1.0, location=(0.0, 0.0, -5.0))
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(
        origin=(0, 0, 0), direction=(0, 0, -1), pattern="FAN", fan_count=2, fan_angle=0.1
    )
    bpy.ops.geometry_queries.fire_ray(
        origin=(0, 0, 0), direction=(0, 0, -1), pattern="GRID", output="POINT_MESH"
    )
    assert look_alike.name == f"{name} Sphere hit" and TAG not in look_alike
    return scene


def tagged_in(scene):
    return sorted(obj.name for obj in scene.objects if TAG in obj)


def test_clear_hits_clears_the_current_scene_only(empty_scene):
    first, second = scene_with_markers("First"), scene_with_markers("Second")
    assert len(tagged_in(first)) == len(tagged_in(second)) == 3
    second_before = tagged_in(second)
    everything_but_first = sorted(
        obj.name for obj in bpy.data.objects if obj.name not in tagged_in(first)
    )

    bpy.context.window.scene = first
    bpy.ops.geometry_queries.clear_hits()
    assert tagged_in(first) == []
    assert tagged_in(second) == second_before  # the other scene keeps its markers
    assert sorted(obj.name for obj in bpy.data.objects) == everything_but_first
    assert "First Sphere hit" in first.objects  # the user's look-alikes stay
    assert "Second Sphere hit" in second.objects
    assert [c.name for c in first.collection.children] == ["Geometry Query Hits"]
    assert first.geometry_queries.last_result == "Removed 3 objects"

    # Nothing left to clear here, though the other scene still has results.
    assert not bpy.ops.geometry_queries.clear_hits.poll()
    bpy.context.window.scene = second
    assert bpy.ops.geometry_queries.clear_hits.poll()
    bpy.ops.geometry_queries.clear_hits()
    assert tagged_in(second) == []
    assert [obj for obj in bpy.data.objects if TAG in obj] == []
    assert [c for c in bpy.data.collections if TAG in c] == []


def test_clear_hits_in_a_linked_copy_unlinks_the_shared_markers_only(empty_scene):
    """A Linked Copy scene shares the hits collection: clearing there takes the markers out
    of that scene and leaves them in the original."""
    original = scene_with_markers("Original")
    markers = tagged_in(original)
    bpy.ops.scene.new(type="LINK_COPY")
    copy = bpy.context.window.scene
    assert copy != original and tagged_in(copy) == markers
    bpy.ops.geometry_queries.clear_hits()
    assert tagged_in(copy) == []
    assert tagged_in(original) == markers
    assert copy.geometry_queries.last_result == "Removed 3 objects"


def sphere_contact_distance(start, unit_direction, centre, reach):
    """Closed form: the first t with |start + t u - centre| = reach (None when never)."""
    m = np.asarray(start, dtype=np.float64) - centre
    b, c = m @ unit_direction, m @ m - reach * reach
    if b * b - c < 0.0:
        return None
    t = -b - np.sqrt(b * b - c)
    return max(t, 0.0)


def test_a_fan_of_casts_marks_each_contact(empty_scene):
    sphere = add_uv_sphere(radius=2.0, location=(0.0, 0.0, -8.0))
    select_only(sphere)
    start, end, radius = np.array([0.0, 0.0, 0.0]), np.array([0.0, 0.0, -12.0]), 0.25
    count, cone = 7, 0.5
    bpy.ops.geometry_queries.sphere_cast(
        start=start, end=end, radius=radius, pattern="FAN", fan_count=count, fan_angle=cone
    )
    # The fan as documented, computed here: cast k leaves at polar angle theta_k from
    # End - Start with cos(theta_k) = 1 - (1 - cos(cone / 2)) k / (count - 1) (even by solid
    # angle, the first on the axis, the last on the rim), turned by the golden angle
    # pi (3 - sqrt(5)) from cast to cast. The sphere sits on the axis, so each contact
    # distance depends on theta_k alone.
    k = np.arange(count)
    cos_polar = 1.0 - (1.0 - np.cos(0.5 * float(np.float32(cone)))) * k / (count - 1)
    directions = [np.array([np.sqrt(1 - c * c), 0.0, -c]) for c in cos_polar]
    expected = [
        sphere_contact_distance(start, d, np.array([0.0, 0.0, -8.0]), 2.0 + radius)
        for d in directions
    ]
    assert all(t is not None and t <= 12.0 for t in expected)
    moving = [m for m in created_markers() if m.empty_display_type == "SPHERE"]
    assert len(moving) == count
    moving.sort(key=lambda m: m["distance"])  # the contact distance grows with theta_k
    np.testing.assert_allclose([m["distance"] for m in moving], expected, atol=1e-9)
    centres = np.array([m["point"] for m in moving])
    cast = centres / np.linalg.norm(centres, axis=1, keepdims=True)
    np.testing.assert_allclose(-cast[:, 2], cos_polar, atol=1e-9)
    azimuth = np.arctan2(cast[1:, 1], cast[1:, 0])
    turn = np.angle(np.exp(1j * np.diff(azimuth)))  # wrapped to (-pi, pi]
    golden = np.pi * (3.0 - np.sqrt(5.0))
    np.testing.assert_allclose(np.abs(turn), golden, atol=1e-9)
    assert len(set(np.sign(turn))) == 1  # always the same way round
    assert empty_scene.geometry_queries.last_result.startswith("7 of 7 sphere casts touch")


def test_a_grid_of_casts_writes_a_point_mesh_of_contacts(empty_scene):
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0))
    select_only(sphere)
    bpy.ops.geometry_queries.sphere_cast(
        start=(0, 0, 0),
        end=(0, 0, -10),
        radius=0.5,
        pattern="GRID",
        grid_rows=9,
        grid_columns=9,
        grid_width=4.0,
        output="POINT_MESH",
    )
    assert created_markers() == []
    (cloud,) = created_point_meshes()
    assert cloud.type == "MESH" and cloud.name == "Cast Contacts"
    mesh = cloud.data
    count = len(mesh.vertices)
    points = np.empty(count * 3, dtype=np.float32)
    centres = np.empty(count * 3, dtype=np.float32)
    mesh.attributes["position"].data.foreach_get("vector", points)
    mesh.attributes["cast_center"].data.foreach_get("vector", centres)
    points, centres = points.reshape(-1, 3), centres.reshape(-1, 3)
    # Parallel casts 0.5 apart over a 4 x 4 square: those passing within 1.5 of the axis.
    offsets = np.linspace(-2.0, 2.0, 9)
    assert count == int(np.count_nonzero(np.hypot(*np.meshgrid(offsets, offsets)) <= 1.5))
    # Each contact point on the sphere, each centre 1.5 from its centre, point between them.
    centre = np.array([0.0, 0.0, -5.0])
    np.testing.assert_allclose(np.linalg.norm(points - centre, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(centres - centre, axis=1), 1.5, atol=1e-5)
    np.testing.assert_allclose(centre + (centres - centre) / 1.5, points, atol=1e-5)
    assert empty_scene.geometry_queries.last_result.startswith(f"{count} of 81 sphere casts touch")
