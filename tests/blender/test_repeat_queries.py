"""Repeated queries on an unchanged terrain reuse what the first one built: the recognised
shape without reading the mesh's topology again, and for sphere casts the terrain folded
into its placement (with the arrays its casts build). An edit, a frame change or a new
placement makes them anew. Answers stay bit for bit those of core on a freshly built shape."""

import bpy
import numpy as np
import pytest
from blender_scenes import add_displaced_grid, created_markers, float32, select_only

START, END, RADIUS = (0.1, 0.2, 4.0), (0.3, -0.1, -4.0), 0.15


@pytest.fixture
def modules(addon):
    from geometry_queries.operators import mapping, shape_cache

    shape_cache.SHAPES.clear()
    yield mapping, shape_cache
    shape_cache.SHAPES.clear()


@pytest.fixture
def terrain(empty_scene):
    grid = add_displaced_grid(
        vertices_per_side=33,
        size=2.0,
        strength=0.5,
        location=(0.2, -0.1, 0.3),
        rotation=(0.0, 0.0, 0.4),
        scale=(1.5, 2.0, 0.8),
    )
    select_only(grid)
    return grid


def cast_through_the_operator():
    """(distance, centre, point) of the one cast's contact, float64 as stored."""
    bpy.ops.geometry_queries.sphere_cast(start=START, end=END, radius=RADIUS, output="EMPTIES")
    markers = {obj.name: obj for obj in created_markers()}
    centre, contact = markers["Terrain cast centre"], markers["Terrain cast contact"]
    found = centre["distance"], tuple(centre["point"]), tuple(contact["point"])
    bpy.ops.geometry_queries.clear_hits()
    return found


def cast_by_core_on_a_fresh_shape(mapping, shape_cache, grid):
    """The same cast by core.sphere_cast on the terrain recognised anew (cache emptied)."""
    from geometry_queries import core

    shape_cache.SHAPES.clear()
    target = mapping.recognize(grid, bpy.context.evaluated_depsgraph_get())
    cast_target = mapping.as_cast_target(target.shape, target.kind)
    # As the operator's properties hold them: float32.
    start, end = (float32(point)[np.newaxis] for point in (START, END))
    casts = core.sphere_cast(cast_target, start, end, float(float32(RADIUS)))
    assert casts.hit[0]
    return float(casts.distance[0]), tuple(casts.center[0]), tuple(casts.point[0])


def folded_terrain(mapping, grid):
    """What core casts against for the terrain as the operator maps it now."""
    target = mapping.recognize(grid, bpy.context.evaluated_depsgraph_get())
    return mapping.as_cast_target(target.shape, target.kind).cast_target()


def test_repeated_sphere_casts_reuse_the_cast_target_until_the_terrain_is_edited(terrain, modules):
    mapping, shape_cache = modules
    first = cast_through_the_operator()
    target = folded_terrain(mapping, terrain)
    reads, hits = shape_cache.SHAPES.topology_reads, shape_cache.SHAPES.hits
    for _ in range(3):
        assert cast_through_the_operator() == first
    assert folded_terrain(mapping, terrain) is target  # not folded again
    assert shape_cache.SHAPES.hits == hits + 4
    assert shape_cache.SHAPES.topology_reads == reads  # positions compared, topology not read
    assert cast_by_core_on_a_fresh_shape(mapping, shape_cache, terrain) == first

    terrain.modifiers["Displace"].strength = 0.7
    edited = cast_through_the_operator()
    assert edited != first
    assert folded_terrain(mapping, terrain) is not target
    assert cast_by_core_on_a_fresh_shape(mapping, shape_cache, terrain) == edited


def test_a_new_placement_folds_again_and_the_old_one_is_not_kept(terrain, modules):
    mapping, shape_cache = modules
    cast_through_the_operator()
    target = folded_terrain(mapping, terrain)
    terrain.location.z += 0.05
    bpy.context.view_layer.update()
    moved = cast_through_the_operator()
    assert folded_terrain(mapping, terrain) is not target
    assert cast_by_core_on_a_fresh_shape(mapping, shape_cache, terrain) == moved


def test_the_topology_is_compared_again_after_a_geometry_update_or_a_frame_change(terrain, modules):
    mapping, shape_cache = modules
    first = cast_through_the_operator()
    reads = shape_cache.SHAPES.topology_reads
    bpy.context.scene.frame_set(2)
    assert cast_through_the_operator() == first
    assert shape_cache.SHAPES.topology_reads == reads + 1
    # A geometry update that leaves every position as it was (a modifier shown again).
    terrain.modifiers.new("Smooth", "SMOOTH").show_viewport = False
    assert cast_through_the_operator() == first
    assert shape_cache.SHAPES.topology_reads == reads + 2
    assert cast_through_the_operator() == first
    assert shape_cache.SHAPES.topology_reads == reads + 2


def test_repeated_rays_read_no_topology(terrain, modules):
    mapping, shape_cache = modules

    def fire():
        bpy.ops.geometry_queries.fire_ray(
            origin=START, direction=np.subtract(END, START), output="EMPTIES"
        )
        (marker,) = [m for m in created_markers() if m.empty_display_type != "SPHERE"]
        found = marker["distance"], tuple(marker["point"])
        bpy.ops.geometry_queries.clear_hits()
        return found

    first = fire()
    reads = shape_cache.SHAPES.topology_reads
    assert fire() == fire() == first
    assert shape_cache.SHAPES.topology_reads == reads
