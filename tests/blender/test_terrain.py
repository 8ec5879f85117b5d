"""Displaced grids as terrains: the lattice, the heights and Blender's own triangle
diagonals become a Heightfield, whose hits match a float64 Moeller-Trumbore over the
evaluated mesh's loop triangles (1e-9) and Blender's scene.ray_cast (float32)."""

import bpy
import numpy as np
import pytest
from blender_scenes import (
    add_displaced_grid,
    blender_ray_cast,
    evaluated_world_triangles,
    fire_single_ray,
    float32,
    ray_triangles,
    select_only,
    unit,
    world_matrix,
)


@pytest.fixture
def mapping(addon):
    from geometry_queries.operators import mapping

    return mapping


def recognize(mapping, obj):
    return mapping.recognize(obj, bpy.context.evaluated_depsgraph_get())


def rays_from_above(matrix, count, seed, half_size=1.0):
    """Rays from high above aimed at points inside the terrain's footprint, tilted <= 25 deg."""
    rng = np.random.default_rng(seed)
    rays = []
    for _ in range(count):
        local_aim = np.append(rng.uniform(-0.8, 0.8, 2) * half_size, 0.0)
        aim = matrix[:3, :3] @ local_aim + matrix[:3, 3]
        tilt, azimuth = np.radians(rng.uniform(0, 25)), rng.uniform(0, 2 * np.pi)
        down = -np.array(
            [np.sin(tilt) * np.cos(azimuth), np.sin(tilt) * np.sin(azimuth), np.cos(tilt)]
        )
        origin = aim - 6.0 * down
        rays.append((float32(origin), float32(down)))
    return rays


def test_displaced_grid_is_a_terrain_with_its_vertex_heights(empty_scene, mapping):
    grid = add_displaced_grid(vertices_per_side=9, size=2.0)
    recognized = recognize(mapping, grid)
    assert (recognized.kind, recognized.description) == ("TERRAIN", "Terrain 9x9")
    field = recognized.shape.shape
    assert field.spacing == (0.25, 0.25) and field.origin == (-1.0, -1.0)
    evaluated = grid.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    z = np.array([v.co.z for v in evaluated.vertices])
    assert np.ptp(z) > 0.05  # displaced for real
    np.testing.assert_array_equal(np.sort(field.heights.ravel()), np.sort(z.astype(np.float64)))


def test_simple_subdivision_keeps_the_lattice(empty_scene, mapping):
    grid = add_displaced_grid(vertices_per_side=9, size=2.0)
    subdivide = grid.modifiers.new("Subdivide", "SUBSURF")
    subdivide.subdivision_type = "SIMPLE"
    subdivide.levels = 1
    assert recognize(mapping, grid).description == "Terrain 17x17"


def test_grid_with_a_vertex_moved_sideways_or_a_face_missing_is_no_terrain(empty_scene, mapping):
    grid = add_displaced_grid(vertices_per_side=9)
    grid.data.vertices[40].co.x += 0.05
    with pytest.raises(mapping.NotRecognized, match="not a terrain: its vertices do not form"):
        recognize(mapping, grid)

    holed = add_displaced_grid(name="Holed", vertices_per_side=9)
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_all(action="DESELECT")
    bpy.ops.object.mode_set(mode="OBJECT")
    holed.data.polygons[10].select = True
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.delete(type="ONLY_FACE")
    bpy.ops.object.mode_set(mode="OBJECT")
    with pytest.raises(mapping.NotRecognized, match="faces do not cover the 9x9 vertex lattice"):
        recognize(mapping, holed)


def test_diagonals_are_the_ones_blender_draws(empty_scene, mapping):
    """A Triangulate modifier (shortest diagonal) splits cells both ways; the heightfield
    must carry each cell's split."""
    grid = add_displaced_grid(vertices_per_side=9, strength=0.8)
    triangulate = grid.modifiers.new("Triangulate", "TRIANGULATE")
    triangulate.quad_method = "SHORTEST_DIAGONAL"
    field = recognize(mapping, grid).shape.shape
    assert field.diagonals is not None
    assert 0 < field.diagonals.sum() < field.diagonals.size


@pytest.mark.parametrize("quad_method", [None, "SHORTEST_DIAGONAL"])
def test_hits_on_a_transformed_terrain_match_its_triangles(empty_scene, quad_method):
    grid = add_displaced_grid(
        vertices_per_side=9,
        size=2.0,
        strength=0.8,
        location=(1.0, -2.0, 0.5),
        rotation=(0.15, -0.1, 0.7),
        scale=(2.0, 1.5, 0.8),
    )
    if quad_method:
        grid.modifiers.new("Triangulate", "TRIANGULATE").quad_method = quad_method
    select_only(grid)
    matrix = world_matrix(grid)
    triangles = evaluated_world_triangles(grid)
    for origin, direction in rays_from_above(matrix, 12, seed=4):
        found = fire_single_ray(origin, direction)
        expected = ray_triangles(triangles, origin, direction)
        assert found is not None and expected is not None
        scale = max(1.0, expected[0])
        assert abs(found[0] - expected[0]) <= 1e-9 * scale
        np.testing.assert_allclose(found[1], expected[1], atol=1e-9 * scale)
        np.testing.assert_allclose(found[2], expected[2], atol=1e-9)
        blender = blender_ray_cast(origin, unit(direction))
        assert abs(blender[0] - found[0]) <= 1e-5
        assert found[3] == "Terrain"


def test_rays_beside_the_terrain_miss(empty_scene):
    grid = add_displaced_grid(vertices_per_side=9, size=2.0)
    select_only(grid)
    assert fire_single_ray((1.2, 0.0, 5.0), (0.0, 0.0, -1.0)) is None
    assert fire_single_ray((0.0, 0.0, 5.0), (0.0, 0.0, 1.0)) is None
