"""Scene building, snapshots and independent float64 references for the Blender tests.

The references solve each query from scratch (a quadratic for the ellipsoid, side and caps
for the cylinder, Moeller-Trumbore over the evaluated mesh's own loop triangles for the
terrain), so they share no code with ``core``."""

import functools

import bpy
import numpy as np

TAG = "geometry_queries"


# ---------------------------------------------------------------------------- scenes


def placed(obj, name, location, rotation, scale):
    """Name ``obj`` and give it an object transform (the primitives' own ``scale`` argument
    would scale the mesh data instead, and a squashed sphere mesh is no sphere)."""
    obj.name = name
    obj.location, obj.rotation_euler, obj.scale = location, rotation, scale
    bpy.context.view_layer.update()  # matrix_world follows
    return obj


def add_uv_sphere(
    name="Sphere",
    radius=1.0,
    location=(0, 0, 0),
    rotation=(0, 0, 0),
    scale=(1, 1, 1),
    segments=32,
    rings=16,
):
    bpy.ops.mesh.primitive_uv_sphere_add(segments=segments, ring_count=rings, radius=radius)
    return placed(bpy.context.object, name, location, rotation, scale)


def add_cylinder(
    name="Cylinder",
    radius=1.0,
    depth=2.0,
    location=(0, 0, 0),
    rotation=(0, 0, 0),
    scale=(1, 1, 1),
    vertices=32,
    end_fill_type="NGON",
):
    bpy.ops.mesh.primitive_cylinder_add(
        vertices=vertices, radius=radius, depth=depth, end_fill_type=end_fill_type
    )
    return placed(bpy.context.object, name, location, rotation, scale)


def add_displaced_grid(
    name="Terrain",
    vertices_per_side=9,
    size=2.0,
    strength=0.4,
    location=(0, 0, 0),
    rotation=(0, 0, 0),
    scale=(1, 1, 1),
):
    """A Grid primitive with a Displace modifier (cloud texture; displaces along the normal,
    i.e. z, so the XY lattice stays regular)."""
    bpy.ops.mesh.primitive_grid_add(
        x_subdivisions=vertices_per_side - 1, y_subdivisions=vertices_per_side - 1, size=size
    )
    obj = placed(bpy.context.object, name, location, rotation, scale)
    texture = bpy.data.textures.new(f"{name} clouds", "CLOUDS")
    texture.noise_scale = 0.6
    displace = obj.modifiers.new("Displace", "DISPLACE")
    displace.texture = texture
    displace.strength = strength
    return obj


def select_only(*objects):
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj in objects)
    if objects:
        bpy.context.view_layer.objects.active = objects[0]


def snapshot():
    """Everything a failed operator must leave alone: object, collection and mesh names,
    and which objects each collection holds."""
    return (
        sorted(obj.name for obj in bpy.data.objects),
        sorted((c.name, tuple(sorted(o.name for o in c.objects))) for c in bpy.data.collections),
        sorted(mesh.name for mesh in bpy.data.meshes),
    )


def created_markers():
    return [obj for obj in bpy.data.objects if TAG in obj and obj.type == "EMPTY"]


def created_point_meshes():
    return [obj for obj in bpy.data.objects if TAG in obj and obj.type == "MESH"]


def float32(values):
    """What a FloatVectorProperty stores: the float32 nearest each value, as float64."""
    return np.asarray(values, dtype=np.float32).astype(np.float64)


def unit(vector):
    vector = np.asarray(vector, dtype=np.float64)
    return vector / np.linalg.norm(vector)


def world_matrix(obj):
    return np.array(obj.matrix_world, dtype=np.float64)


def marker_result(marker):
    """(distance, point, normal) stored on a hit empty, all float64."""
    return (
        marker["distance"],
        np.array(marker["point"], dtype=np.float64),
        np.array(marker["normal"], dtype=np.float64),
    )


def fire_single_ray(origin, direction, **options):
    """Fire one ray through the operator; the one new hit empty's (distance, point,
    normal, target), or None when it missed."""
    before = {obj.name for obj in created_markers()}
    bpy.ops.geometry_queries.fire_ray(
        origin=origin, direction=direction, pattern="SINGLE", output="EMPTIES", **options
    )
    new = [obj for obj in created_markers() if obj.name not in before]
    assert len(new) <= 1
    if not new:
        return None
    return marker_result(new[0]) + (new[0]["target"],)


def blender_ray_cast(origin, direction, distance=1e4):
    """Blender's own scene.ray_cast: (distance, unit normal) or None."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    found, location, normal, _, _, _ = bpy.context.scene.ray_cast(
        depsgraph, tuple(origin), tuple(direction), distance=distance
    )
    if not found:
        return None
    return float(np.linalg.norm(np.array(location) - origin)), unit(normal)


def blender_local_normal(matrix, world_normal):
    """The facet's own (local) unit normal behind the world normal scene.ray_cast returned on
    an object of world ``matrix``. Blender 5.0 and earlier turn the facet normal to world
    space with the matrix's linear part L, so it leans off the world surface under a
    non-uniform scale, and L^-1 takes it back; later versions use the inverse transpose,
    which L^T takes back (_scene_ray_cast_normals_are_covectors finds which)."""
    linear = np.asarray(matrix, dtype=np.float64)[:3, :3]
    if _scene_ray_cast_normals_are_covectors():
        return unit(linear.T @ world_normal)
    return unit(np.linalg.solve(linear, world_normal))


@functools.cache
def _scene_ray_cast_normals_are_covectors():
    """Which way this Blender's scene.ray_cast turns normals: asked of a tilted plane
    stretched along y, put for a moment far from everything in the current scene."""
    mesh = bpy.data.meshes.new("normal probe")
    mesh.from_pydata([(-1, -1, -0.5), (1, -1, -0.5), (1, 1, 0.5), (-1, 1, 0.5)], [], [(0, 1, 2, 3)])
    plane = bpy.data.objects.new("normal probe", mesh)
    bpy.context.scene.collection.objects.link(plane)
    far = np.array([1e4, -1e4, 1e4])
    plane.location = far
    plane.scale = (1.0, 3.0, 1.0)
    try:
        depsgraph = bpy.context.evaluated_depsgraph_get()
        found, _, normal, _, _, _ = bpy.context.scene.ray_cast(
            depsgraph, tuple(far + (0, 0, 2)), (0, 0, -1), distance=4.0
        )
        assert found
        local = unit([0.0, -1.0, 2.0])
        covector = unit(np.diag([1.0, 1 / 3.0, 1.0]) @ local)
        vector = unit(np.diag([1.0, 3.0, 1.0]) @ local)
        normal = np.array(normal)
        assert min(np.abs(normal - covector).max(), np.abs(normal - vector).max()) < 1e-6
        return bool(np.abs(normal - covector).max() < 1e-6)
    finally:
        bpy.data.objects.remove(plane)
        bpy.data.meshes.remove(mesh)


# ---------------------------------------------------------------------------- references
# A world ray o + t d (|d| = 1) is the local ray M^-1 o + t L^-1 d with the SAME parameter t,
# because the placement is affine; so local solutions are world distances directly.


def _local_ray(matrix, origin, direction):
    inverse = np.linalg.inv(matrix)
    return inverse[:3, :3] @ origin + inverse[:3, 3], inverse[:3, :3] @ direction


def _world_normal(matrix, local_normal):
    return unit(np.linalg.inv(matrix[:3, :3]).T @ local_normal)


def ray_ellipsoid(matrix, radius, origin, direction):
    """First hit (t, point, normal) of a ray on Placed(Sphere(0, radius), matrix), or None."""
    origin, direction = np.asarray(origin, float), unit(direction)
    o, d = _local_ray(matrix, origin, direction)
    a, b, c = d @ d, 2.0 * (o @ d), o @ o - radius * radius
    discriminant = b * b - 4.0 * a * c
    if discriminant < 0:
        return None
    root = np.sqrt(discriminant)
    q = -0.5 * (b + np.copysign(root, b))
    t0, t1 = sorted((q / a, c / q))
    if t1 < 0:
        return None
    t = max(t0, 0.0)
    return t, origin + t * direction, _world_normal(matrix, o + t * d)


def ray_cylinder(matrix, radius, depth, origin, direction, capped=True):
    """First hit of a ray on Placed(Cylinder((0,0,-depth/2), (0,0,depth/2), radius), matrix),
    or None; from inside the solid, at distance 0. ``capped=False``: the open tube, its wall
    hit from either side (from inside too), the normal facing the ray."""
    origin, direction = np.asarray(origin, float), unit(direction)
    o, d = _local_ray(matrix, origin, direction)
    half = 0.5 * depth
    if capped and o[0] ** 2 + o[1] ** 2 < radius**2 and abs(o[2]) < half:
        return 0.0, origin, -direction
    candidates = []
    a = d[0] ** 2 + d[1] ** 2
    if a > 0:
        b = 2.0 * (o[0] * d[0] + o[1] * d[1])
        c = o[0] ** 2 + o[1] ** 2 - radius**2
        discriminant = b * b - 4 * a * c
        if discriminant >= 0:
            root = np.sqrt(discriminant)
            for t in ((-b - root) / (2 * a), (-b + root) / (2 * a)):
                p = o + t * d
                if t >= 0 and abs(p[2]) <= half:
                    radial = np.array([p[0], p[1], 0.0])
                    candidates.append((t, radial if radial @ d <= 0 or capped else -radial))
    if d[2] != 0 and capped:
        for z in (-half, half):
            t = (z - o[2]) / d[2]
            p = o + t * d
            if t >= 0 and p[0] ** 2 + p[1] ** 2 <= radius**2:
                candidates.append((t, np.array([0.0, 0.0, np.sign(z)])))
    if not candidates:
        return None
    t, local_normal = min(candidates, key=lambda item: item[0])
    return t, origin + t * direction, _world_normal(matrix, local_normal)


def evaluated_world_triangles(obj):
    """(T, 3, 3) float64 world-space triangles of the evaluated mesh's loop triangles."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.data
    positions = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", positions)
    positions = positions.reshape(-1, 3).astype(np.float64)
    corners = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", corners)
    matrix = world_matrix(evaluated)
    world = positions @ matrix[:3, :3].T + matrix[:3, 3]
    return world[corners.reshape(-1, 3)]


def ray_triangles(triangles, origin, direction):
    """Nearest Moeller-Trumbore hit (t, point, upward unit normal) over ``triangles``."""
    origin, direction = np.asarray(origin, float), unit(direction)
    v0, v1, v2 = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    e1, e2 = v1 - v0, v2 - v0
    p = np.cross(direction, e2)
    det = np.einsum("ij,ij->i", e1, p)
    ok = np.abs(det) > 1e-300
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = origin - v0
    u = np.einsum("ij,ij->i", s, p) * inv
    q = np.cross(s, e1)
    v = (q @ direction) * inv
    t = np.einsum("ij,ij->i", e2, q) * inv
    valid = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0)
    if not valid.any():
        return None
    best = np.flatnonzero(valid)[np.argmin(t[valid])]
    normal = unit(np.cross(e1[best], e2[best]))
    return t[best], origin + t[best] * direction, normal * np.sign(normal[2])
