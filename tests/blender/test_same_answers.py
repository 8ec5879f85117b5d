"""The same answers on every supported Blender: a fixed scene (a scaled UV sphere, a turned
cylinder and a terrain) and fixed rays through Fire Ray, against the hits recorded in
same_answers.json, which same_answers_record.py computed with mpmath from the scene's
definition alone. `make test-all` runs this on bpy 4.2, 5.0 and 5.3 against one file."""

import json
import os

import bpy
import numpy as np
from blender_scenes import add_cylinder, add_uv_sphere, fire_single_ray, select_only, world_matrix

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "same_answers.json")) as file:
    RECORDED = json.load(file)
SCENE = RECORDED["scene"]
TOLERANCE = 1e-9  # the scene spans about 10 m


def add_terrain(lattice, location):
    """A mesh of quads on the lattice x, y in start + step * (0..count-1), at the recorder's
    height z = x^2 / 16 + y / 8 - 1 (every number exact in float32)."""
    start, step, count = lattice
    count = int(count)
    coordinates = start + step * np.arange(count)
    vertices = [(x, y, x * x / 16 + y / 8 - 1) for y in coordinates for x in coordinates]
    faces = [
        (j * count + i, j * count + i + 1, (j + 1) * count + i + 1, (j + 1) * count + i)
        for j in range(count - 1)
        for i in range(count - 1)
    ]
    mesh = bpy.data.meshes.new("Terrain")
    mesh.from_pydata(vertices, [], faces)
    terrain = bpy.data.objects.new("Terrain", mesh)
    bpy.context.scene.collection.objects.link(terrain)
    terrain.location = location
    return terrain


def build_scene():
    sphere = SCENE["sphere"]
    cylinder_settings = SCENE["cylinder"]
    objects = [
        add_uv_sphere(radius=sphere["radius"], location=sphere["location"], scale=sphere["scale"]),
        add_cylinder(
            radius=cylinder_settings["radius"],
            depth=cylinder_settings["depth"],
            location=cylinder_settings["location"],
        ),
        add_terrain(**SCENE["terrain"]),
    ]
    cylinder = objects[1]
    cylinder.rotation_mode = "QUATERNION"
    cylinder.rotation_quaternion = cylinder_settings["quaternion"]
    bpy.context.view_layer.update()
    return objects


def test_the_scene_is_the_one_recorded(empty_scene):
    sphere, cylinder, terrain = build_scene()
    expected_sphere = np.diag([*SCENE["sphere"]["scale"], 1.0])
    expected_sphere[:3, 3] = SCENE["sphere"]["location"]
    # the quaternion (0.5, 0.5, 0.5, 0.5): local x, y, z along world y, z, x
    expected_cylinder = np.array([[0, 0, 1, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1.0]])
    expected_cylinder[:3, 3] = SCENE["cylinder"]["location"]
    expected_terrain = np.eye(4)
    expected_terrain[:3, 3] = SCENE["terrain"]["location"]
    # (Blender turns a quaternion into a matrix with a factor sqrt(2) on each component:
    # its zeros come out as multiples of 2^-52)
    for obj, expected in ((sphere, expected_sphere), (cylinder, expected_cylinder)):
        np.testing.assert_allclose(world_matrix(obj), expected, rtol=0, atol=1e-15)
    assert (world_matrix(terrain) == expected_terrain).all()


def test_fire_ray_gives_the_recorded_hits(empty_scene):
    objects = build_scene()
    for record in RECORDED["rays"]:
        select_only(*objects)
        found = fire_single_ray(record["origin"], record["direction"])
        if record["target"] is None:
            assert found is None, record
            continue
        assert found is not None, record
        distance, point, normal, target = found
        assert target == record["target"], record
        assert abs(distance - record["distance"]) <= TOLERANCE, (distance, record)
        np.testing.assert_allclose(point, record["point"], rtol=0, atol=TOLERANCE)
        np.testing.assert_allclose(
            normal, record["normal"], rtol=0, atol=TOLERANCE, err_msg=str(record)
        )
