"""Objects to shapes: which meshes are spheres and cylinders (exact parameters from the
tessellation), and clear reasons for everything else."""

import bpy
import numpy as np
import pytest
from blender_scenes import add_cylinder, add_uv_sphere


@pytest.fixture
def mapping(addon):
    from geometry_queries.operators import mapping

    return mapping


def recognize(mapping, obj):
    return mapping.recognize(obj, bpy.context.evaluated_depsgraph_get())


def local_shape(recognized):
    return recognized.shape.shape


@pytest.mark.parametrize(
    "segments, rings, radius",
    [(32, 16, 1.0), (3, 3, 1.0), (4, 4, 2.5), (5, 7, 0.7), (64, 32, 0.25), (128, 64, 1.0)],
)
def test_uv_sphere_of_any_resolution_is_the_exact_sphere(
    empty_scene, mapping, segments, rings, radius
):
    sphere = add_uv_sphere(
        radius=radius,
        segments=segments,
        rings=rings,
        location=(1.0, 2.0, 3.0),
        rotation=(0.1, 0.2, 0.3),
    )
    recognized = recognize(mapping, sphere)
    assert recognized.kind == "SPHERE"
    assert local_shape(recognized).radius == radius  # exactly, not 0.9999998
    np.testing.assert_array_equal(local_shape(recognized).center, (0.0, 0.0, 0.0))
    np.testing.assert_array_equal(recognized.shape.matrix, np.array(sphere.matrix_world))
    assert recognized.description == f"Sphere r={radius:.3f}"


def test_icosphere_is_a_sphere(empty_scene, mapping):
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=1.25)
    recognized = recognize(mapping, bpy.context.object)
    assert recognized.kind == "SPHERE" and local_shape(recognized).radius == 1.25


def test_sphere_with_non_uniform_object_scale_is_an_ellipsoid(empty_scene, mapping):
    sphere = add_uv_sphere(radius=1.0, scale=(1.0, 2.0, 3.0))
    recognized = recognize(mapping, sphere)
    assert recognized.kind == "SPHERE"
    assert recognized.description == "Ellipsoid (sphere r=1.000, non-uniform scale)"
    uniform = add_uv_sphere(name="Big", radius=1.0, scale=(2.0, 2.0, 2.0))
    assert recognize(mapping, uniform).description == "Sphere r=2.000"


@pytest.mark.parametrize(
    "vertices, fill", [(32, "NGON"), (5, "NGON"), (7, "TRIFAN"), (200, "NGON")]
)
def test_cylinder_of_any_vertex_count_is_the_exact_cylinder(empty_scene, mapping, vertices, fill):
    cylinder = add_cylinder(
        radius=0.7,
        depth=3.5,
        vertices=vertices,
        end_fill_type=fill,
        location=(-1.0, 0.5, 2.0),
        rotation=(0.4, 0.0, 1.0),
    )
    recognized = recognize(mapping, cylinder)
    assert recognized.kind == "CYLINDER"
    shape = local_shape(recognized)
    assert shape.radius == 0.7
    ends = sorted([shape.p0.tolist(), shape.p1.tolist()])
    assert ends == [[0.0, 0.0, -1.75], [0.0, 0.0, 1.75]]
    assert recognized.description == "Cylinder r=0.700 h=3.500"


def test_cylinder_with_its_axis_edited_off_z_is_still_a_cylinder(empty_scene, mapping):
    cylinder = add_cylinder(radius=0.5, depth=2.0)
    mesh = cylinder.data
    rotation = np.array([[1, 0, 0], [0, 0.6, -0.8], [0, 0.8, 0.6]])  # rotate the mesh data
    positions = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", positions)
    mesh.vertices.foreach_set("co", (positions.reshape(-1, 3) @ rotation.T).ravel())
    mesh.update()
    shape = local_shape(recognize(mapping, cylinder))
    axis = (shape.p1 - shape.p0) / np.linalg.norm(shape.p1 - shape.p0)
    assert abs(abs(axis @ rotation[:, 2]) - 1.0) < 1e-9
    assert shape.radius == 0.5


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda: bpy.ops.mesh.primitive_cube_add(), "two parallel planes"),
        (lambda: bpy.ops.mesh.primitive_cube_add(), "only 4 vertices per circle"),
        (lambda: bpy.ops.mesh.primitive_cylinder_add(vertices=3), "a cylinder needs at least 5"),
        (lambda: bpy.ops.mesh.primitive_cone_add(), "no circle"),
        (lambda: bpy.ops.mesh.primitive_torus_add(), "not equidistant"),
        (lambda: bpy.ops.mesh.primitive_monkey_add(), "not equidistant"),
        (lambda: bpy.ops.object.empty_add(), "is an empty object that instances nothing"),
        (lambda: bpy.ops.curve.primitive_bezier_curve_add(), "is a curve object, not a mesh"),
    ],
)
def test_other_objects_are_rejected_with_a_reason_naming_them(empty_scene, mapping, make, reason):
    make()
    obj = bpy.context.object
    obj.name = "Thing"
    with pytest.raises(mapping.NotRecognized) as error:
        recognize(mapping, obj)
    assert str(error.value).startswith("Thing ")
    assert reason in str(error.value)


def test_sphere_with_one_vertex_moved_is_rejected(empty_scene, mapping):
    sphere = add_uv_sphere(radius=1.0)
    sphere.data.vertices[100].co.x += 0.01
    with pytest.raises(mapping.NotRecognized, match="not equidistant"):
        recognize(mapping, sphere)


def test_modifiers_count_a_displaced_sphere_is_no_sphere(empty_scene, mapping):
    sphere = add_uv_sphere(radius=1.0)
    assert recognize(mapping, sphere).kind == "SPHERE"
    displace = sphere.modifiers.new("Displace", "DISPLACE")
    displace.strength = 0.3
    displace.texture = bpy.data.textures.new("Noise", "CLOUDS")
    with pytest.raises(mapping.NotRecognized, match="not equidistant"):
        recognize(mapping, sphere)
    displace.show_viewport = False
    assert recognize(mapping, sphere).kind == "SPHERE"  # read afresh, nothing cached


def test_describe_never_raises(empty_scene, mapping):
    sphere = add_uv_sphere(radius=1.0)
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.object
    depsgraph = bpy.context.evaluated_depsgraph_get()
    assert mapping.describe(sphere, depsgraph) == (True, "Sphere r=1.000")
    recognized, text = mapping.describe(cube, depsgraph)
    assert not recognized and text.startswith("is not a supported shape: not a sphere")
