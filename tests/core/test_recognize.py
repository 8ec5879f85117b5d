"""core.recognize on synthetic vertex arrays (tests/core/meshes.py): each shape is found
with the parameters it was built with, moved, rotated, scaled and rounded to float32 as
Blender stores vertices; every refusal gives its reason."""

import re

import meshes
import numpy as np
import pytest

from geometry_queries.core import Cylinder, Heightfield, Placed, Sphere
from geometry_queries.core.fit import (
    SNAP_TOLERANCE,
    as_cast_target,
    recognition_tolerance,
    shape_size,
    snapped,
)
from geometry_queries.core.recognize import (
    Faces,
    NotRecognized,
    Terrain,
    check_finite,
    description,
    recognize_cylinder,
    recognize_mesh,
    recognize_sphere,
    recognize_terrain,
)


@pytest.fixture(scope="module", autouse=True)
def backend():
    """Recognition asks no query: one backend (conftest's fixture runs both) is enough."""
    yield "numpy"


def f32(points):
    """Vertices as Blender stores them."""
    return np.asarray(points, dtype=np.float32)


def same_ends(cylinder, a, b, tolerance):
    """The cylinder's ends are a and b, in either order (the fit's normal has no sign)."""
    ends = sorted([cylinder.p0, cylinder.p1], key=lambda p: np.linalg.norm(p - a))
    assert np.abs(ends[0] - a).max() <= tolerance
    assert np.abs(ends[1] - b).max() <= tolerance


# ---------------------------------------------------------------------------- spheres


@pytest.mark.parametrize("segments, rings", [(32, 16), (3, 3), (5, 4), (64, 32)])
@pytest.mark.parametrize("radius", [1.0, 0.7, 2.5])
def test_uv_sphere_has_its_exact_radius_and_centre(segments, rings, radius):
    vertices, faces = meshes.uv_sphere(segments, rings, radius)
    sphere, size = recognize_sphere(f32(vertices), faces)
    assert isinstance(sphere, Sphere)
    assert sphere.radius == size == radius  # snapped to the round value
    assert sphere.center.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("subdivisions", [0, 1, 2])
def test_icosphere_is_a_sphere(subdivisions):
    vertices, faces = meshes.icosphere(subdivisions, radius=1.5)
    kind, sphere, radius = recognize_mesh(f32(vertices), faces)
    assert kind == "SPHERE" and radius == 1.5 == sphere.radius
    assert sphere.center.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("seed", range(4))
def test_moved_and_rotated_sphere_keeps_its_parameters(seed):
    rng = np.random.default_rng(seed)
    vertices, faces = meshes.uv_sphere(24, 12, 1.0)
    matrix = 1.3 * meshes.rotation(rng.normal(size=3), rng.uniform(0, np.pi))
    centre = np.round(rng.uniform(-10, 10, size=3), 3)
    sphere, radius = recognize_sphere(f32(meshes.placed(vertices, matrix, centre)), faces)
    assert radius == 1.3
    assert sphere.center.tolist() == centre.tolist()  # snapped to the round value


def test_sphere_far_from_the_origin_snaps_within_float32_steps():
    vertices, faces = meshes.uv_sphere(32, 16, 1.0)
    sphere, radius = recognize_sphere(f32(vertices + (5000.0, 0.0, 0.0)), faces)
    assert radius == 1.0
    assert sphere.center.tolist() == [5000.0, 0.0, 0.0]


def test_float64_sphere_off_round_values_keeps_the_fit():
    vertices, faces = meshes.uv_sphere(16, 8, 1.0)
    # Size 1.2: round values are multiples of 1e-5; this one is 5e-6 > 3.6e-6 off them.
    radius = 0.600005
    sphere, size = recognize_sphere(vertices * radius, faces)
    assert abs(size - radius) <= 1e-12


def test_cube_is_not_a_sphere_though_equidistant():
    vertices, faces = meshes.cube()
    with pytest.raises(NotRecognized, match=r"^its vertices lie on two parallel planes \(like"):
        recognize_sphere(vertices, faces)


def test_cylinder_vertices_are_not_a_sphere():
    vertices, faces = meshes.cylinder(8, radius=1.0, depth=2 * np.sqrt(1.0))
    with pytest.raises(NotRecognized, match="lie on two parallel planes"):
        recognize_sphere(vertices, faces)


def test_random_points_are_not_equidistant():
    points = np.random.default_rng(1).normal(size=(50, 3))
    with pytest.raises(NotRecognized, match=r"^its vertices are not equidistant from a centre"):
        recognize_sphere(points, Faces.from_triangles(np.zeros((0, 3))))


def test_sphere_with_a_face_missing_is_open():
    vertices, faces = meshes.uv_sphere(12, 6)
    polygons = np.split(faces.corner_verts(), np.cumsum(faces.sizes())[:-1])
    with pytest.raises(NotRecognized, match=r"^its surface is open \(not a solid sphere\)$"):
        recognize_sphere(vertices, Faces.from_polygons(polygons[1:]))


def test_too_few_vertices_for_a_sphere():
    with pytest.raises(NotRecognized, match=r"^it has only 4 vertices$"):
        recognize_sphere(np.eye(4, 3), Faces.from_triangles([(0, 1, 2)]))


# ---------------------------------------------------------------------------- cylinders


@pytest.mark.parametrize("fill, capped", [("NGON", True), ("TRIFAN", True), ("NOTHING", False)])
@pytest.mark.parametrize("segments", [5, 32])
def test_cylinder_has_its_exact_ends_and_radius(fill, capped, segments):
    vertices, faces = meshes.cylinder(segments, radius=0.7, depth=3.0, fill=fill)
    shape, (radius, height, closed) = recognize_cylinder(f32(vertices), faces)
    assert isinstance(shape, Cylinder)
    assert (radius, height, closed) == (0.7, 3.0, capped)
    assert shape.radius == 0.7 and shape.capped is capped
    same_ends(shape, np.array([0, 0, -1.5]), np.array([0, 0, 1.5]), 0.0)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("fill", ["NGON", "TRIFAN", "NOTHING"])
def test_rotated_moved_cylinder_keeps_its_axis(seed, fill):
    rng = np.random.default_rng(seed)
    vertices, faces = meshes.cylinder(24, radius=0.5, depth=2.0, fill=fill)
    matrix = 2.0 * meshes.rotation(rng.normal(size=3), rng.uniform(0, np.pi))
    shift = rng.uniform(-5, 5, size=3)
    points = f32(meshes.placed(vertices, matrix, shift))
    shape, (radius, height, _) = recognize_cylinder(points, faces)
    # Each end may snap to a round value within SNAP_TOLERANCE of the mesh's size.
    tolerance = SNAP_TOLERANCE * shape_size(points) + 1e-6
    assert radius == 1.0 and abs(height - 4.0) <= 2 * tolerance
    axis = matrix @ (0, 0, 1.0)
    same_ends(shape, shift - axis, shift + axis, tolerance)


def test_four_sided_prism_is_a_box():
    vertices, faces = meshes.cube()
    with pytest.raises(NotRecognized) as refused:
        recognize_cylinder(vertices, faces)
    assert str(refused.value) == (
        "it has only 4 vertices per circle (a box or prism; a cylinder needs at least 5)"
    )


def test_cone_is_not_a_cylinder():
    vertices, faces = meshes.cone()
    with pytest.raises(NotRecognized) as refused:
        recognize_cylinder(vertices, faces)
    assert str(refused.value) == "one of its two parallel planes holds no circle (like a cone)"


def test_frustum_circles_differ_in_radius():
    vertices, faces = meshes.cylinder(16, radius=1.0)
    vertices[16:, :2] *= 0.5
    with pytest.raises(NotRecognized, match=r"^its two circles differ in radius \(1 and 0.5\)$"):
        recognize_cylinder(vertices, faces)


def test_sheared_cylinder():
    vertices, faces = meshes.cylinder(16, radius=1.0)
    vertices[16:, 0] += 0.3
    with pytest.raises(NotRecognized, match=r"^its two circles are not on one axis \(sheared\)$"):
        recognize_cylinder(vertices, faces)


def test_flat_disk_and_random_points():
    vertices, faces = meshes.cylinder(16, depth=0.0)
    with pytest.raises(NotRecognized, match="^it is flat$"):
        recognize_cylinder(vertices[:16], Faces.from_polygons([range(16)]))
    points = np.random.default_rng(2).normal(size=(40, 3))
    with pytest.raises(NotRecognized, match="^its vertices do not lie on two parallel planes$"):
        recognize_cylinder(points, Faces.from_triangles(np.zeros((0, 3))))


def test_open_tube_with_a_side_face_missing():
    vertices, faces = meshes.cylinder(16, fill="NOTHING")
    polygons = np.split(faces.corner_verts(), np.cumsum(faces.sizes())[:-1])
    with pytest.raises(NotRecognized, match=r"^its surface is open, but not just at both ends"):
        recognize_cylinder(vertices, Faces.from_polygons(polygons[1:]))


# ---------------------------------------------------------------------------- terrains


@pytest.mark.parametrize("split", ["random", "all False", "all True"])
def test_lattice_has_its_heights_spacing_origin_and_diagonals(split):
    nx, ny = 7, 5
    diagonals = {"random": None, "all False": np.zeros((4, 6), bool)}.get(
        split, np.ones((4, 6), bool)
    )
    vertices, triangles, heights, diagonals = meshes.lattice(nx, ny, diagonals=diagonals)
    terrain, size = recognize_terrain(vertices, triangles)
    assert isinstance(terrain, Terrain) and size == (nx, ny)
    assert np.array_equal(terrain.heights, heights)
    assert np.array_equal(terrain.diagonals, diagonals)
    assert terrain.lattice["spacing"] == pytest.approx((0.5, 0.25), abs=1e-15)
    assert terrain.lattice["origin"] == (-1.0, 2.0)
    field = terrain.field("SOLID")
    assert isinstance(field, Heightfield) and field.solid and not terrain.field("SURFACE").solid
    assert terrain.field("SOLID") is field  # built once per model


def test_float32_lattice_far_away_keeps_its_lattice():
    vertices, triangles, heights, diagonals = meshes.lattice(
        9, 6, spacing=(1.0, 2.0), origin=(700.0, -300.0), seed=3
    )
    terrain, size = recognize_terrain(f32(vertices), triangles)
    assert size == (9, 6)
    assert np.array_equal(terrain.diagonals, diagonals)
    assert np.array_equal(terrain.heights, heights.astype(np.float32))
    assert np.abs(np.subtract(terrain.lattice["spacing"], (1.0, 2.0))).max() <= 1e-12


def test_scaled_moved_lattice():
    vertices, triangles, heights, _ = meshes.lattice(5, 5, spacing=(1.0, 1.0), origin=(0, 0))
    points = meshes.placed(vertices, np.diag([0.1, 3.0, 2.0]), (4.0, -1.0, 0.5))
    terrain, _ = recognize_terrain(points, triangles)
    assert np.allclose(terrain.lattice["spacing"], (0.1, 3.0), rtol=0, atol=1e-15)
    assert np.allclose(terrain.lattice["origin"], (4.0, -1.0), rtol=0, atol=1e-15)
    assert np.allclose(terrain.heights, 2.0 * heights + 0.5, rtol=0, atol=1e-15)


def test_lattice_with_one_vertex_moved_in_xy():
    vertices, triangles, _, _ = meshes.lattice(6, 4)
    vertices[5, 0] += 0.1
    with pytest.raises(NotRecognized, match="^its vertices do not form a regular XY lattice$"):
        recognize_terrain(vertices, triangles)


def test_lattice_whose_triangles_cross_cells():
    vertices, triangles, _, _ = meshes.lattice(4, 3)
    triangles = triangles.copy()
    triangles[0] = triangles[-1]
    with pytest.raises(NotRecognized) as refused:
        recognize_terrain(vertices, triangles)
    assert str(refused.value) == "its faces do not cover the 4x3 vertex lattice cell by cell"


def test_vertical_wall_has_no_extent():
    points = np.array([(0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 0, 3)], float)
    with pytest.raises(NotRecognized, match="^its vertices have no extent in x or y$"):
        recognize_terrain(points, Faces.from_triangles(np.zeros((0, 3))))


def test_lattice_triangles_are_read_only_for_a_lattice():
    class Unread(Faces):
        def triangles(self):
            raise AssertionError("triangles read for vertices off any lattice")

    points = np.random.default_rng(4).normal(size=(30, 3))
    with pytest.raises(NotRecognized, match="regular XY lattice"):
        recognize_terrain(points, Unread([], []))


# ---------------------------------------------------------------------------- any of them


def test_recognize_mesh_names_every_reason():
    vertices, faces = meshes.cube()
    with pytest.raises(NotRecognized) as refused:
        recognize_mesh(vertices, faces, "Cube")
    assert str(refused.value) == (
        "Cube is not a supported shape: not a sphere: its vertices lie on two parallel planes "
        "(like a box, prism or cone), not spread over a sphere; not a cylinder: it has only 4 "
        "vertices per circle (a box or prism; a cylinder needs at least 5); not a terrain: its "
        "vertices do not form a regular XY lattice"
    )


def test_recognize_mesh_picks_each_kind():
    vertices, triangles, _, _ = meshes.lattice()
    assert recognize_mesh(vertices, triangles)[0] == "TERRAIN"
    assert recognize_mesh(*meshes.cylinder(fill="TRIFAN"))[0] == "CYLINDER"
    assert recognize_mesh(*meshes.uv_sphere())[0] == "SPHERE"
    assert recognize_mesh(*meshes.icosphere(1))[0] == "SPHERE"


def test_check_finite_names_the_first_bad_vertex():
    points = np.zeros((5, 3), np.float32)
    points[3, 1] = np.inf
    points[4, 0] = np.nan
    message = "Rock has a vertex that is not finite: vertex 3 at (0, inf, 0)"
    with pytest.raises(NotRecognized, match=f"^{re.escape(message)}$"):
        check_finite(points, "Rock")
    check_finite(np.ones((3, 3)), "Rock")


def test_default_faces_fan_every_polygon_and_find_closedness():
    vertices, faces = meshes.cube()
    assert faces.triangles().shape == (12, 3)
    assert faces.is_closed()
    assert not Faces.from_polygons([(0, 1, 3, 2)]).is_closed()


def test_descriptions():
    assert description("TERRAIN", (3, 4), 1.0) == "Terrain 3x4"
    assert description("CYLINDER", (0.5, 2.0, True), 2.0) == "Cylinder r=1.000 h=4.000"
    assert description("CYLINDER", (0.5, 2.0, False), None) == (
        "Open tube r=0.500 h=2.000 (non-uniform scale)"
    )
    assert description("SPHERE", 1.0, None) == "Ellipsoid (sphere r=1.000, non-uniform scale)"
    assert description("SPHERE", 1.0, 3.0) == "Sphere r=3.000"


# ---------------------------------------------------------------------------- fit helpers


def test_snapped_rounds_only_within_tolerance():
    assert snapped(0.7000001, 1.0) == 0.7
    assert snapped(0.70001, 1.0) == 0.70001
    assert snapped(5000.0002, 1.0, noise=float(np.spacing(np.float32(5000)))) == 5000.0


def test_recognition_tolerance_grows_far_from_the_origin():
    near = np.array([(0, 0, 0), (1, 1, 1)], float)
    assert recognition_tolerance(near) == pytest.approx(1e-5)
    assert recognition_tolerance(near + 5000) == 4 * float(np.spacing(np.float32(5001)))


def test_cast_targets_get_exact_similarities():
    rotation = meshes.rotation((1, 2, 3), 0.4)
    matrix = np.eye(4)
    matrix[:3, :3] = (2.0 * rotation).astype(np.float32)  # Blender's float32 matrix
    sphere = as_cast_target(Placed(Sphere((0, 0, 0), 1.0), matrix), "SPHERE")
    singular = np.linalg.svd(sphere.matrix[:3, :3], compute_uv=False)
    # Exact up to the SVD's own rounding (a few ulps, LAPACK-dependent); the float32 matrix
    # it came from is 1e-7 off.
    assert np.abs(singular - 2.0).max() <= 1e-13
    assert np.abs(np.linalg.svd(matrix[:3, :3], compute_uv=False) - 2.0).max() > 1e-9
    sheared = np.eye(4)
    sheared[0, 1] = 0.5
    cylinder = Placed(Cylinder((0, 0, 0), (0, 0, 1), 1.0), sheared)
    assert as_cast_target(cylinder, "CYLINDER") is cylinder
