"""The shape cache (operators/shape_cache.py) never serves stale data: after any edit of the
evaluated mesh (a Displace strength that makes Blender flip some quads, one vertex moved,
the same positions triangulated the other way, a sphere opened or resized) the next query
uses the new surface and the new loop-triangle diagonals; without an edit, repeated queries
reuse the recognised shape and give bit-identical results."""

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
    ray_triangles,
    select_only,
)


@pytest.fixture
def modules(addon):
    from geometry_queries.operators import mapping, shape_cache

    shape_cache.SHAPES.clear()
    yield mapping, shape_cache
    shape_cache.SHAPES.clear()


def recognize(mapping, obj):
    return mapping.recognize(obj, bpy.context.evaluated_depsgraph_get())


def blender_diagonals(obj):
    """Each cell's diagonal as Blender triangulates the evaluated mesh, read from
    ``loop_triangles`` without the add-on: True where a triangle holds both corners
    (i+1, j) and (i, j+1) of its cell."""
    mesh = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    xy = np.array([vertex.co[:2] for vertex in mesh.vertices])
    low, high = xy.min(axis=0), xy.max(axis=0)
    count = np.array([len(np.unique(np.round(xy[:, k], 5))) for k in (0, 1)])
    lattice = np.rint((xy - low) / (high - low) * (count - 1)).astype(int)
    diagonals = np.zeros((count[1] - 1, count[0] - 1), dtype=bool)
    for triangle in mesh.loop_triangles:
        corners = {tuple(lattice[v]) for v in triangle.vertices}
        i, j = min(c[0] for c in corners), min(c[1] for c in corners)
        if {(i + 1, j), (i, j + 1)} <= corners:
            diagonals[j, i] = True
    return diagonals


def assert_hits_match_the_evaluated_triangles(grid, seed):
    """Rays from above land on the mesh's current loop triangles (float64, 1e-9)."""
    triangles = evaluated_world_triangles(grid)
    rng = np.random.default_rng(seed)
    direction = float32((0.1, -0.05, -1.0))
    for aim in rng.uniform(-0.7, 0.7, (10, 2)):
        origin = float32((aim[0] - 0.5, aim[1] + 0.25, 5.0))  # reaches z = 0 at the aim
        found = fire_single_ray(origin, direction)
        expected = ray_triangles(triangles, origin, direction)
        assert found is not None and expected is not None
        assert abs(found[0] - expected[0]) <= 1e-9 * max(1.0, expected[0])
        np.testing.assert_allclose(found[2], expected[2], atol=1e-9)


def test_repeated_queries_reuse_the_terrain_and_give_identical_hits(empty_scene, modules):
    mapping, shape_cache = modules
    grid = add_displaced_grid(vertices_per_side=33, size=2.0, strength=0.5)
    select_only(grid)
    first = recognize(mapping, grid)
    second = recognize(mapping, grid)
    assert second.shape.shape is first.shape.shape  # reused, not re-read
    assert shape_cache.SHAPES.hits == 1

    def fire():
        bpy.ops.geometry_queries.fire_ray(
            origin=(0.0, 0.0, 4.0),
            direction=(0.0, 0.0, -1.0),
            pattern="GRID",
            grid_rows=20,
            grid_columns=20,
            grid_width=1.8,
            output="POINT_MESH",
        )
        cloud = bpy.data.objects["Ray Hits"]
        points = np.empty(len(cloud.data.vertices) * 3, dtype=np.float32)
        cloud.data.attributes["position"].data.foreach_get("vector", points)
        normals = np.empty_like(points)
        cloud.data.attributes["hit_normal"].data.foreach_get("vector", normals)
        bpy.ops.geometry_queries.clear_hits()
        return points, normals

    runs = [fire() for _ in range(3)]
    assert len(runs[0][0]) == 3 * 400
    for points, normals in runs[1:]:
        assert points.tobytes() == runs[0][0].tobytes()
        assert normals.tobytes() == runs[0][1].tobytes()
    assert shape_cache.SHAPES.hits == 4


def test_a_displace_edit_that_flips_quads_is_seen(empty_scene, modules):
    """Same topology, new positions: Blender now splits some quads along the other diagonal
    (the corner order alone does not tell which); the second query must use the new split."""
    mapping, shape_cache = modules
    grid = add_displaced_grid(vertices_per_side=17, size=2.0, strength=0.4)
    select_only(grid)
    before = recognize(mapping, grid).shape.shape
    assert not blender_diagonals(grid).any() and not before.diagonals.any()
    assert_hits_match_the_evaluated_triangles(grid, seed=1)

    grid.modifiers["Displace"].strength = 3.0
    flipped = blender_diagonals(grid)
    assert flipped.sum() >= 5  # the edit really changes the triangulation
    after = recognize(mapping, grid).shape.shape
    assert after is not before
    np.testing.assert_array_equal(after.diagonals, flipped)
    np.testing.assert_allclose(after.heights, 7.5 * before.heights, rtol=1e-5, atol=1e-6)
    assert_hits_match_the_evaluated_triangles(grid, seed=2)


def test_moving_one_vertex_is_seen(empty_scene, modules):
    mapping, _ = modules
    grid = add_displaced_grid(vertices_per_side=9, size=2.0, strength=0.3)
    grid.modifiers.remove(grid.modifiers["Displace"])
    select_only(grid)
    above_centre = ((0.0, 0.0, 5.0), (0.0, 0.0, -1.0))
    assert fire_single_ray(*above_centre)[0] == pytest.approx(5.0, abs=1e-12)
    grid.data.vertices[40].co.z = 0.5  # the centre vertex of the 9 x 9 grid
    grid.data.update()
    assert fire_single_ray(*above_centre)[0] == pytest.approx(4.5, abs=1e-7)
    assert recognize(mapping, grid).shape.shape.heights.max() == np.float32(0.5)


def test_same_positions_other_triangulation_is_seen(empty_scene, modules):
    """A Triangulate modifier switched from Fixed to Fixed Alternate keeps every position
    and changes only the faces: the cache must compare topology too."""
    mapping, shape_cache = modules
    grid = add_displaced_grid(vertices_per_side=9, size=2.0, strength=0.6)
    triangulate = grid.modifiers.new("Triangulate", "TRIANGULATE")
    triangulate.quad_method = "FIXED"
    select_only(grid)
    fixed = recognize(mapping, grid).shape.shape
    np.testing.assert_array_equal(fixed.diagonals, blender_diagonals(grid))
    assert_hits_match_the_evaluated_triangles(grid, seed=3)

    triangulate.quad_method = "FIXED_ALTERNATE"
    hits = shape_cache.SHAPES.hits
    alternate = recognize(mapping, grid).shape.shape
    assert shape_cache.SHAPES.hits == hits  # a miss: the corners differ
    np.testing.assert_array_equal(alternate.heights, fixed.heights)  # same positions
    np.testing.assert_array_equal(alternate.diagonals, blender_diagonals(grid))
    np.testing.assert_array_equal(alternate.diagonals, ~fixed.diagonals)
    assert_hits_match_the_evaluated_triangles(grid, seed=4)


def flipped_grid(name, vertices_per_side):
    """A displaced grid whose triangulation flips some quads (the terrain then holds the
    float copy of its diagonals too: the most a grid terrain costs)."""
    grid = add_displaced_grid(name=name, vertices_per_side=vertices_per_side, strength=3.0)
    assert blender_diagonals(grid).any()
    return grid


def mirror_bytes(side):
    """What a SURFACE terrain adds once rays came from above and below: the heights
    negated and their own max hierarchy (shape_cache's docstring)."""
    from geometry_queries.operators import shape_cache

    return 8 * side**2 + shape_cache.hierarchy_bytes(side)


def cast_up_and_down(target):
    """Rays at a recognised terrain from above and from below (SURFACE: the first ray
    from below builds the terrain's mirror image)."""
    from geometry_queries import core

    for z, dz in ((5.0, -1.0), (-5.0, 1.0)):
        hits = core.raycast(target.shape, [[0.1, 0.2, z], [-0.3, 0.4, z]], [[0.0, 0.0, dz]] * 2)
        assert hits.hit.all()


@pytest.mark.parametrize("side", [17, 65])
def test_the_documented_cost_of_a_grid_terrain_is_what_the_cache_holds(empty_scene, modules, side):
    """Measured at store (seen from above, hierarchy built) and again once rays came from
    below; the formula counts every block level of the hierarchy, the terrain leaves out
    those that skip nothing (a few hundred bytes here)."""
    mapping, shape_cache = modules
    grid = flipped_grid("Terrain", side)
    target = recognize(mapping, grid)
    without_kernel = shape_cache.grid_terrain_bytes(side) - shape_cache.kernel_bytes(side)
    from_above = without_kernel - mirror_bytes(side)
    assert from_above - 1000 <= shape_cache.SHAPES.nbytes <= from_above
    cast_up_and_down(target)
    # The compiled kernel's arguments exist once a kernel answered (the latency rule).
    compiled = target.shape.shape._kernel_data is not None
    expected = without_kernel + (shape_cache.kernel_bytes(side) if compiled else 0)
    assert expected - 2000 <= shape_cache.SHAPES.nbytes <= expected


def test_the_budget_is_a_quarter_of_a_4096_terrain_and_holds_a_1500_one(modules):
    _, shape_cache = modules
    assert shape_cache.MAX_BYTES == shape_cache.grid_terrain_bytes(4096) // 4
    assert 500 * 2**20 < shape_cache.MAX_BYTES < 520 * 2**20
    assert shape_cache.grid_terrain_bytes(1500) < shape_cache.MAX_BYTES
    assert shape_cache.SHAPES.max_bytes == shape_cache.MAX_BYTES


def test_a_terrain_within_the_budget_is_cached_until_edited(empty_scene, modules, monkeypatch):
    """The budget set to exactly one 33 x 33 terrain: it is cached and reused; an edit is
    seen (a new shape, cached in its place); a 34 x 34 terrain does not fit."""
    mapping, shape_cache = modules
    grid = flipped_grid("Terrain", 33)
    first = recognize(mapping, grid).shape.shape
    monkeypatch.setattr(shape_cache, "MAX_BYTES", shape_cache.SHAPES.nbytes)
    assert "Terrain" in shape_cache.SHAPES
    assert recognize(mapping, grid).shape.shape is first  # the query, not the build
    assert shape_cache.SHAPES.hits == 1

    grid.modifiers["Displace"].strength = 2.0
    edited = recognize(mapping, grid).shape.shape
    assert edited is not first and shape_cache.SHAPES.hits == 1
    np.testing.assert_allclose(edited.heights, first.heights * (2.0 / 3.0), rtol=1e-5, atol=1e-6)
    assert recognize(mapping, grid).shape.shape is edited
    assert shape_cache.SHAPES.hits == 2

    bigger = flipped_grid("Bigger", 34)
    recognize(mapping, bigger)
    assert "Bigger" not in shape_cache.SHAPES  # larger than the whole budget
    assert "Terrain" in shape_cache.SHAPES  # and it evicted nothing for it


def test_least_recently_used_terrains_make_room(empty_scene, modules, monkeypatch):
    mapping, shape_cache = modules
    a, b, c = (flipped_grid(name, 17) for name in ("A", "B", "C"))
    recognize(mapping, a)
    monkeypatch.setattr(shape_cache, "MAX_BYTES", 2 * shape_cache.SHAPES.nbytes)
    recognize(mapping, b)
    recognize(mapping, a)  # A is now the most recently used
    recognize(mapping, c)
    assert ("A" in shape_cache.SHAPES, "B" in shape_cache.SHAPES) == (True, False)
    assert "C" in shape_cache.SHAPES
    assert shape_cache.SHAPES.nbytes <= shape_cache.MAX_BYTES


def test_a_terrain_that_grows_makes_older_ones_leave(empty_scene, modules, monkeypatch):
    """Two terrains fit as stored; once A is hit from below it holds its mirror image too,
    and the next lookup finds the budget exceeded: B, the least recently used, leaves."""
    mapping, shape_cache = modules
    a, b = flipped_grid("A", 17), flipped_grid("B", 17)
    target = recognize(mapping, a)
    recognize(mapping, b)
    monkeypatch.setattr(shape_cache, "MAX_BYTES", shape_cache.SHAPES.nbytes + 1000)
    recognize(mapping, a)
    assert len(shape_cache.SHAPES) == 2
    cast_up_and_down(target)
    recognize(mapping, a)
    assert "A" in shape_cache.SHAPES and "B" not in shape_cache.SHAPES
    assert shape_cache.SHAPES.nbytes <= shape_cache.MAX_BYTES


def test_many_small_shapes_are_all_cached(empty_scene, modules):
    """Bounded by memory, not by a count: twenty spheres and terrains all stay."""
    mapping, shape_cache = modules
    objects = [add_uv_sphere(name=f"Sphere {k}", location=(3 * k, 0, 0)) for k in range(10)]
    objects += [add_displaced_grid(name=f"Terrain {k}", vertices_per_side=9) for k in range(10)]
    for obj in objects:
        recognize(mapping, obj)
    for obj in objects:
        recognize(mapping, obj)
    assert len(shape_cache.SHAPES) == 20 and shape_cache.SHAPES.hits == 20


def test_a_sphere_resized_or_opened_is_seen(empty_scene, modules):
    mapping, shape_cache = modules
    sphere = add_uv_sphere(radius=1.0)
    first = recognize(mapping, sphere)
    assert recognize(mapping, sphere).shape.shape is first.shape.shape
    assert shape_cache.SHAPES.hits == 1

    for vertex in sphere.data.vertices:
        vertex.co *= 2.0
    sphere.data.update()
    assert recognize(mapping, sphere).description == "Sphere r=2.000"

    # Same positions, one face fewer: no longer closed, so no longer a sphere.
    bpy.context.view_layer.objects.active = sphere
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_all(action="DESELECT")
    bpy.ops.object.mode_set(mode="OBJECT")
    sphere.data.polygons[100].select = True
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.delete(type="ONLY_FACE")
    bpy.ops.object.mode_set(mode="OBJECT")
    with pytest.raises(mapping.NotRecognized, match="open"):
        recognize(mapping, sphere)


def test_a_moved_object_keeps_its_cached_shape_and_uses_its_new_placement(empty_scene, modules):
    mapping, shape_cache = modules
    cylinder = add_cylinder(radius=0.5, depth=2.0)
    select_only(cylinder)
    down = ((0.0, 0.0, 5.0), (0.0, 0.0, -1.0))
    assert fire_single_ray(*down)[0] == pytest.approx(4.0, abs=1e-6)
    cylinder.location.z = 1.0
    bpy.context.view_layer.update()
    hits = shape_cache.SHAPES.hits
    assert fire_single_ray(*down)[0] == pytest.approx(3.0, abs=1e-6)
    assert shape_cache.SHAPES.hits == hits + 1  # same mesh: reused, placed anew


def test_nothing_is_cached_in_edit_mode(empty_scene, modules):
    mapping, shape_cache = modules
    grid = add_displaced_grid(vertices_per_side=9)
    bpy.context.view_layer.objects.active = grid
    bpy.ops.object.mode_set(mode="EDIT")
    try:  # the evaluated mesh of an object in edit mode reads as empty here
        recognize(mapping, grid)
    except mapping.NotRecognized:
        pass
    assert len(shape_cache.SHAPES) == 0
    bpy.ops.object.mode_set(mode="OBJECT")
    recognize(mapping, grid)
    assert len(shape_cache.SHAPES) == 1
