"""Meshes far from their object's origin (the transform applied, so the vertices themselves
sit at x = 700 or 5000): recognised, with the exact parameters the user modelled, although
float32 vertices there are only good to an ulp of the coordinate (6e-5 at 700, 4.9e-4 at
5000), far more than 1e-5 of a 0.1 m sphere's size."""

import bpy
import numpy as np
import pytest
from blender_scenes import (
    add_cylinder,
    add_displaced_grid,
    add_uv_sphere,
    evaluated_world_triangles,
    fire_single_ray,
    float32,
    ray_cylinder,
    ray_ellipsoid,
    ray_triangles,
    select_only,
    unit,
)


@pytest.fixture
def mapping(addon):
    from geometry_queries.operators import mapping

    return mapping


def recognize(mapping, obj):
    return mapping.recognize(obj, bpy.context.evaluated_depsgraph_get())


def moved_into_the_mesh(obj, location):
    """``obj`` moved to ``location`` with its transform applied: the object's origin stays
    at the world origin, the vertices go far away."""
    obj.location = location
    bpy.context.view_layer.update()
    select_only(obj)
    bpy.ops.object.transform_apply(location=True, rotation=True, scale=True)
    return obj


def translation(location):
    matrix = np.eye(4)
    matrix[:3, 3] = location
    return matrix


def rays_towards(centre, size, count, seed):
    """Rays from 5 sizes away aimed at points within half a size of ``centre``, as the
    operator's float32 properties hold them."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        direction = unit(rng.normal(size=3))
        aim = np.asarray(centre, float) + rng.uniform(-0.5, 0.5, 3) * size
        yield float32(aim - 5.0 * size * direction), float32(direction)


@pytest.mark.parametrize(
    "radius, centre", [(0.1, (120.0, 80.0, 10.0)), (1.0, (700.0, 0.0, 0.0)), (1.0, (5000, 0, 0))]
)
def test_far_sphere_is_the_exact_sphere(empty_scene, mapping, radius, centre):
    sphere = moved_into_the_mesh(add_uv_sphere(radius=radius), centre)
    recognized = recognize(mapping, sphere)
    assert recognized.kind == "SPHERE"
    assert recognized.shape.shape.radius == radius
    np.testing.assert_array_equal(recognized.shape.shape.center, centre)
    for origin, direction in rays_towards(centre, 2 * radius, 8, seed=3):
        expected = ray_ellipsoid(translation(centre), radius, origin, direction)
        found = fire_single_ray(origin, direction)
        if expected is None:
            assert found is None
            continue
        assert abs(found[0] - expected[0]) <= 1e-12 * np.abs(centre).max()
        np.testing.assert_allclose(found[2], expected[2], atol=1e-9)


def test_far_cylinder_is_the_exact_cylinder(empty_scene, mapping):
    centre = np.array([3000.0, 0.0, 0.0])
    cylinder = moved_into_the_mesh(add_cylinder(radius=0.5, depth=1.5), centre)
    recognized = recognize(mapping, cylinder)
    shape = recognized.shape.shape
    assert recognized.kind == "CYLINDER" and shape.radius == 0.5
    assert sorted([shape.p0.tolist(), shape.p1.tolist()]) == [
        [3000.0, 0.0, -0.75],
        [3000.0, 0.0, 0.75],
    ]
    for origin, direction in rays_towards(centre, 1.0, 8, seed=5):
        expected = ray_cylinder(translation(centre), 0.5, 1.5, origin, direction)
        found = fire_single_ray(origin, direction)
        assert (found is None) == (expected is None)
        if expected is not None:
            assert abs(found[0] - expected[0]) <= 1e-9


def test_far_terrain_is_its_lattice(empty_scene, mapping):
    """An 11 x 11 grid of spacing 0.2 around (700, 700): x = 699.2 is no float32 number (the
    vertex is 1.5e-5 off), more than 1e-5 of the grid's size. The terrain is the lattice
    the user made, with the vertices' heights."""
    grid = add_displaced_grid(vertices_per_side=11, size=2.0, strength=0.5)
    bpy.ops.object.modifier_apply(modifier="Displace")
    grid = moved_into_the_mesh(grid, (700.0, 700.0, 0.0))
    recognized = recognize(mapping, grid)
    field = recognized.shape.shape
    assert recognized.description == "Terrain 11x11"
    assert field.origin == (699.0, 699.0)
    np.testing.assert_allclose(field.spacing, (0.2, 0.2), rtol=1e-12)
    # Tilted rays aimed at (x, y). The exact terrain: the triangles Blender draws with their
    # corners moved onto the lattice the user made (x = 699 + 0.2 i; float32 moved them up
    # to 3e-5 off it).
    triangles = evaluated_world_triangles(grid)
    triangles[..., :2] = 699.0 + 0.2 * np.round((triangles[..., :2] - 699.0) / 0.2)
    rng = np.random.default_rng(11)
    points = [(699.2, 699.8), (700.0, 700.0)] + [
        tuple(p) for p in rng.uniform(699.1, 700.9, (6, 2))
    ]
    for x, y in points:
        direction = unit(np.append(rng.uniform(-0.3, 0.3, 2), -1.0))
        origin = np.array([x, y, 0.0]) - 6.0 * direction
        found = fire_single_ray(float32(origin), float32(direction))
        expected = ray_triangles(triangles, float32(origin), float32(direction))
        assert found is not None and found[3] == "Terrain"
        assert abs(found[0] - expected[0]) <= 1e-9 * 700
