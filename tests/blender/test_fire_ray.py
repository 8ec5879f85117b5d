"""Fire Ray through the real operator: exact hits on transformed spheres and cylinders
(against independent float64 references, 1e-9), agreement with Blender's scene.ray_cast
within the tessellation, patterns, nearest-target selection, outputs and defaults."""

import bpy
import numpy as np
import pytest
from blender_scenes import (
    add_cylinder,
    add_uv_sphere,
    blender_local_normal,
    blender_ray_cast,
    created_markers,
    created_point_meshes,
    fire_single_ray,
    float32,
    ray_cylinder,
    ray_ellipsoid,
    select_only,
    unit,
    world_matrix,
)

SPHERE_RADIUS = 1.5
CYLINDER_RADIUS, CYLINDER_DEPTH = 0.75, 2.5


def rays_towards(centre, count, distance, seed):
    """(origin, direction) pairs from ``distance`` away, aimed near ``centre``."""
    rng = np.random.default_rng(seed)
    rays = []
    for _ in range(count):
        away = unit(rng.normal(size=3))
        origin = np.asarray(centre) + distance * away
        aim = np.asarray(centre) + rng.uniform(-0.4, 0.4, size=3)
        rays.append((origin, aim - origin))
    return rays


def assert_same_hit(found, expected, tolerance=1e-9):
    assert found is not None and expected is not None, (found, expected)
    distance, point, normal = found[:3]
    assert abs(distance - expected[0]) <= tolerance * max(1.0, expected[0])
    np.testing.assert_allclose(point, expected[1], rtol=0, atol=tolerance * max(1.0, expected[0]))
    np.testing.assert_allclose(normal, expected[2], rtol=0, atol=1e-9)


def assert_agrees_with_blender(found, origin, direction, matrix, tessellation):
    """Blender's scene.ray_cast hits the tessellated mesh: within ``tessellation`` of the
    exact distance, facet normals within a few degrees of the exact normal, both compared
    in the object's local axes (blender_local_normal: how each version turns normals)."""
    blender = blender_ray_cast(origin, unit(direction))
    assert blender is not None
    assert abs(blender[0] - found[0]) <= tessellation, (blender[0], found[0])
    blender_local = blender_local_normal(matrix, blender[1])
    exact_local = unit(matrix[:3, :3].T @ found[2])
    assert blender_local @ exact_local >= np.cos(np.radians(12.0))


def test_hits_on_rotated_translated_non_uniformly_scaled_uv_sphere(empty_scene):
    sphere = add_uv_sphere(
        radius=SPHERE_RADIUS,
        location=(0.5, -1.0, 2.0),
        rotation=(0.3, -0.7, 1.1),
        scale=(1.0, 2.0, 0.5),
    )
    select_only(sphere)
    matrix = world_matrix(sphere)
    for origin, direction in rays_towards((0.5, -1.0, 2.0), 8, 9.0, seed=1):
        origin, direction = float32(origin), float32(direction)
        found = fire_single_ray(origin, direction)
        expected = ray_ellipsoid(matrix, SPHERE_RADIUS, origin, direction)
        assert_same_hit(found, expected)
        assert found[3] == "Sphere"
        # 32 x 16 facets of a sphere scaled up to 2 x 1.5: a few percent of the radius.
        assert_agrees_with_blender(found, origin, direction, matrix, tessellation=0.08)


def test_hits_on_rotated_translated_non_uniformly_scaled_cylinder(empty_scene):
    cylinder = add_cylinder(
        radius=CYLINDER_RADIUS,
        depth=CYLINDER_DEPTH,
        vertices=48,
        location=(-2.0, 1.0, 0.5),
        rotation=(0.9, 0.2, -0.4),
        scale=(1.5, 0.8, 1.2),
    )
    select_only(cylinder)
    matrix = world_matrix(cylinder)
    side = cap = 0
    for origin, direction in rays_towards((-2.0, 1.0, 0.5), 12, 8.0, seed=2):
        origin, direction = float32(origin), float32(direction)
        found = fire_single_ray(origin, direction)
        expected = ray_cylinder(matrix, CYLINDER_RADIUS, CYLINDER_DEPTH, origin, direction)
        assert_same_hit(found, expected)
        local_normal = unit(matrix[:3, :3].T @ expected[2])  # L^T n_world is along n_local
        if abs(local_normal[2]) < 1e-9:
            side += 1
        else:
            cap += 1
        assert_agrees_with_blender(found, origin, direction, matrix, tessellation=0.03)
    assert side >= 3 and cap >= 1  # both the curved side and the caps are tested


def test_ray_from_the_3d_cursor_by_default(empty_scene):
    sphere = add_uv_sphere(radius=1.0, location=(3.0, 0.0, 0.0))
    select_only(sphere)
    empty_scene.cursor.location = (3.0, 0.0, 5.0)
    empty_scene.cursor.rotation_euler = (0.0, 0.0, 0.0)  # -Z looks straight down
    bpy.ops.geometry_queries.fire_ray()
    (marker,) = created_markers()
    assert marker["distance"] == pytest.approx(4.0, abs=1e-9)
    assert "1 of 1 ray hit; nearest: Sphere at 4.000 m" == empty_scene.geometry_queries.last_result

    # A rotated cursor: its -Z axis turns with it (here to +X, from the left of the sphere).
    bpy.ops.geometry_queries.clear_hits()
    empty_scene.cursor.location = (0.0, 0.0, 0.0)
    empty_scene.cursor.rotation_euler = (0.0, -np.pi / 2, 0.0)
    bpy.ops.geometry_queries.fire_ray()
    (marker,) = created_markers()
    assert marker["distance"] == pytest.approx(2.0, abs=1e-6)
    np.testing.assert_allclose(marker["normal"], (-1.0, 0.0, 0.0), atol=1e-6)


def test_view_direction_comes_from_the_3d_view_the_operator_runs_in(empty_scene):
    """Headless there is no editor in the context, but the startup screen has a 3D view:
    overriding the context with it is what running from that viewport (sidebar, F3) does."""
    from mathutils import Quaternion

    sphere = add_uv_sphere(radius=1.0, location=(5.0, 0.0, 0.0))
    select_only(sphere)
    area = next(a for a in bpy.context.screen.areas if a.type == "VIEW_3D")
    region = next(r for r in area.regions if r.type == "WINDOW")
    area.spaces.active.region_3d.view_rotation = Quaternion((0.0, 1.0, 0.0), -np.pi / 2)
    with bpy.context.temp_override(area=area, region=region):
        bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction_source="VIEW")
    (marker,) = created_markers()
    assert marker["distance"] == pytest.approx(4.0, abs=1e-6)
    np.testing.assert_allclose(marker["normal"], (-1.0, 0.0, 0.0), atol=1e-6)


def test_hit_empty_points_its_z_axis_along_the_normal_and_is_named_after_the_target(empty_scene):
    sphere = add_uv_sphere(name="Ball", radius=1.0)
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(origin=(5, 5, 5), direction=(-1, -1, -1))
    (marker,) = created_markers()
    assert marker.name == "Ball hit" and marker["target"] == "Ball"
    z_axis = np.array(marker.matrix_world.to_3x3().col[2])
    np.testing.assert_allclose(z_axis, unit((1, 1, 1)), atol=1e-6)
    np.testing.assert_allclose(marker.matrix_world.translation, unit((1, 1, 1)), atol=1e-6)
    assert marker.users_collection[0].name == "Geometry Query Hits"


def test_earlier_results_among_the_selection_are_not_targets(empty_scene):
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0))
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1))
    (marker,) = created_markers()
    select_only(sphere, marker)
    bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1))
    assert empty_scene.geometry_queries.last_result.startswith("1 of 1 ray hit; nearest: Sphere")
    select_only(marker)
    assert not bpy.ops.geometry_queries.fire_ray.poll()


def test_fan_fires_the_requested_number_of_rays_within_the_cone(empty_scene):
    big = add_uv_sphere(radius=50.0, location=(0.0, 0.0, -100.0))
    select_only(big)
    bpy.ops.geometry_queries.fire_ray(
        origin=(0, 0, 0),
        direction=(0, 0, -1),
        pattern="FAN",
        fan_count=37,
        fan_angle=np.radians(40.0),
    )
    assert empty_scene.geometry_queries.last_result.startswith("37 of 37 rays hit")
    markers = created_markers()
    assert len(markers) == 37
    angles = [np.degrees(np.arccos(-unit(m["point"])[2])) for m in markers]
    assert max(angles) == pytest.approx(20.0, abs=1e-6)  # the rim: half the apex angle
    assert min(angles) == pytest.approx(0.0, abs=1e-6)  # the axis


def test_fan_rays_outside_the_target_miss(empty_scene):
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -10.0))
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(
        origin=(0, 0, 0),
        direction=(0, 0, -1),
        pattern="FAN",
        fan_count=200,
        fan_angle=np.radians(30.0),
    )
    # The sphere subtends a cone of half-angle asin(1/10): solid-angle fraction of the fan.
    expected = 200 * (1 - np.cos(np.arcsin(0.1))) / (1 - np.cos(np.radians(15.0)))
    hit = int(empty_scene.geometry_queries.last_result.split(" of ")[0])
    assert abs(hit - expected) <= 3


def test_grid_fires_rows_times_columns_parallel_rays_over_the_width(empty_scene):
    big = add_uv_sphere(radius=50.0, location=(0.0, 0.0, -60.0))
    select_only(big)
    bpy.ops.geometry_queries.fire_ray(
        origin=(0, 0, 0),
        direction=(0, 0, -1),
        pattern="GRID",
        grid_rows=5,
        grid_columns=7,
        grid_width=3.0,
    )
    assert empty_scene.geometry_queries.last_result.startswith("35 of 35 rays hit")
    points = np.array([m["point"] for m in created_markers()])
    assert len(points) == 35
    assert np.ptp(points[:, 0]) == pytest.approx(3.0)
    assert np.ptp(points[:, 1]) == pytest.approx(3.0)
    assert len(set(np.round(points[:, 0], 9))) * len(set(np.round(points[:, 1], 9))) == 35


def test_each_ray_keeps_its_nearest_hit_over_all_targets(empty_scene):
    near = add_uv_sphere(name="Near", radius=1.0, location=(0.0, 0.0, -3.0))
    far = add_uv_sphere(name="Far", radius=2.0, location=(0.5, 0.0, -8.0), scale=(1, 1.5, 1))
    tube = add_cylinder(
        name="Tube",
        radius=0.5,
        depth=6.0,
        location=(1.5, 0.0, -5.0),
        rotation=(np.pi / 2, 0.0, 0.0),
    )
    select_only(far, tube, near)
    bpy.ops.geometry_queries.fire_ray(
        origin=(0.5, 0, 0),
        direction=(0, 0, -1),
        pattern="GRID",
        grid_rows=25,
        grid_columns=25,
        grid_width=6.0,
        output="POINT_MESH",
    )
    (cloud,) = created_point_meshes()
    order = list(cloud["targets"])
    assert sorted(order) == ["Far", "Near", "Tube"]

    # The grid as documented: 25 x 25 rays straight down, their origins evenly over the
    # 6 x 6 square around (0.5, 0, 0) (across -Z: the XY plane), both ends included.
    offsets = np.linspace(-3.0, 3.0, 25)
    xs, ys = np.meshgrid(0.5 + offsets, offsets, indexing="ij")
    origins = np.column_stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)])
    down = np.array([0.0, 0.0, -1.0])

    # Each target's exact shape (blender_scenes' closed forms, no core), and the same
    # shape 1e-6 smaller and larger: a ray whose nearest target or hit differs between
    # those grazes a shape, where rounding decides; it is left out.
    def first_hits(scale):
        matrices = {obj.name: world_matrix(obj) for obj in (near, far, tube)}
        solve = {
            "Near": lambda o: ray_ellipsoid(matrices["Near"], 1.0 * scale, o, down),
            "Far": lambda o: ray_ellipsoid(matrices["Far"], 2.0 * scale, o, down),
            "Tube": lambda o: ray_cylinder(matrices["Tube"], 0.5 * scale, 6.0 * scale, o, down),
        }
        distances = np.full((len(origins), len(order)), np.inf)
        for column, name in enumerate(order):
            for row, origin in enumerate(origins):
                found = solve[name](origin)
                if found is not None and found[0] <= 100.0:
                    distances[row, column] = found[0]
        return distances

    distances, inner, outer = first_hits(1.0), first_hits(1 - 1e-6), first_hits(1 + 1e-6)
    expected_hit = np.isfinite(distances).any(axis=1)
    expected_target = np.where(expected_hit, np.argmin(distances, axis=1), -1)
    decided = (np.isfinite(inner).any(axis=1) == np.isfinite(outer).any(axis=1)) & (
        np.where(np.isfinite(inner).any(axis=1), np.argmin(inner, axis=1), -1)
        == np.where(np.isfinite(outer).any(axis=1), np.argmin(outer, axis=1), -1)
    )
    # (the undecided: the columns x = 1 and x = 2 run along the tube's sides, the rows
    # y = +-3 in its cap planes, and a few rays touch a sphere)
    assert decided.sum() >= 0.85 * len(origins)

    mesh = cloud.data
    count = len(mesh.vertices)
    points = np.empty(count * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", points)
    points = points.reshape(-1, 3).astype(np.float64)
    target_index = np.empty(count, dtype=np.int32)
    mesh.attributes["target_index"].data.foreach_get("value", target_index)
    distance = np.empty(count, dtype=np.float32)
    mesh.attributes["distance"].data.foreach_get("value", distance)
    # Each hit on its ray: straight below one grid origin.
    i = np.round((points[:, 0] - 0.5 + 3.0) / 0.25).astype(int)
    j = np.round((points[:, 1] + 3.0) / 0.25).astype(int)
    np.testing.assert_allclose(points[:, :2], origins[i * 25 + j, :2], atol=1e-5)
    rows = i * 25 + j
    assert len(set(rows)) == count  # one hit per ray at most
    got = np.full(len(origins), -1)
    got[rows] = target_index
    np.testing.assert_array_equal(got[decided], expected_target[decided])
    on_decided = decided[rows]
    np.testing.assert_allclose(
        distance[on_decided], distances.min(axis=1)[rows[on_decided]], rtol=1e-6
    )
    assert len(set(expected_target[decided & expected_hit])) == 3  # each is nearest somewhere
    # Grazing rays: a hit is no nearer than the larger shape's entry, its point on the
    # target between the smaller and the larger shape (in the object's own axes), and
    # a ray the smaller shapes block cannot miss.
    undecided = ~decided[rows]
    reached = outer[rows[undecided], target_index[undecided]]
    assert np.all(distance[undecided] >= reached - 1e-6)
    sizes = {"Near": (near, 1.0, None), "Far": (far, 2.0, None), "Tube": (tube, 0.5, 3.0)}
    for point, index in zip(points[undecided], target_index[undecided]):
        obj, radius, half = sizes[order[index]]
        local = np.linalg.solve(world_matrix(obj)[:3, :3], point - world_matrix(obj)[:3, 3])
        if half is None:
            assert abs(np.linalg.norm(local) - radius) <= 2e-6 * radius, (order[index], point)
        else:
            radial, along = np.hypot(*local[:2]) / radius, abs(local[2]) / half
            assert max(radial, along) <= 1 + 2e-6 and max(radial, along) >= 1 - 2e-6, point
    assert got[~decided & np.isfinite(inner).any(axis=1)].min(initial=0) >= 0


def test_point_mesh_has_one_vertex_per_hit_with_a_normal_attribute(empty_scene):
    sphere = add_uv_sphere(radius=2.0, location=(0.0, 0.0, -5.0), scale=(1.0, 0.5, 1.0))
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(
        origin=(0, 0, 0),
        direction=(0, 0, -1),
        pattern="GRID",
        grid_rows=30,
        grid_columns=30,
        grid_width=5.0,
    )
    # 'AUTO' output: more than 64 hits make one point mesh and no empties.
    assert created_markers() == []
    (cloud,) = created_point_meshes()
    mesh = cloud.data
    hits = int(empty_scene.geometry_queries.last_result.split(" of ")[0])
    assert hits > 64 and len(mesh.vertices) == hits and len(mesh.edges) == 0
    attribute = mesh.attributes["hit_normal"]
    assert (attribute.data_type, attribute.domain) == ("FLOAT_VECTOR", "POINT")
    normals = np.empty(hits * 3, dtype=np.float32)
    attribute.data.foreach_get("vector", normals)
    points = np.empty(hits * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", points)
    points, normals = points.reshape(-1, 3), normals.reshape(-1, 3)
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-6)
    # Ellipsoid x^2/4 + y^2 + (z+5)^2/4 = 1: the normal is along its gradient.
    gradient = np.column_stack([points[:, 0] / 4, points[:, 1], (points[:, 2] + 5) / 4])
    np.testing.assert_allclose(
        normals, gradient / np.linalg.norm(gradient, axis=1)[:, None], atol=1e-5
    )
    assert cloud.users_collection[0].name == "Geometry Query Hits"


def test_auto_output_writes_empties_up_to_64_hits(empty_scene):
    big = add_uv_sphere(radius=50.0, location=(0.0, 0.0, -60.0))
    select_only(big)
    bpy.ops.geometry_queries.fire_ray(
        origin=(0, 0, 0),
        direction=(0, 0, -1),
        pattern="GRID",
        grid_rows=8,
        grid_columns=8,
        grid_width=1.0,
    )
    assert len(created_markers()) == 64 and created_point_meshes() == []
    bpy.ops.geometry_queries.fire_ray(
        origin=(0, 0, 0),
        direction=(0, 0, -1),
        pattern="GRID",
        grid_rows=5,
        grid_columns=13,
        grid_width=1.0,
    )
    assert len(created_markers()) == 64 and len(created_point_meshes()) == 1


def test_miss_reports_and_creates_nothing(empty_scene):
    sphere = add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0))
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, 1))
    assert empty_scene.geometry_queries.last_result == "0 of 1 ray hit"
    assert created_markers() == [] and "Geometry Query Hits" not in bpy.data.collections
    bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1), max_distance=3.9)
    assert empty_scene.geometry_queries.last_result == "0 of 1 ray hit"
