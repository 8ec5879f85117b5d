"""Sphere Cast against Blender cylinders: capped (N-Gon caps) and open tubes, scaled along
the axis and rotated, instanced; the nearest of several targets; and the targets it refuses
(ellipsoids, elliptic and sheared cylinders) with the scene unchanged.

References, sharing no code with the add-on: the Minkowski-sum contact solved by hand for
axis-aligned cylinders, and for any placement an exact point-to-cylinder distance: the
contact centre lies at the cast radius from the cylinder, the contact point on it, and no
centre along the path before the contact comes that close (sampled densely)."""

import bpy
import numpy as np
import pytest
from blender_scenes import (
    add_cylinder,
    add_uv_sphere,
    created_markers,
    float32,
    select_only,
    snapshot,
    unit,
    world_matrix,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from mathutils import Matrix


def cast(start, end, radius):
    """Run Sphere Cast; (target, distance, centre, point, normal) from its markers."""
    bpy.ops.geometry_queries.sphere_cast(start=start, end=end, radius=radius)
    markers = created_markers()
    assert len(markers) == 2
    (moving,) = [m for m in markers if m.empty_display_type == "SPHERE"]
    (contact,) = [m for m in markers if m.empty_display_type == "SINGLE_ARROW"]
    return (
        moving["target"],
        moving["distance"],
        np.array(moving["point"]),
        np.array(contact["point"]),
        np.array(contact["normal"]),
    )


def cylinder_in_world(matrix, radius, depth):
    """(base centre, unit axis, height, radius) of a Blender cylinder primitive (axis local
    z from -depth/2 to depth/2) under ``matrix`` scaling uniformly across its axis."""
    base = matrix[:3, :3] @ (0.0, 0.0, -depth / 2) + matrix[:3, 3]
    top = matrix[:3, :3] @ (0.0, 0.0, depth / 2) + matrix[:3, 3]
    across = np.linalg.norm(matrix[:3, 0])
    return base, unit(top - base), float(np.linalg.norm(top - base)), radius * across


def distance_to_cylinder(points, cylinder, capped=True):
    """Exact distance from each point to the solid cylinder (``capped``) or the tube
    surface: in the cylinder's frame, height z along the axis and radial distance rho, the
    nearest point clamps z to [0, h] and (solid) rho to at most r (tube: rho to r)."""
    base, axis, height, radius = cylinder
    relative = np.atleast_2d(points) - base
    z = relative @ axis
    rho = np.linalg.norm(relative - np.outer(z, axis), axis=1)
    radial = np.maximum(rho - radius, 0.0) if capped else rho - radius
    return np.hypot(radial, z - np.clip(z, 0.0, height))


def assert_first_contact(start, end, radius, result, cylinder, capped=True, atol=1e-9):
    """The reported contact is where the swept sphere first touches ``cylinder``."""
    _, distance, centre, point, normal = result
    np.testing.assert_allclose(centre, start + distance * unit(end - start), atol=atol)
    assert distance_to_cylinder(centre, cylinder, capped)[0] == pytest.approx(radius, abs=atol)
    assert distance_to_cylinder(point, cylinder, capped)[0] == pytest.approx(0.0, abs=atol)
    assert np.linalg.norm(centre - point) == pytest.approx(radius, abs=atol)
    np.testing.assert_allclose(normal, (centre - point) / radius, atol=1e-6)
    earlier = start + np.linspace(0.0, distance - 1e-6, 4001)[:, None] * unit(end - start)
    assert (distance_to_cylinder(earlier, cylinder, capped) > radius).all()


# Axis-aligned cylinders: the contact by hand (radius 1, depth 2, so caps at z = -1 and 1).


def test_side_contact_by_hand_and_the_nearer_of_two_targets(empty_scene):
    cylinder = add_cylinder(radius=1.0, depth=2.0)
    far = add_uv_sphere(name="Far", radius=1.0, location=(4.0, 0.3, 0.2))
    select_only(cylinder, far)
    start, end, radius = float32((-5.0, 0.3, 0.2)), float32((5.0, 0.3, 0.2)), 0.5
    result = cast(start, end, radius)
    # The centre's line y = 0.3, z = 0.2 reaches rho = 1.5 at x = -sqrt(1.5^2 - 0.3^2).
    x = -np.sqrt(1.5**2 - start[1] ** 2)
    target, distance, centre, point, normal = result
    assert target == "Cylinder"
    assert distance == pytest.approx(x - start[0], abs=1e-9)
    np.testing.assert_allclose(centre, (x, start[1], start[2]), atol=1e-9)
    np.testing.assert_allclose(point, (x / 1.5, start[1] / 1.5, start[2]), atol=1e-9)
    np.testing.assert_allclose(normal, (x / 1.5, start[1] / 1.5, 0.0), atol=1e-9)
    assert_first_contact(start, end, radius, result, cylinder_in_world(np.eye(4), 1.0, 2.0))
    assert empty_scene.geometry_queries.last_result == (
        f"Sphere cast touches Cylinder after {distance:.3f} m"
    )


def test_cap_contact_along_the_axis_by_hand(empty_scene):
    select_only(add_cylinder(radius=1.0, depth=2.0))
    start, end, radius = float32((0.2, 0.1, 5.0)), float32((0.2, 0.1, -5.0)), 0.5
    result = cast(start, end, radius)
    _, distance, centre, point, normal = result
    assert distance == pytest.approx(start[2] - 1.5, abs=1e-9)  # the cap plane moved out by R
    np.testing.assert_allclose(point, (start[0], start[1], 1.0), atol=1e-9)
    np.testing.assert_allclose(normal, (0.0, 0.0, 1.0), atol=1e-9)
    assert_first_contact(start, end, radius, result, cylinder_in_world(np.eye(4), 1.0, 2.0))


def test_rim_contact_by_hand(empty_scene):
    select_only(add_cylinder(radius=1.0, depth=2.0))
    start, end, radius = float32((1.3, 0.0, 5.0)), float32((1.3, 0.0, -5.0)), 0.5
    result = cast(start, end, radius)
    _, distance, centre, point, normal = result
    # Past the rim (x = 1.3 > 1) the centre meets the rim's torus: (x - 1)^2 + (z - 1)^2 = R^2.
    z = 1.0 + np.sqrt(radius**2 - (start[0] - 1.0) ** 2)
    assert distance == pytest.approx(start[2] - z, abs=1e-9)
    np.testing.assert_allclose(point, (1.0, 0.0, 1.0), atol=1e-9)
    np.testing.assert_allclose(normal, unit((start[0] - 1.0, 0.0, z - 1.0)), atol=1e-9)
    assert_first_contact(start, end, radius, result, cylinder_in_world(np.eye(4), 1.0, 2.0))


def test_inside_an_open_tube_meets_its_inner_wall(empty_scene):
    select_only(add_cylinder(radius=1.0, depth=2.0, end_fill_type="NOTHING"))
    start, end, radius = float32((0.0, 0.1, 0.3)), float32((5.0, 0.1, 0.3)), 0.25
    result = cast(start, end, radius)
    _, distance, centre, point, normal = result
    x = np.sqrt(0.75**2 - start[1] ** 2)  # rho = r - R from inside
    assert distance == pytest.approx(x, abs=1e-9)
    np.testing.assert_allclose(point, (x / 0.75, start[1] / 0.75, start[2]), atol=1e-9)
    np.testing.assert_allclose(normal, (-x / 0.75, -start[1] / 0.75, 0.0), atol=1e-9)
    tube = cylinder_in_world(np.eye(4), 1.0, 2.0)
    assert_first_contact(start, end, radius, result, tube, capped=False)


# Any placement: the contact against the exact cylinder of the object's float64 matrix
# (Blender's float32 matrix is a similarity only to ~1e-7, hence atol 1e-6).


@pytest.mark.parametrize(
    "start, end",
    [
        ((6.0, -4.0, 1.0), (1.0, 2.0, -3.0)),  # towards the middle: the side
        ((1.0, 2.0, 9.0), (1.0, 2.5, -9.0)),  # down the world z: a cap or a rim
        ((-6.0, 5.0, -8.0), (1.5, 2.0, -3.0)),  # from below and aside
    ],
)
def test_cylinder_scaled_along_its_axis_and_rotated(empty_scene, start, end):
    cylinder = add_cylinder(
        radius=0.8, depth=2.0, location=(1.0, 2.0, -3.0), rotation=(0.4, -0.3, 0.7), scale=(1, 1, 3)
    )
    select_only(cylinder)
    start, end, radius = float32(start), float32(end), 0.4
    result = cast(start, end, radius)
    assert result[0] == "Cylinder"
    exact = cylinder_in_world(world_matrix(cylinder), 0.8, 2.0)
    assert exact[2] == pytest.approx(6.0, abs=1e-6)
    assert_first_contact(start, end, radius, result, exact, atol=1e-6)


def test_open_tube_scaled_and_rotated_from_inside(empty_scene):
    tube = add_cylinder(
        radius=1.0,
        depth=2.0,
        rotation=(0.0, np.pi / 2, 0.3),
        scale=(2.0, 2.0, 0.5),
        end_fill_type="NOTHING",
    )
    select_only(tube)
    start, end, radius = float32((0.0, 0.0, 0.0)), float32((0.0, 3.0, 1.0)), 0.5
    result = cast(start, end, radius)
    exact = cylinder_in_world(world_matrix(tube), 1.0, 2.0)
    assert exact[3] == pytest.approx(2.0, abs=1e-6)
    assert_first_contact(start, end, radius, result, exact, capped=False, atol=1e-6)


def test_instance_of_a_cylinder(empty_scene):
    collection = bpy.data.collections.new("Pillars")
    cylinder = add_cylinder(radius=0.5, depth=3.0, rotation=(0.2, 0.0, 0.0), scale=(1, 1, 2))
    empty_scene.collection.objects.unlink(cylinder)
    collection.objects.link(cylinder)
    empty = bpy.data.objects.new("Empty", None)
    empty.instance_type, empty.instance_collection = "COLLECTION", collection
    empty.location, empty.rotation_euler, empty.scale = (
        (3.0, -1.0, 2.0),
        (0.0, 0.5, 1.0),
        (
            1.5,
            1.5,
            1.5,
        ),
    )
    empty_scene.collection.objects.link(empty)
    bpy.context.view_layer.update()
    select_only(empty)
    start, end, radius = float32((9.0, -1.0, 2.5)), float32((-3.0, -1.0, 1.5)), 0.3
    result = cast(start, end, radius)
    assert result[0] == "Cylinder (instance of Pillars via Empty)"
    exact = cylinder_in_world(world_matrix(empty) @ world_matrix(cylinder), 0.5, 3.0)
    assert exact[3] == pytest.approx(0.75, abs=1e-6)
    assert_first_contact(start, end, radius, result, exact, atol=1e-6)


# Refused targets: an ERROR naming the object and why, and nothing written.


def assert_cast_fails_and_changes_nothing(message):
    before = snapshot()
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.geometry_queries.sphere_cast(start=(0, 0, 6), end=(0, 0, -6), radius=0.5)
    assert snapshot() == before
    assert created_markers() == []


def test_an_ellipsoid_is_refused(empty_scene):
    select_only(add_cylinder(location=(0, 0, 3)), add_uv_sphere(scale=(1.0, 1.0, 2.0)))
    assert_cast_fails_and_changes_nothing(
        r"Sphere: Sphere Cast needs a placement without non-uniform scale"
    )


def test_an_elliptic_cylinder_is_refused(empty_scene):
    select_only(add_cylinder(scale=(2.0, 1.0, 1.0), rotation=(0.3, 0.2, 0.1)))
    assert_cast_fails_and_changes_nothing(
        r"Cylinder: Sphere Cast needs a placed cylinder scaled uniformly across its axis "
        r"\(this placement makes its cross-section an ellipse\)"
    )


def test_a_sheared_cylinder_is_refused(empty_scene):
    cylinder = add_cylinder()
    parent = bpy.data.objects.new("Parent", None)
    empty_scene.collection.objects.link(parent)
    cylinder.parent = parent
    shear = np.eye(4)
    shear[0, 2] = 0.5  # x += z / 2: round cross-sections, a slanted axis
    cylinder.matrix_parent_inverse = Matrix(shear.tolist())  # (a bare list reads as columns)
    bpy.context.view_layer.update()
    assert abs(world_matrix(cylinder)[0, 2]) == pytest.approx(0.5)
    select_only(cylinder)
    assert_cast_fails_and_changes_nothing(r"Cylinder: Sphere Cast .*\(this placement shears it\)")


# The snapping helper itself, on float32-rounded placements.


@settings(max_examples=60, deadline=None)
@given(
    quaternion=st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4).filter(
        lambda q: np.linalg.norm(q) > 0.1
    ),
    axis=st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3).filter(
        lambda a: np.linalg.norm(a) > 0.1
    ),
    across=st.sampled_from([0.25, 1.0, 1.5, 7.0]),
    along=st.sampled_from([0.5, 1.0, 3.0, 40.0]),
    capped=st.booleans(),
)
def test_cylinder_placements_snap_to_exact_ones_within_float32_noise(
    addon, quaternion, axis, across, along, capped
):
    from geometry_queries.operators import mapping

    w, x, y, z = unit(quaternion)
    rotation = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    cylinder = mapping.core.Cylinder(-0.5 * unit(axis), 0.5 * unit(axis), 0.7, capped=capped)
    frame = np.column_stack(cylinder.frame)
    exact = np.eye(4)
    exact[:3, :3] = rotation @ np.diag([across, across, along]) @ frame.T
    exact[:3, 3] = (1.0, -2.0, 3.0)
    blender = exact.astype(np.float32).astype(np.float64)  # what matrix_world holds
    placed = mapping.core.Placed(cylinder, blender)
    snapped = mapping.as_cylinder_similarity(placed)
    np.testing.assert_allclose(snapped.matrix, exact, atol=1e-6 * max(across, along))
    images = snapped.matrix[:3, :3] @ frame
    lengths = np.linalg.norm(images, axis=0)
    assert lengths == pytest.approx([across, across, along], rel=1e-14)  # round values exact
    cast = mapping.core.sphere_cast(snapped, (1.0, -2.0, 3.0), (1.0, -2.0, 200.0), 0.1)
    if capped:  # folded without complaint; the start is inside
        assert cast.hit and cast.distance == 0.0

    elliptic = blender.copy()
    elliptic[:3, :3] = (
        blender[:3, :3]
        @ frame
        @ np.diag([1.0 + 1e-4 * max(across, along) / across, 1.0, 1.0])
        @ frame.T
    )
    not_similar = mapping.core.Placed(cylinder, elliptic)
    assert mapping.as_cylinder_similarity(not_similar) is not_similar
