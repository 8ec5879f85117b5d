"""Terrain models. SURFACE (the default) is the terrain as Blender draws it: its triangles,
hit from either side, so under ANY object transform (a wall, tilted, mirrored, non-uniformly
scaled) and from above or below, hits agree with Blender's scene.ray_cast (same hit or miss,
distance to 1e-5) and with a float64 Moeller-Trumbore over the evaluated mesh's triangles
(1e-9). SOLID is the ground below the surface in the terrain's local axes."""

import math

import bpy
import numpy as np
import pytest
from blender_scenes import (
    add_displaced_grid,
    blender_ray_cast,
    evaluated_world_triangles,
    fire_single_ray,
    ray_triangles,
    select_only,
    unit,
    world_matrix,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mathutils import Euler, Matrix, Vector


@pytest.fixture
def mapping(addon):
    from geometry_queries.operators import mapping

    return mapping


@pytest.fixture
def nearest(addon):
    from geometry_queries.operators import nearest

    return nearest


TRANSFORMS = {
    "wall": dict(rotation=(math.pi / 2, 0.0, 0.3)),
    "tilted 30 degrees": dict(rotation=(math.radians(30.0), 0.0, 0.4)),
    "mirrored (scale z = -1)": dict(scale=(1.0, 1.0, -1.0)),
    "non-uniform scale": dict(rotation=(0.3, -0.2, 0.9), scale=(2.0, 0.5, 1.5)),
    "mirrored, rotated, scaled": dict(rotation=(2.0, 0.5, -0.7), scale=(1.5, -0.8, 1.2)),
}


def terrain(**transform):
    return add_displaced_grid(
        vertices_per_side=9, size=2.0, strength=0.8, location=(0.5, -1.0, 2.0), **transform
    )


def local_rays(count, seed, side):
    """Rays in the terrain's local space: from above (side +1) or below (side -1), tilted up
    to 40 degrees, aimed at points inside the footprint's inner 80 %; then rays aimed well
    outside the footprint, which must miss."""
    rng = np.random.default_rng(seed)
    origins, directions = [], []
    for k in range(count):
        outside = k >= count - 4
        aim = np.append(rng.uniform(-0.8, 0.8, 2), 0.0)
        if outside:
            aim[:2] = np.sign(aim[:2]) * rng.uniform(1.4, 2.0, 2)
        tilt, azimuth = np.radians(rng.uniform(0, 40)), rng.uniform(0, 2 * np.pi)
        direction = -side * np.array(
            [np.sin(tilt) * np.cos(azimuth), np.sin(tilt) * np.sin(azimuth), np.cos(tilt)]
        )
        if outside:
            direction = np.array([0.0, 0.0, -side])
        origins.append(aim - 4.0 * direction)
        directions.append(direction)
    return np.array(origins), np.array(directions)


def to_world(matrix, origins, directions):
    world_origins = origins @ matrix[:3, :3].T + matrix[:3, 3]
    world_directions = np.array([unit(d) for d in directions @ matrix[:3, :3].T])
    return world_origins, world_directions


@pytest.mark.parametrize("side", [1, -1], ids=["from above", "from below"])
@pytest.mark.parametrize("transform", TRANSFORMS, ids=list(TRANSFORMS))
def test_surface_terrain_agrees_with_blender_under_any_transform(
    empty_scene, mapping, nearest, transform, side
):
    grid = terrain(**TRANSFORMS[transform])
    matrix = world_matrix(grid)
    origins, directions = to_world(matrix, *local_rays(24, seed=7, side=side))
    recognized = mapping.recognize(grid, bpy.context.evaluated_depsgraph_get(), "SURFACE")
    hits = nearest.nearest_ray_hits([recognized], origins, directions, np.inf)
    triangles = evaluated_world_triangles(grid)
    for ray, (origin, direction) in enumerate(zip(origins, directions)):
        blender = blender_ray_cast(origin, direction)
        exact = ray_triangles(triangles, origin, direction)
        assert hits.hit[ray] == (blender is not None) == (exact is not None), ray
        if exact is None:
            continue
        distance = hits.distance[ray]
        assert abs(distance - blender[0]) <= 1e-5 * max(1.0, distance)
        assert abs(distance - exact[0]) <= 1e-9 * max(1.0, distance)
        normal = hits.normal[ray]
        assert normal @ direction < 0.0  # faces the ray, on the underside too
        assert abs(abs(normal @ exact[2]) - 1.0) <= 1e-9
    assert hits.hit.sum() >= 18

    # The operator's default is SURFACE: the first ray end to end.
    select_only(grid)
    found = fire_single_ray(origins[0], directions[0])
    assert abs(found[0] - blender_ray_cast(origins[0], directions[0])[0]) <= 1e-5


scales = st.floats(0.25, 4.0).flatmap(lambda size: st.sampled_from([size, -size]))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    angles=st.tuples(*[st.floats(-math.pi, math.pi)] * 3),
    scale=st.tuples(scales, scales, scales),
    location=st.tuples(*[st.floats(-5.0, 5.0)] * 3),
    seed=st.integers(0, 2**16),
)
def test_surface_terrain_agrees_with_blender_for_any_placement(
    empty_scene, mapping, nearest, angles, scale, location, seed
):
    """Property: any rotation, any (mirroring, non-uniform) scale, any location."""
    grid = bpy.data.objects.get("Terrain") or terrain()
    grid.matrix_world = (
        Matrix.Translation(Vector(location))
        @ Euler(angles).to_matrix().to_4x4()
        @ Matrix.Diagonal((*scale, 1.0))
    )
    bpy.context.view_layer.update()
    matrix = world_matrix(grid)
    side = 1 if seed % 2 else -1
    origins, directions = to_world(matrix, *local_rays(10, seed=seed, side=side))
    recognized = mapping.recognize(grid, bpy.context.evaluated_depsgraph_get())
    hits = nearest.nearest_ray_hits([recognized], origins, directions, np.inf)
    for ray, (origin, direction) in enumerate(zip(origins, directions)):
        blender = blender_ray_cast(origin, direction)
        assert hits.hit[ray] == (blender is not None), ray
        if blender is not None:
            distance = hits.distance[ray]
            assert abs(distance - blender[0]) <= 1e-5 * max(1.0, distance)
            assert hits.normal[ray] @ direction < 0.0


def test_solid_terrain_is_the_ground_below_its_local_surface(empty_scene, mapping):
    """SOLID: a ray starting under the surface (in the terrain's local axes) hits at once,
    whichever way it points; mirrored by scale z = -1, that ground lies ABOVE the surface
    in the world. SURFACE: the same rays hit only the triangles, as scene.ray_cast does."""
    upright = terrain()
    mirrored = terrain(scale=(1.0, 1.0, -1.0))
    mirrored.location = (10.0, 0.0, 2.0)
    bpy.context.view_layer.update()
    for grid, world_z in ((upright, 1.0), (mirrored, 3.0)):
        select_only(grid)
        # Local z = -1 is under the surface (its heights stay within 0.4 of local z = 0).
        origin = (world_matrix(grid) @ np.array([0.1, 0.2, -1.0, 1.0]))[:3]
        assert origin[2] == pytest.approx(world_z)
        for direction in ((0.0, 0.0, 1.0), (0.0, 0.0, -1.0), (1.0, 0.0, 0.0)):
            solid = fire_single_ray(origin, direction, terrain_model="SOLID")
            assert solid[0] == 0.0
            surface = fire_single_ray(origin, direction, terrain_model="SURFACE")
            blender = blender_ray_cast(origin, direction)
            assert (surface is None) == (blender is None)
            if blender is not None:
                assert abs(surface[0] - blender[0]) <= 1e-5


def test_the_panel_and_both_operators_carry_the_terrain_model(empty_scene, addon):
    from test_ui import draw_panel

    settings = empty_scene.geometry_queries
    assert settings.terrain_model == "SURFACE"
    for idname in ("fire_ray", "sphere_cast"):
        properties = getattr(bpy.ops.geometry_queries, idname).get_rna_type().properties
        assert properties["terrain_model"].default == "SURFACE"
        assert properties["terrain_model"].enum_items.keys() == ["SURFACE", "SOLID"]
    settings.terrain_model = "SOLID"
    record = draw_panel(bpy.context)
    assert "terrain_model" in record["props"]
    buttons = {button.idname: button for button in record["operators"]}
    assert buttons["geometry_queries.fire_ray"].terrain_model == "SOLID"
    assert buttons["geometry_queries.sphere_cast"].terrain_model == "SOLID"


def test_panel_describes_each_object_in_the_chosen_model(empty_scene, mapping):
    grid = terrain()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for model in ("SURFACE", "SOLID"):
        recognized = mapping.recognize(grid, depsgraph, model)
        assert recognized.shape.shape.solid == (model == "SOLID")
        assert recognized.description == "Terrain 9x9"
    with pytest.raises(ValueError, match="terrain_model must be one of SURFACE, SOLID"):
        mapping.recognize(grid, depsgraph, "HOLLOW")


@pytest.mark.parametrize("terrain_model", ["SURFACE", "SOLID"])
def test_a_spike_of_1e12_moves_no_hit_elsewhere(empty_scene, mapping, nearest, terrain_model):
    """One vertex raised to 1e12 by a shape key: the lattice is still recognised (its
    tolerance follows x and y only) and rays straight down (in local axes) onto cells away
    from the spike's four cells hit exactly where they hit without it, to 1e-9."""
    grid = terrain(rotation=(0.2, 0.1, 0.3))
    grid.modifiers["Displace"].direction = "Z"  # (along the normals, the spike's would tilt)
    matrix = world_matrix(grid)
    aims = np.random.default_rng(3).uniform(-0.95, 0.95, (40, 2))
    aims = aims[(np.abs(aims) > 0.3).any(axis=1)]  # the spike's cells: |x|, |y| <= 0.25
    local_origins = np.column_stack([aims, np.full(len(aims), 3.0)])
    local_directions = np.tile([0.0, 0.0, -1.0], (len(aims), 1))
    origins, directions = to_world(matrix, local_origins, local_directions)

    def hits():
        depsgraph = bpy.context.evaluated_depsgraph_get()
        target = mapping.recognize(grid, depsgraph, terrain_model)
        return nearest.nearest_ray_hits([target], origins, directions, np.inf)

    before = hits()
    grid.shape_key_add(name="Basis")
    spike = grid.shape_key_add(name="Spike")
    spike.data[40].co.z = 1e12  # the centre vertex of the 9 x 9 lattice
    spike.value = 1.0
    after = hits()
    assert before.hit.all() and after.hit.all() and len(aims) >= 20
    np.testing.assert_allclose(after.distance, before.distance, rtol=1e-9)
    np.testing.assert_allclose(after.normal, before.normal, atol=1e-9)
