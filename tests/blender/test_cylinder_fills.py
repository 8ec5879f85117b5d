"""Cylinders of every Cap Fill Type (Add > Mesh > Cylinder): N-Gon and Triangle Fan are the
capped solid, Nothing the open tube. Hits match the exact cylinder (float64 reference) and
Blender's own scene.ray_cast on the mesh up to the tessellation error."""

import bpy
import numpy as np
import pytest
from blender_scenes import (
    add_cylinder,
    blender_ray_cast,
    fire_single_ray,
    ray_cylinder,
    select_only,
    unit,
    world_matrix,
)

RADIUS, DEPTH = 0.8, 2.5


@pytest.fixture
def mapping(addon):
    from geometry_queries.operators import mapping

    return mapping


@pytest.fixture
def nearest(addon):
    from geometry_queries.operators import nearest

    return nearest


def rays_at_the_cylinder(matrix, count, seed):
    """Rays from outside (4 units from the axis) aimed at random points inside the solid,
    plus rays along the axis from beyond each end and rays from points on the axis outward
    (inside the tube)."""
    rng = np.random.default_rng(seed)
    origins, directions = [], []
    for _ in range(count):
        aim = np.append(rng.uniform(-0.5, 0.5, 2) * RADIUS, rng.uniform(-0.45, 0.45) * DEPTH)
        direction = unit(rng.normal(size=3))
        origins.append(aim - 4.0 * direction)
        directions.append(direction)
    for sign in (1.0, -1.0):
        origins.append((0.1, -0.05, sign * 2.0 * DEPTH))
        directions.append((0.0, 0.0, -sign))
    for angle in np.linspace(0.0, 2 * np.pi, 5, endpoint=False):
        origins.append((0.0, 0.0, 0.3))
        directions.append((np.cos(angle), np.sin(angle), 0.2))
    local_origins, local_directions = np.array(origins), np.array(directions)
    world_origins = local_origins @ matrix[:3, :3].T + matrix[:3, 3]
    world_directions = np.array([unit(d) for d in local_directions @ matrix[:3, :3].T])
    return world_origins, world_directions


def tessellation_error(vertices):
    """How far the mesh's side facets lie inside the exact circle (the sagitta)."""
    return RADIUS * (1.0 - np.cos(np.pi / vertices))


@pytest.mark.parametrize("vertices", [6, 32, 64])
@pytest.mark.parametrize("fill", ["NGON", "TRIFAN", "NOTHING"])
def test_every_cap_fill_is_the_exact_cylinder_and_agrees_with_blender(
    empty_scene, mapping, nearest, fill, vertices
):
    cylinder = add_cylinder(
        radius=RADIUS,
        depth=DEPTH,
        vertices=vertices,
        end_fill_type=fill,
        location=(0.5, -1.0, 0.25),
        rotation=(0.4, -0.3, 1.1),
    )
    capped = fill != "NOTHING"
    recognized = mapping.recognize(cylinder, bpy.context.evaluated_depsgraph_get())
    shape = recognized.shape.shape
    assert recognized.kind == "CYLINDER" and shape.capped == capped
    assert shape.radius == RADIUS
    assert sorted([shape.p0.tolist(), shape.p1.tolist()]) == [
        [0.0, 0.0, -DEPTH / 2],
        [0.0, 0.0, DEPTH / 2],
    ]
    noun = "Cylinder" if capped else "Open tube"
    assert recognized.description == f"{noun} r={RADIUS:.3f} h={DEPTH:.3f}"

    matrix = world_matrix(cylinder)
    origins, directions = rays_at_the_cylinder(matrix, 40, seed=vertices)
    hits = nearest.nearest_ray_hits([recognized], origins, directions, np.inf)
    sagitta = tessellation_error(vertices)
    compared = 0
    for ray, (origin, direction) in enumerate(zip(origins, directions)):
        expected = ray_cylinder(matrix, RADIUS, DEPTH, origin, direction, capped=capped)
        blender = blender_ray_cast(origin, direction)
        if expected is None:
            assert not hits.hit[ray]
            assert blender is None  # e.g. along the open tube's axis: through
            continue
        assert hits.hit[ray]
        assert abs(hits.distance[ray] - expected[0]) <= 1e-9
        np.testing.assert_allclose(hits.normal[ray], expected[2], atol=1e-9)
        assert hits.normal[ray] @ direction <= 0.0  # faces the ray, inside the tube too
        # The mesh lies between the exact circle and its inscribed polygon: where Blender
        # hits the facet over the exact hit (normals within pi / vertices), it is at most
        # about sagitta / cos(incidence) away. (A ray through the sliver between circle and
        # polygon may hit another part; Blender has no solid, so no hit at 0 either.)
        cosine = abs(expected[2] @ direction)
        if expected[0] > 0.0 and cosine > 0.3:
            assert blender is not None
            if abs(blender[1] @ expected[2]) >= np.cos(np.pi / vertices) - 1e-6:
                assert abs(blender[0] - expected[0]) <= 1.5 * sagitta / cosine + 1e-5
                compared += 1
    assert compared >= 20

    select_only(cylinder)
    origin, direction = origins[0], directions[0]
    found = fire_single_ray(origin, direction)
    assert abs(found[0] - ray_cylinder(matrix, RADIUS, DEPTH, origin, direction, capped)[0]) < 1e-6


def test_a_ray_along_an_open_tube_passes_through_and_a_capped_one_stops(empty_scene):
    tube = add_cylinder(name="Tube", end_fill_type="NOTHING", location=(0, 0, 0))
    closed = add_cylinder(name="Closed", end_fill_type="TRIFAN", location=(0, 0, -10))
    select_only(tube, closed)
    found = fire_single_ray((0.2, 0.0, 5.0), (0.0, 0.0, -1.0))
    assert found[3] == "Closed" and abs(found[0] - 14.0) < 1e-6


@pytest.mark.parametrize(
    "edit, reason",
    [
        ("one cap", "open, but not just at both ends"),
        ("side face", "open, but not just at both ends"),
    ],
)
def test_a_cylinder_open_elsewhere_is_refused(empty_scene, mapping, edit, reason):
    fill = "NGON" if edit == "one cap" else "NOTHING"
    cylinder = add_cylinder(vertices=16, end_fill_type=fill)
    # Recognised (and remembered by the shape cache) before the edit, refused after it.
    assert mapping.recognize(cylinder, bpy.context.evaluated_depsgraph_get()).kind == "CYLINDER"
    faces = cylinder.data.polygons
    if edit == "one cap":
        doomed = next(f.index for f in faces if len(f.vertices) == 16)
    else:
        doomed = next(f.index for f in faces if len(f.vertices) == 4)
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_all(action="DESELECT")
    bpy.ops.object.mode_set(mode="OBJECT")
    faces[doomed].select = True
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.delete(type="ONLY_FACE")
    bpy.ops.object.mode_set(mode="OBJECT")
    with pytest.raises(mapping.NotRecognized, match=reason):
        mapping.recognize(cylinder, bpy.context.evaluated_depsgraph_get())
