"""Sphere Cast against Blender terrains (displaced grids), in both terrain models, under any
placement that stays a terrain (rotated, scaled per axis, mirrored); a sheared terrain is
refused with the scene unchanged.

The reference shares no code with the add-on: the exact distance from a point to the
evaluated mesh's world triangles (the closest point on each triangle, Ericson's regions),
and for the solid also to its walls (the vertical quads under the boundary edges, reaching
far below). A cast's first contact is found by conservative advancement: the centre may
move by (distance - R) without touching anything, so stepping by it never passes the
contact and converges to it."""

import math

import bpy
import numpy as np
import pytest
from blender_scenes import (
    add_displaced_grid,
    created_markers,
    evaluated_world_triangles,
    select_only,
    snapshot,
    unit,
    world_matrix,
)
from mathutils import Matrix


def closest_on_triangles(point, triangles):
    """(T, 3) closest points of ``triangles`` (T, 3, 3) to ``point``: the nearest of the
    interior's projection, the three edges' clamped feet and the vertices."""
    a, b, c = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    candidates = []
    for p, q in ((a, b), (b, c), (c, a)):
        edge = q - p
        s = np.clip(
            np.einsum("ij,ij->i", point - p, edge) / np.einsum("ij,ij->i", edge, edge), 0, 1
        )
        candidates.append(p + s[:, None] * edge)
    normal = np.cross(b - a, c - a)
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    projected = point - np.einsum("ij,ij->i", point - a, normal)[:, None] * normal
    # Inside when the projection is on the inner side of all three edges.
    inside = np.ones(len(a), dtype=bool)
    for p, q in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("ij,ij->i", np.cross(q - p, projected - p), normal) >= 0
    candidates.append(np.where(inside[:, None], projected, np.inf))
    candidates = np.stack(candidates)  # (4, T, 3)
    gaps = np.linalg.norm(candidates - point, axis=2)
    return candidates[np.argmin(gaps, axis=0), np.arange(len(a))]


def nearest_point(point, triangles):
    closest = closest_on_triangles(point, triangles)
    gaps = np.linalg.norm(closest - point, axis=1)
    return closest[np.argmin(gaps)], float(gaps.min())


def wall_triangles(obj, depth=1e3):
    """The solid's walls in world space: under each boundary edge of the evaluated grid, a
    quad reaching ``depth`` below it along the terrain's local -z, as two triangles."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    mesh = obj.evaluated_get(depsgraph).data
    local = np.array([v.co for v in mesh.vertices], dtype=np.float64)
    xs, ys = np.unique(local[:, 0]), np.unique(local[:, 1])
    order = np.lexsort((local[:, 0], local[:, 1]))
    grid = local[order].reshape(len(ys), len(xs), 3)
    edges = [grid[0, :], grid[-1, :], grid[:, 0], grid[:, -1]]
    matrix = world_matrix(obj)
    triangles = []
    for line in edges:
        for top0, top1 in zip(line[:-1], line[1:]):
            bottom0, bottom1 = top0 - (0, 0, depth), top1 - (0, 0, depth)
            triangles += [(top0, top1, bottom1), (top0, bottom1, bottom0)]
    triangles = np.array(triangles)
    return triangles @ matrix[:3, :3].T + matrix[:3, 3]


def first_contact(start, end, radius, triangles):
    """Conservative advancement along start -> end: (t, centre) of the first contact with
    ``triangles`` at ``radius``, or None when the centre reaches the end first."""
    direction = unit(end - start)
    length = float(np.linalg.norm(end - start))
    t = 0.0
    for _ in range(100000):
        centre = start + t * direction
        gap = nearest_point(centre, triangles)[1] - radius
        if gap <= 1e-11:
            return t, centre
        t += gap
        if t > length:
            return None
    raise AssertionError("conservative advancement did not converge")


def cast_markers():
    """[(distance, centre, point, normal)] of the Sphere Cast markers, paired by distance."""
    markers = created_markers()
    spheres = sorted(
        (m for m in markers if m.empty_display_type == "SPHERE"), key=lambda m: m["distance"]
    )
    arrows = sorted(
        (m for m in markers if m.empty_display_type == "SINGLE_ARROW"), key=lambda m: m["distance"]
    )
    assert len(spheres) == len(arrows)
    return [
        (s["distance"], np.array(s["point"]), np.array(a["point"]), np.array(a["normal"]))
        for s, a in zip(spheres, arrows)
    ]


def assert_matches_reference(casts, radius, triangles, minimum_contacts=1, atol=1e-6):
    """Each operator cast (start, end) against the reference contact, and the contact's
    own geometry: the centre at the radius, the point on the terrain, the normal along
    centre - point."""
    expected = []
    for start, end in casts:
        contact = first_contact(start, end, radius, triangles)
        if contact is not None:
            expected.append(contact)
    found = cast_markers()
    assert len(found) == len(expected) >= minimum_contacts
    expected.sort(key=lambda item: item[0])
    for (t, centre), (distance, got_centre, point, normal) in zip(expected, found):
        assert distance == pytest.approx(t, abs=atol)
        np.testing.assert_allclose(got_centre, centre, atol=atol)
        reference_point, gap = nearest_point(got_centre, triangles)
        assert gap == pytest.approx(radius, abs=atol)
        np.testing.assert_allclose(point, reference_point, atol=1e-5)
        np.testing.assert_allclose(normal, (got_centre - point) / radius, atol=1e-5)


PLACEMENTS = {
    "plain": dict(),
    "rotated and tilted": dict(rotation=(0.4, -0.3, 0.8)),
    "scaled per axis": dict(rotation=(0.2, 0.1, -0.5), scale=(2.0, 0.5, 1.5)),
    "mirrored (scale z = -1)": dict(scale=(1.0, 1.0, -1.0)),
    "mirrored in x, rotated": dict(rotation=(0.3, 0.2, 1.1), scale=(-1.5, 1.0, 1.2)),
}


@pytest.mark.parametrize("placement", PLACEMENTS, ids=list(PLACEMENTS))
@pytest.mark.parametrize("model", ["SURFACE", "SOLID"])
def test_a_grid_of_casts_from_above_against_the_exact_reference(empty_scene, placement, model):
    terrain = add_displaced_grid(
        vertices_per_side=9,
        size=2.0,
        strength=0.8,
        location=(0.5, -1.0, 2.0),
        **PLACEMENTS[placement],
    )
    select_only(terrain)
    bpy.context.view_layer.update()
    matrix = world_matrix(terrain)
    # From 3 above the terrain on its local +z side (below it in the world when mirrored in
    # z), down and slanted, a 5 x 5 grid of casts 0.4 apart; the outer ones pass beside the
    # terrain (the solid's walls) or graze its edges.
    up = unit(matrix[:3, 2])  # the solid lies on the other side
    centre = matrix[:3, 3]
    start = centre + 3.0 * up + 0.3 * unit(matrix[:3, 0])
    end = centre - 2.0 * up - 0.4 * unit(matrix[:3, 1])
    radius = 0.15
    bpy.ops.geometry_queries.sphere_cast(
        start=start,
        end=end,
        radius=radius,
        pattern="GRID",
        grid_rows=5,
        grid_columns=5,
        grid_width=1.6,
        output="EMPTIES",
        terrain_model=model,
    )
    from geometry_queries.operators import patterns

    direction = unit(np.float32(end) - np.float32(start))
    starts = patterns.grid_origins(np.float32(start).astype(float), direction, 5, 5, 1.6)
    length = float(np.linalg.norm(np.float32(end).astype(float) - np.float32(start)))
    casts = [(s, s + length * direction) for s in starts]
    triangles = evaluated_world_triangles(terrain)
    if model == "SOLID":
        triangles = np.concatenate([triangles, wall_triangles(terrain)])
    assert_matches_reference(casts, radius, triangles, minimum_contacts=12)


def flat_grid(rotation=(0.0, 0.0, 0.0), scale=(1.0, 1.0, 1.0)):
    """A flat 2 x 2 grid at z = 0 (x and y in [-1, 1]), 5 vertices per side, with the
    object rotation and scale given."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=2.0)
    obj = bpy.context.object
    obj.name = "Terrain"
    obj.rotation_euler, obj.scale = rotation, scale
    bpy.context.view_layer.update()
    return obj


def single_cast(start, end, radius, model):
    bpy.ops.geometry_queries.sphere_cast(start=start, end=end, radius=radius, terrain_model=model)
    found = cast_markers()
    return found[0] if found else None


def test_a_cast_under_the_edge_meets_the_solids_wall_but_passes_under_the_sheet(empty_scene):
    select_only(flat_grid())
    # Centre 0.5 below the sheet: the solid's wall at x = -1 stops it at x = -1.25.
    distance, centre, point, normal = single_cast((-5, 0.25, -0.5), (5, 0.25, -0.5), 0.25, "SOLID")
    assert distance == pytest.approx(3.75, abs=1e-9)
    np.testing.assert_allclose(point, (-1.0, 0.25, -0.5), atol=1e-9)
    np.testing.assert_allclose(normal, (-1.0, 0.0, 0.0), atol=1e-9)
    bpy.ops.geometry_queries.clear_hits()
    assert single_cast((-5, 0.25, -0.5), (5, 0.25, -0.5), 0.25, "SURFACE") is None
    # 0.2 below the sheet the sphere (R = 0.25) catches its edge line from below:
    # (x + 1)^2 + z^2 = R^2 at x = -1 - sqrt(R^2 - z^2) ~ -1.15 (z as the property stores it).
    z = float(np.float32(-0.2))
    distance, centre, point, normal = single_cast((-5, 0.25, z), (5, 0.25, z), 0.25, "SURFACE")
    reach = math.sqrt(0.25**2 - z * z)
    assert distance == pytest.approx(4.0 - reach, abs=1e-9)
    np.testing.assert_allclose(point, (-1.0, 0.25, 0.0), atol=1e-9)
    np.testing.assert_allclose(normal, (-reach / 0.25, 0.0, z / 0.25), atol=1e-9)


def test_a_mirrored_solid_keeps_its_ground_on_the_mirrored_side(empty_scene):
    select_only(flat_grid(scale=(1.0, 1.0, -1.0)))
    # The ground below the surface in the terrain's local axes is above it in the world:
    # a cast starting 3 above the sheet starts inside it (overlap: distance 0, the nearest
    # boundary point is on the wall x = 1, 0.5 away, with the wall's outward normal).
    distance, centre, point, normal = single_cast((0.5, 0.2, 3.0), (0.5, 0.2, -3.0), 0.25, "SOLID")
    assert distance == 0.0
    np.testing.assert_allclose(centre, (0.5, 0.2, 3.0), atol=1e-9)
    np.testing.assert_allclose(point, (1.0, 0.2, 3.0), atol=1e-9)
    np.testing.assert_allclose(normal, (1.0, 0.0, 0.0), atol=1e-9)
    bpy.ops.geometry_queries.clear_hits()
    # From below (outside the mirrored solid) it stops 0.25 under the sheet.
    distance, centre, point, normal = single_cast((0.5, 0.2, -3.0), (0.5, 0.2, 3.0), 0.25, "SOLID")
    assert distance == pytest.approx(2.75, abs=1e-9)
    np.testing.assert_allclose(normal, (0.0, 0.0, -1.0), atol=1e-9)
    bpy.ops.geometry_queries.clear_hits()
    # As a surface, the same cast from above stops 0.25 above it.
    distance, centre, point, normal = single_cast(
        (0.5, 0.2, 3.0), (0.5, 0.2, -3.0), 0.25, "SURFACE"
    )
    assert distance == pytest.approx(2.75, abs=1e-9)
    np.testing.assert_allclose(point, (0.5, 0.2, 0.0), atol=1e-9)
    np.testing.assert_allclose(normal, (0.0, 0.0, 1.0), atol=1e-9)


def test_a_sheared_terrain_is_refused_and_nothing_changes(empty_scene):
    parent = bpy.data.objects.new("Stretch", None)
    empty_scene.collection.objects.link(parent)
    parent.scale = (2.0, 1.0, 1.0)
    terrain = flat_grid(rotation=(0.0, 0.0, math.radians(30.0)))
    terrain.parent = parent
    select_only(terrain)
    bpy.context.view_layer.update()
    before = snapshot()
    with pytest.raises(RuntimeError, match=r"Error: Terrain: .*shear"):
        bpy.ops.geometry_queries.sphere_cast(start=(0, 0, 3), end=(0, 0, -3), radius=0.25)
    assert snapshot() == before
    assert created_markers() == []


def test_float32_noise_in_the_placement_is_not_a_shear(empty_scene):
    # A rotation Blender stores in float32 is orthogonal only to ~1e-7: the cast still runs,
    # and matches the reference on the rotated, scaled terrain.
    terrain = flat_grid(rotation=(0.1234, -0.4321, 0.777), scale=(1.7, 0.3, 2.9))
    terrain.matrix_world = Matrix(terrain.matrix_world)
    select_only(terrain)
    bpy.context.view_layer.update()
    matrix = world_matrix(terrain)
    up = unit(matrix[:3, 2])
    start, end = matrix[:3, 3] + 2.0 * up, matrix[:3, 3] - 2.0 * up
    bpy.ops.geometry_queries.sphere_cast(start=start, end=end, radius=0.1, terrain_model="SURFACE")
    start, end = (np.float32(v).astype(float) for v in (start, end))
    assert_matches_reference([(start, end)], 0.1, evaluated_world_triangles(terrain))
