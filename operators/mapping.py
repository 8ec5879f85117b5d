"""Blender objects -> core shapes: each recognised object becomes ``Placed(shape, matrix_world)``.

The mesh is read from the **evaluated** object (``obj.evaluated_get(depsgraph).data``), so
modifiers count, and it is read afresh on every call. Vertices are read with ``foreach_get``
into numpy; no Python loop runs per vertex. The one thing remembered between calls is each
object's recognised local shape together with a copy of exactly the mesh data it was
computed from (positions and the topology it depends on; shape_cache.py): it is reused only
when all of that is bit-identical (the topology compared again only after Blender reported a
geometry update of the object), so it cannot go stale, and it saves re-reading
``mesh.loop_triangles`` (~65 ms for a 512 x 512 grid) on every query. The placement
(``matrix_world``) is read on every call.

First every vertex must be finite (an inf or nan vertex, e.g. from a shape key or a
modifier, is refused naming the object before any fit). Recognition rules, tried in this
order on the evaluated mesh in the object's local space (``tolerance`` = 1e-5 of the mesh's
size, well above float32 vertex noise and well below any visible edit, or
``FLOAT32_ULPS`` = 4 float32 ulps at the largest |coordinate| when that is more: a mesh
far from its object's origin, such as a 1 m sphere whose vertices sit at x = 5000 where
float32 steps by 4.9e-4):

terrain   the vertices form a regular XY lattice (nx x ny distinct, evenly spaced x and y
          values, exactly one vertex per lattice point, any z) and the loop triangles cover
          every lattice cell with two triangles. Becomes ``Heightfield(heights, spacing,
          origin, diagonals=..., solid=...)`` with each cell's diagonal read from
          ``mesh.loop_triangles`` (the split Blender draws), in the caller's terrain model:
          'SURFACE' (solid=False: the triangles as drawn, hit from either side, so hits
          agree with scene.ray_cast under any object transform) or 'SOLID' (the ground
          below the surface in the terrain's local axes). A Grid primitive with Displace (or
          any modifier that moves vertices only in z) is one.
cylinder  its vertices lie on two parallel planes, on two circles of equal radius whose
          centres lie on one axis perpendicular to the planes, at least
          ``MIN_CYLINDER_SEGMENTS`` = 5 vertices per circle (a 4-sided prism is a box, such
          as the default cube; a 3-sided one a wedge); the centre vertices of triangle-fan
          caps are allowed. A closed mesh (every edge has two faces: Cap Fill Type N-Gon or
          Triangle Fan) is the capped solid ``Cylinder``; a mesh open exactly at its two rims
          (Cap Fill Type Nothing) the open tube ``Cylinder(..., capped=False)``.
sphere    the mesh is closed and its vertices are equidistant from one centre (least-squares
          sphere, every vertex within ``tolerance``) AND they do not all lie on two parallel
          planes. Equidistance alone is not enough: the vertices of a cube or a cylinder are
          equidistant from their centre too, but all sit on two parallel circles, while a UV
          sphere (any segments >= 3, rings >= 3: two poles and at least two rings) or an
          icosphere never does. Non-uniform object scale makes it an ellipsoid, exactly.

Exact parameters. A UV sphere of radius 1 has vertices at float32 precision (about 1e-7
off the sphere, biased slightly inwards by Blender's float math); the fitted radius is
snapped to the nearest "round" value (a multiple of 1e-5 of the shape's size, so radius 1,
0.7 or 2.5 come out exact) when that value lies within ``SNAP_TOLERANCE`` of the fit,
otherwise the fit is kept; far from the origin the size used is at least one float32 ulp
there / SNAP_TOLERANCE (the vertices cannot tell closer values apart). Fits work in
coordinates relative to the vertices' mean. Centres and cylinder end points snap the same
way (a centre 1e-8 from the origin becomes the origin). Terrain heights are the vertex z
values as they are; the lattice origin and spacing come from the extreme vertices.

Instances. A selected object that instances others (an empty instancing a collection,
nested or not; a geometry-nodes modifier's instances, of objects or of meshes it makes)
stands for its instances, each a target at its own instance transform, read from
``depsgraph.object_instances``; its own mesh counts too when it has vertices. A target is
named after what it instances, e.g. "Sphere (instance of Rocks via Empty)" or "Geometry
(instance 3/8 via Points)" (a mesh made by geometry nodes has no object of its own). Each
distinct mesh is recognised once per call, whatever the number of its instances.

Anything else raises :class:`NotRecognized` (a ValueError) naming the object and why.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from .. import core
from ..core.vectors import plane_basis
from .shape_cache import (
    SHAPES,
    Fingerprint,
    read_corner_edges,
    read_corner_verts,
    read_triangle_faces,
)

RELATIVE_TOLERANCE = 1e-5
FLOAT32_ULPS = 4  # vertices are float32, computed in float32: a few ulps of noise
SNAP_TOLERANCE = 3e-6  # relative to the shape's size
MIN_CYLINDER_SEGMENTS = 5
TERRAIN_MODELS = ("SURFACE", "SOLID")  # operators/properties.py describes them
SIMILARITY_TOLERANCE = 1e-6  # relative spread of a placement's singular values


class NotRecognized(ValueError):
    """An object that is not (yet) a shape core can query; the message says why."""


@dataclass
class Recognized:
    """A selected object as a core shape in world space."""

    name: str  # the object's name
    kind: str  # 'SPHERE', 'CYLINDER' or 'TERRAIN'
    shape: object  # core.Placed(local shape, matrix_world)
    description: str  # e.g. "Sphere r=1.000", "Terrain 256x256"


# ---------------------------------------------------------------------------- reading


def mesh_positions(mesh) -> np.ndarray:
    """(N, 3) float32 vertex positions of ``mesh``, as Blender stores them (the fast
    attribute path of foreach_get)."""
    count = len(mesh.vertices)
    positions = np.empty(count * 3, dtype=np.float32)
    if count:
        mesh.attributes["position"].data.foreach_get("vector", positions)
    return positions.reshape(count, 3)


def mesh_is_closed(mesh) -> bool:
    """True when every edge is used by exactly two faces (a closed, manifold surface)."""
    if len(mesh.edges) == 0:
        return False
    corner_edges = read_corner_edges(mesh)
    return bool((np.bincount(corner_edges, minlength=len(mesh.edges)) == 2).all())


def open_at_both_rims(mesh, low: np.ndarray) -> bool:
    """True when ``mesh``'s faces leave open exactly its two rims: every vertex lies on the
    boundary, which has one edge per vertex, each joining two vertices of one circle
    (``low``: the vertices on the first one). So no cap face, no centre vertex, no missing
    side face (its boundary would run from circle to circle).

    The faces' vertex cycles come from ``.corner_vert`` and the loop triangles' faces (a face
    of n corners has n - 2 triangles), the data a terrain's cache entry is keyed on too."""
    corner_verts = read_corner_verts(mesh)
    corners = np.bincount(read_triangle_faces(mesh), minlength=len(mesh.polygons)) + 2
    start = np.repeat(np.cumsum(corners) - corners, corners)
    size = np.repeat(corners, corners)
    corner = np.arange(len(corner_verts))
    following = corner_verts[start + (corner - start + 1) % size]
    pairs = np.sort(np.column_stack([corner_verts, following]), axis=1)
    pairs, uses = np.unique(pairs, axis=0, return_counts=True)
    boundary = pairs[uses == 1]
    vertex_count = len(mesh.vertices)
    return bool(
        (uses <= 2).all()
        and len(boundary) == vertex_count
        and (np.bincount(boundary.ravel(), minlength=vertex_count) == 2).all()
        and (low[boundary[:, 0]] == low[boundary[:, 1]]).all()
    )


def loop_triangle_vertices(mesh) -> np.ndarray:
    """(T, 3) vertex indices of Blender's own triangulation of ``mesh``: the triangles'
    corners (``loops``) mapped through ``.corner_vert``, which reads ~25% faster than the
    triangles' ``vertices`` (both are RNA reads item by item, ~65 ms for 522k triangles)."""
    triangles = mesh.loop_triangles
    corners = np.empty(len(triangles) * 3, dtype=np.int32)
    if len(corners):
        triangles.foreach_get("loops", corners)
    return read_corner_verts(mesh)[corners].reshape(-1, 3)


def world_matrix(evaluated_object) -> np.ndarray:
    return np.array(evaluated_object.matrix_world, dtype=np.float64)


# ---------------------------------------------------------------------------- snapping


def snapped(values, size: float, noise: float = 0.0):
    """``values`` rounded to multiples of 1e-5 * size (a decimal step) where that moves
    them by at most SNAP_TOLERANCE * size; other values are returned unchanged. ``noise``
    (float32_noise of the vertices) raises ``size`` to at least noise / SNAP_TOLERANCE: far
    from the origin the vertices cannot tell apart values closer than one float32 ulp."""
    values = np.asarray(values, dtype=np.float64)
    size = max(size, noise / SNAP_TOLERANCE)
    step = 10.0 ** (np.floor(np.log10(size)) - 5)
    rounded = np.round(values / step) * step
    # Shorten the binary expansion: 0.7 as the double nearest to 0.7, not 0.7000000000000001.
    rounded = np.array([float(f"{value:.12g}") for value in np.atleast_1d(rounded)]).reshape(
        rounded.shape
    )
    return np.where(np.abs(rounded - values) <= SNAP_TOLERANCE * size, rounded, values)


# ---------------------------------------------------------------------------- geometry helpers


def spread_sample(points: np.ndarray, count: int) -> np.ndarray:
    """Indices of ``count`` points far apart from each other (farthest-point sampling)."""
    distance = np.linalg.norm(points - points.mean(axis=0), axis=1)
    chosen = [int(np.argmax(distance))]
    distance = np.linalg.norm(points - points[chosen[0]], axis=1)
    for _ in range(count - 1):
        chosen.append(int(np.argmax(distance)))
        distance = np.minimum(distance, np.linalg.norm(points - points[chosen[-1]], axis=1))
    return np.array(chosen)


def two_parallel_planes(points: np.ndarray, tolerance: float):
    """(unit normal, heights of the points along it) when all points lie on at most two
    parallel planes, else None.

    If they do, at least four of any seven points lie on one of the planes (pigeonhole).
    Points on a circle, plus perhaps its centre (a triangle-fan cap), have at most three on
    a line (the centre and two opposite rim points), so some three of those four span their
    plane; trying the planes through every triple of seven well-spread points finds it."""
    if len(points) < 5:
        return None
    count = min(7, len(points))
    sample = points[spread_sample(points, count)]
    # The candidate normals in one go (np.cross per 3-vector costs ~80 us).
    a, b, c = (sample[list(k)] for k in zip(*combinations(range(count), 3)))
    normals = np.cross(b - a, c - a)
    lengths = np.linalg.norm(normals, axis=1)
    edges = np.linalg.norm(b - a, axis=1)
    for k in range(len(normals)):
        if lengths[k] <= tolerance * edges[k]:
            continue
        normal = normals[k] / lengths[k]
        heights = points @ normal
        off_first = np.abs(heights - a[k] @ normal) > tolerance
        if not off_first.any():
            return normal, heights
        other = heights[off_first]
        if np.abs(other - other[0]).max() <= tolerance:
            return normal, heights
    return None


def fit_sphere(points: np.ndarray):
    """Least-squares (algebraic) sphere through ``points`` (a circle for 2D points):
    (centre, radius). |p - c|^2 = r^2 is linear in (c, r^2 - |c|^2) once expanded."""
    mean = points.mean(axis=0)
    centred = points - mean
    matrix = np.column_stack([2.0 * centred, np.ones(len(points))])
    rhs = np.einsum("ij,ij->i", centred, centred)
    solution, *_ = np.linalg.lstsq(matrix, rhs, rcond=None)
    centre = solution[:-1] + mean
    radius = float(np.linalg.norm(points - centre, axis=1).mean())
    return centre, radius


def shape_size(points: np.ndarray) -> float:
    return float(np.ptp(points, axis=0).max())


def float32_noise(points: np.ndarray) -> float:
    """One float32 ulp at the points' largest |coordinate|: how finely Blender can place a
    vertex there (6e-5 at 700, 4.9e-4 at 5000), whatever the mesh's own size."""
    return float(np.spacing(np.float32(np.abs(points).max())))


def recognition_tolerance(points: np.ndarray) -> float:
    """How far a vertex may be off an exact shape and still count as on it: 1e-5 of the
    mesh's size, or ``FLOAT32_ULPS`` ulps of float32 at its largest |coordinate| when that is
    more (a mesh far from its object's origin, e.g. with its transform applied)."""
    return max(RELATIVE_TOLERANCE * shape_size(points), FLOAT32_ULPS * float32_noise(points))


# ---------------------------------------------------------------------------- recognisers
# Each returns (local shape, description) or raises NotRecognized with the reason alone.


def lattice_diagonals(triangles: np.ndarray, i: np.ndarray, j: np.ndarray, nx: int, ny: int):
    """Each lattice cell's diagonal, (ny-1, nx-1) bool (True: split along (i+1, j)-(i, j+1)),
    from the mesh's loop triangles (vertex indices) and the lattice column ``i`` and row
    ``j`` of every vertex; NotRecognized unless every cell holds exactly two triangles.

    A triangle of cell (ci, cj) uses three of its four corners, coded (i - ci) + 2 (j - cj):
    0 (ci, cj), 1 (ci+1, cj), 2 (ci, cj+1), 3 (ci+1, cj+1); the code it leaves out is
    6 - (sum of its codes). A cell split along (ci, cj)-(ci+1, cj+1) has triangles leaving
    out 1 and 2; split along (ci+1, cj)-(ci, cj+1), 0 and 3: either way they sum to 3."""
    cells = (nx - 1) * (ny - 1)
    not_cells = NotRecognized(f"its faces do not cover the {nx}x{ny} vertex lattice cell by cell")
    if len(triangles) != 2 * cells:
        raise not_cells
    # Column-wise arithmetic: numpy reductions along a length-3 axis are slow.
    first, second, third = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    i0, i1, i2 = i[first], i[second], i[third]
    j0, j1, j2 = j[first], j[second], j[third]
    cell_i = np.minimum(np.minimum(i0, i1), i2)
    cell_j = np.minimum(np.minimum(j0, j1), j2)
    c0 = (i0 - cell_i) + 2 * (j0 - cell_j)
    c1 = (i1 - cell_i) + 2 * (j1 - cell_j)
    c2 = (i2 - cell_i) + 2 * (j2 - cell_j)
    within_cell = (np.maximum(np.maximum(i0, i1), i2) - cell_i <= 1) & (
        np.maximum(np.maximum(j0, j1), j2) - cell_j <= 1
    )
    if not (within_cell & (c0 != c1) & (c1 != c2) & (c0 != c2)).all():
        raise not_cells
    left_out = 6 - (c0 + c1 + c2)
    cell = cell_j * (nx - 1) + cell_i
    if (np.bincount(cell, minlength=cells) != 2).any() or (
        np.bincount(cell, weights=left_out, minlength=cells) != 3
    ).any():
        raise not_cells
    anti = np.bincount(cell, weights=(left_out == 0), minlength=cells)
    return (anti == 1).reshape(ny - 1, nx - 1)


def as_terrain(mesh, points: np.ndarray):
    x, y, z = points[:, 0], points[:, 1], points[:, 2]
    x_min, x_max, y_min, y_max = x.min(), x.max(), y.min(), y.max()
    tolerance = recognition_tolerance(points[:, :2])
    if not (x_max - x_min > tolerance and y_max - y_min > tolerance):
        raise NotRecognized("its vertices have no extent in x or y")
    nx = int(np.count_nonzero(np.abs(y - y_min) <= tolerance))
    if nx < 2 or len(points) % nx:
        raise NotRecognized("its vertices do not form a regular XY lattice")
    ny = len(points) // nx
    if ny < 2:
        raise NotRecognized("its vertices do not form a regular XY lattice")
    dx = (x_max - x_min) / (nx - 1)
    dy = (y_max - y_min) / (ny - 1)
    i = np.rint((x - x_min) / dx).astype(np.int32)
    j = np.rint((y - y_min) / dy).astype(np.int32)
    on_lattice = (np.abs(x - (x_min + i * dx)) <= tolerance) & (
        np.abs(y - (y_min + j * dy)) <= tolerance
    )
    lattice_index = j.astype(np.int64) * nx + i
    if not on_lattice.all() or np.bincount(lattice_index, minlength=nx * ny).max() != 1:
        raise NotRecognized("its vertices do not form a regular XY lattice")
    heights = np.empty(nx * ny)
    heights[lattice_index] = z
    heights = heights.reshape(ny, nx)
    diagonals = lattice_diagonals(loop_triangle_vertices(mesh), i, j, nx, ny)

    return Terrain(heights, (dx, dy), (x_min, y_min), diagonals), (nx, ny)


class Terrain:
    """A recognised terrain in local space, and its Heightfield in each terrain model, built
    on first use from the same lattice, heights and diagonals (the exact triangles Blender
    draws): 'SURFACE' is those triangles alone, hit from either side (solid=False); 'SOLID'
    the ground below them in the terrain's local axes (solid=True)."""

    def __init__(self, heights, spacing, origin, diagonals):
        self.heights = heights
        self.diagonals = diagonals
        self.lattice = dict(spacing=spacing, origin=origin, surface="TRIANGLES")
        self.fields = {}

    def field(self, terrain_model: str):
        if terrain_model not in TERRAIN_MODELS:
            raise ValueError(
                f"terrain_model must be one of {', '.join(TERRAIN_MODELS)}, got {terrain_model!r}"
            )
        if terrain_model not in self.fields:
            self.fields[terrain_model] = core.Heightfield(
                self.heights,
                diagonals=self.diagonals,
                solid=terrain_model == "SOLID",
                **self.lattice,
            )
        return self.fields[terrain_model]

    def arrays(self) -> list:
        """The arrays it holds (made read-only when it is cached)."""
        return [array for array in (self.heights, self.diagonals) if array is not None]

    def held_arrays(self) -> list:
        """Every array it holds now, its Heightfields' included (what the shape cache
        charges it; they grow as models, hierarchies and mirror images are first used)."""
        held = self.arrays()
        for field in self.fields.values():
            held += field.held_arrays()
        return held


def as_cylinder(mesh, points: np.ndarray, planes):
    """``planes``: two_parallel_planes(points, recognition_tolerance(points))."""
    size, noise = shape_size(points), float32_noise(points)
    tolerance = recognition_tolerance(points)
    if planes is None:
        raise NotRecognized("its vertices do not lie on two parallel planes")
    normal, heights = planes
    low = heights <= heights.min() + tolerance
    if low.all():
        raise NotRecognized("it is flat")
    first, second = plane_basis(normal)
    circles = []
    for group in (low, ~low):
        ring = points[group]
        # Triangle-fan caps add a vertex at the circle's centre, which is the mean of a
        # regular ring: leave it out of the circle.
        ring = ring[np.linalg.norm(ring - ring.mean(axis=0), axis=1) > tolerance]
        if len(ring) < 3:
            raise NotRecognized("one of its two parallel planes holds no circle (like a cone)")
        if len(ring) < MIN_CYLINDER_SEGMENTS:
            raise NotRecognized(
                f"it has only {len(ring)} vertices per circle (a box or prism; a cylinder needs "
                f"at least {MIN_CYLINDER_SEGMENTS})"
            )
        flat = np.column_stack([ring @ first, ring @ second])
        centre2d, radius = fit_sphere(flat)
        if np.abs(np.linalg.norm(flat - centre2d, axis=1) - radius).max() > tolerance:
            raise NotRecognized("its vertices on each cap plane do not lie on a circle")
        level = float((ring @ normal).mean())
        circles.append((centre2d[0] * first + centre2d[1] * second + level * normal, radius))
    (p0, r0), (p1, r1) = circles
    if abs(r0 - r1) > tolerance:
        raise NotRecognized(f"its two circles differ in radius ({r0:.4g} and {r1:.4g})")
    axis = p1 - p0
    if np.linalg.norm(axis - (axis @ normal) * normal) > tolerance:
        raise NotRecognized("its two circles are not on one axis (sheared)")
    capped = mesh_is_closed(mesh)
    if not capped and not open_at_both_rims(mesh, low):
        raise NotRecognized(
            "its surface is open, but not just at both ends (a cap or a side face is missing)"
        )
    radius = float(snapped(0.5 * (r0 + r1), size, noise))
    p0, p1 = snapped(p0, size, noise), snapped(p1, size, noise)
    return core.Cylinder(p0, p1, radius, capped=capped), (
        radius,
        float(np.linalg.norm(p1 - p0)),
        capped,
    )


def as_sphere(mesh, points: np.ndarray, planes):
    """``planes``: as for as_cylinder."""
    size, noise = shape_size(points), float32_noise(points)
    tolerance = recognition_tolerance(points)
    if len(points) < 5:
        raise NotRecognized(f"it has only {len(points)} vertices")
    centre, radius = fit_sphere(points)
    deviation = np.abs(np.linalg.norm(points - centre, axis=1) - radius).max()
    if not deviation <= tolerance:
        raise NotRecognized(
            f"its vertices are not equidistant from a centre (up to {deviation:.3g} off)"
        )
    if planes is not None:
        raise NotRecognized(
            "its vertices lie on two parallel planes (like a box, prism or cone), "
            "not spread over a sphere"
        )
    if not mesh_is_closed(mesh):
        raise NotRecognized("its surface is open (not a solid sphere)")
    centre = snapped(centre, size, noise)
    radius = float(snapped(radius, size, noise))
    centre_error = np.abs(np.linalg.norm(points - centre, axis=1) - radius).max()
    if centre_error > tolerance:
        raise NotRecognized("its snapped centre does not fit its vertices")
    return core.Sphere(centre, radius), radius


# ---------------------------------------------------------------------------- public


def scale_description(matrix: np.ndarray):
    """(uniform scale factor, or None when the placement scales non-uniformly)."""
    singular = np.linalg.svd(matrix[:3, :3], compute_uv=False)
    if singular[0] - singular[-1] <= 1e-6 * singular[0]:
        return float(singular[0])
    return None


def recognize(obj, depsgraph, terrain_model: str = "SURFACE") -> Recognized:
    """``obj`` (an original or evaluated object) as a placed core shape, from its own mesh
    (recognize_object also takes an instancer's instances).

    Raises NotRecognized naming the object and why it is not a sphere, cylinder or terrain,
    or why core refused it (e.g. a zero scale makes its matrix singular)."""
    try:
        return recognize_shape(obj, depsgraph, terrain_model)
    except NotRecognized:
        raise
    except ValueError as error:
        raise NotRecognized(f"{obj.name} cannot be queried: {error}") from None


def not_a_mesh(name: str, object_type: str) -> NotRecognized:
    kind = object_type.lower().replace("_", " ")
    article = "an" if kind[0] in "aeiou" else "a"
    return NotRecognized(
        f"{name} is {article} {kind} object, not a mesh "
        "(only sphere, cylinder and terrain meshes are supported)"
    )


def recognize_shape(obj, depsgraph, terrain_model: str) -> Recognized:
    name = obj.name
    if obj.type == "EMPTY":
        collection = obj.instance_collection if obj.instance_type == "COLLECTION" else None
        if collection is not None:
            raise NotRecognized(
                f"{name} instances the collection {collection.name}, which holds no meshes "
                "(only sphere, cylinder and terrain meshes are supported)"
            )
        raise NotRecognized(
            f"{name} is an empty object that instances nothing (only sphere, cylinder and "
            "terrain meshes, or an empty instancing a collection of them, are supported)"
        )
    if obj.type != "MESH":
        raise not_a_mesh(name, obj.type)
    evaluated = obj.evaluated_get(depsgraph)
    kind, shape, size = local_shape(name, obj.name_full, evaluated, terrain_model)
    return placed_target(name, kind, shape, size, world_matrix(evaluated))


def placed_target(name: str, kind: str, shape, size, matrix: np.ndarray) -> Recognized:
    """A local shape placed by ``matrix`` (an object's matrix_world or an instance's)."""
    if not np.isfinite(matrix).all():
        raise NotRecognized(
            f"{name} has a transform that is not finite (location, rotation "
            "or scale holds inf or nan)"
        )
    return Recognized(
        name, kind, core.Placed(shape, matrix), description(kind, size, scale_description(matrix))
    )


def local_shape(name: str, key: str, evaluated, terrain_model: str):
    """(kind, local shape, size) of the evaluated mesh object ``evaluated``, a terrain in
    ``terrain_model``: from the shape cache under ``key`` when its mesh is unchanged, else
    recognised afresh (and stored)."""
    mesh = evaluated.data
    positions = mesh_positions(mesh)
    if len(positions) < 4:
        raise NotRecognized(f"{name} has only {len(positions)} vertices")
    # Edit mode may tessellate from the BMesh: never cached (see shape_cache.py).
    use_cache = evaluated.original.mode != "EDIT"
    owner = evaluated.original.name_full
    token = (
        mesh.as_pointer(),
        len(positions),
        len(mesh.edges),
        len(mesh.polygons),
        len(mesh.loops),
    )
    local = SHAPES.lookup(key, mesh, positions, owner, token) if use_cache else None
    if local is None:
        check_finite(name, positions)  # (a cached shape's positions were finite, bit for bit)
        local = recognize_local(name, mesh, positions)
        if use_cache:
            kind, shape, _ = local
            if kind == "TERRAIN":  # built now, as the first query needs it: measured
                _ = shape.field(terrain_model).hierarchy
            # An open tube's rims are read from the faces' vertex cycles (open_at_both_rims).
            open_tube = kind == "CYLINDER" and not shape.capped
            depends_on = "TRIANGULATION" if kind == "TERRAIN" or open_tube else "CLOSEDNESS"
            SHAPES.store(
                key,
                Fingerprint.read(mesh, positions, depends_on),
                local,
                value_arrays=shape.arrays() if kind == "TERRAIN" else (),
                held=shape.held_arrays if kind == "TERRAIN" else None,
                owner=owner,
                token=token,
            )
    kind, shape, size = local
    if kind == "TERRAIN":
        shape = shape.field(terrain_model)
    return kind, shape, size


def check_finite(name: str, positions: np.ndarray):
    """NotRecognized naming the object and its first vertex that is not finite (inf or nan,
    e.g. from a shape key, a Displace modifier or a script): checked before any fit, whose
    linear algebra would fail on it with a message of its own."""
    finite = np.isfinite(positions)
    if not finite.all():  # (flat: a reduction along the length-3 axis costs 100x more)
        index = int(np.argmin(finite.all(axis=1)))
        x, y, z = (float(value) for value in positions[index])
        raise NotRecognized(
            f"{name} has a vertex that is not finite: vertex {index} at ({x:g}, {y:g}, {z:g})"
        )


def recognize_local(name, mesh, positions: np.ndarray):
    """(kind, local shape, size) of ``mesh`` from its float32 ``positions``: size is
    (nx, ny) for a terrain, (radius, height, capped) for a cylinder, the radius for a sphere.
    NotRecognized with every reason when it is none of them."""
    points = positions.astype(np.float64)
    reasons = []
    try:
        shape, size = as_terrain(mesh, points)
        return "TERRAIN", shape, size
    except NotRecognized as reason:
        reasons.append(f"not a terrain: {reason}")
    planes = two_parallel_planes(points, recognition_tolerance(points))
    try:
        shape, size = as_cylinder(mesh, points, planes)
        return "CYLINDER", shape, size
    except NotRecognized as reason:
        reasons.append(f"not a cylinder: {reason}")
    try:
        shape, size = as_sphere(mesh, points, planes)
        return "SPHERE", shape, size
    except NotRecognized as reason:
        reasons.append(f"not a sphere: {reason}")
    raise NotRecognized(f"{name} is not a supported shape: " + "; ".join(reversed(reasons)))


def description(kind: str, size, scale) -> str:
    """The panel's text for a recognised shape; ``scale`` as from scale_description."""
    if kind == "TERRAIN":
        return f"Terrain {size[0]}x{size[1]}"
    if kind == "CYLINDER":
        radius, height, capped = size
        noun = "Cylinder" if capped else "Open tube"
        if scale is None:
            return f"{noun} r={radius:.3f} h={height:.3f} (non-uniform scale)"
        return f"{noun} r={radius * scale:.3f} h={height * scale:.3f}"
    if scale is None:
        return f"Ellipsoid (sphere r={size:.3f}, non-uniform scale)"
    return f"Sphere r={size * scale:.3f}"


def as_similarity(placed):
    """``placed`` with its matrix made an exact similarity (k Q: rotation or reflection times
    one scale) when it is one up to the float32 noise of Blender's matrices (the singular
    values agree within ``SIMILARITY_TOLERANCE``); core's sphere casts need an exact one.
    Q is the nearest orthogonal matrix (polar decomposition), k snaps like the shape
    parameters. Other placements are returned unchanged (core refuses them with a reason)."""
    linear = placed.matrix[:3, :3]
    left, singular, right = np.linalg.svd(linear)
    if singular[0] - singular[-1] > SIMILARITY_TOLERANCE * singular[0]:
        return placed
    scale = float(snapped(np.sqrt(singular[0] * singular[-1]), float(singular[0])))
    matrix = placed.matrix.copy()
    matrix[:3, :3] = scale * (left @ right)
    return core.Placed(placed.shape, matrix)


def as_cylinder_similarity(placed):
    """``placed`` (a Placed Cylinder) with its matrix made exactly a rotation (or reflection)
    times a scale uniform across the cylinder's axis and any along it, when it is one up to
    the float32 noise of Blender's matrices; core folds exactly such a placement into the
    cylinder for its sphere casts. With F the cylinder's frame (across, across, along) as
    columns and S the lengths of L F's columns, the nearest such matrix is
    Q diag(a, a, b) F^T with a = sqrt(S0 S1), b = S2 and Q the rotation taking S closest to
    L F (orthogonal Procrustes: the polar factor of L F S, which weights each direction by
    its length, so a long axis keeps its direction). It is taken when no entry of it is more than
    ``SIMILARITY_TOLERANCE`` x the largest scale off L (float32 rounds each entry by up to
    6e-8 of the largest; a scale along the axis of 40 blurs a scale of 0.25 across it), with
    a and b then snapped like the shape parameters. Other placements are returned unchanged
    (core refuses them with a reason: an elliptic cross-section or a sheared axis)."""
    frame = np.column_stack(placed.shape.frame)
    linear = placed.matrix[:3, :3]
    images = linear @ frame
    lengths = np.linalg.norm(images, axis=0)
    left, _, right = np.linalg.svd(images * lengths)  # Procrustes: Q S nearest L F
    rotation = left @ right
    across, along = np.sqrt(lengths[0] * lengths[1]), lengths[2]
    nearest = rotation @ np.diag([across, across, along]) @ frame.T
    largest = float(lengths.max())
    if np.abs(nearest - linear).max() > SIMILARITY_TOLERANCE * largest:
        return placed
    noise = float(np.spacing(np.float32(largest)))  # one float32 ulp of the largest scale
    across, along = (float(snapped(value, float(value), noise)) for value in (across, along))
    matrix = placed.matrix.copy()
    matrix[:3, :3] = rotation @ np.diag([across, across, along]) @ frame.T
    return core.Placed(placed.shape, matrix)


def as_terrain_similarity(placed):
    """``placed`` (a Placed Heightfield) with its matrix made exactly a rotation (or
    reflection) times a scale along each of the terrain's local axes, when it is one up to
    the float32 noise of Blender's matrices; core folds exactly such a placement into the
    terrain's grid for its sphere casts. As for a cylinder, with the identity for the frame
    and a scale of its own for each axis: Q diag(S) with S the lengths of L's columns and Q
    the polar factor of L diag(S). Other placements (a shear) are returned unchanged; core
    refuses them with a reason."""
    linear = placed.matrix[:3, :3]
    lengths = np.linalg.norm(linear, axis=0)
    left, _, right = np.linalg.svd(linear * lengths)
    rotation = left @ right
    largest = float(lengths.max())
    if np.abs(rotation * lengths - linear).max() > SIMILARITY_TOLERANCE * largest:
        return placed
    noise = float(np.spacing(np.float32(largest)))
    lengths = [float(snapped(value, float(value), noise)) for value in lengths]
    matrix = placed.matrix.copy()
    matrix[:3, :3] = rotation * lengths
    return core.Placed(placed.shape, matrix)


def as_cast_target(placed, kind: str):
    """``placed`` ready for core's sphere casts: its matrix snapped as above."""
    if kind == "SPHERE":
        return as_similarity(placed)
    if kind == "CYLINDER":
        return as_cylinder_similarity(placed)
    return as_terrain_similarity(placed)


# ---------------------------------------------------------------------------- instances
# Objects in an instanced collection and geometry-nodes instances are targets at their
# instance transforms: read from ``depsgraph.object_instances`` (whose items are valid only
# while iterating, so each instance's mesh is recognised right there). For nested instancing
# the item's ``parent`` is the top-level instancer, the one the user selects.

SURFACELESS_TYPES = {"EMPTY", "LIGHT", "CAMERA", "SPEAKER", "LIGHT_PROBE", "ARMATURE", "LATTICE"}


def may_instance(obj) -> bool:
    """True when ``obj`` may have instances (geometry nodes' do not set is_instancer)."""
    return obj.is_instancer or any(
        modifier.type in {"NODES", "PARTICLE_SYSTEM"} for modifier in obj.modifiers
    )


@dataclass
class Instance:
    """One instance of a selected instancer, recognised (or why not) in its own space."""

    base: str  # the instanced object's name, or "Geometry" for a geometry-nodes mesh
    via: str  # e.g. " of Rocks via Empty" (a collection instance) or " via Points"
    matrix: np.ndarray  # the instance's matrix_world
    local: object  # (kind, shape, size) as from local_shape, or the NotRecognized


def read_instances(objects, depsgraph, terrain_model: str = "SURFACE") -> dict:
    """{selected object's pointer: [Instance, ...]} for the objects of ``objects`` that
    instance something, in the depsgraph's order; objects without a surface (empties,
    lights, cameras...) are left out. Each distinct mesh is recognised once per call; the
    cache key of an instanced object is its name, that of a geometry-nodes mesh (which has
    no object of its own) the generating object's name and the mesh's rank among them."""
    wanted = {obj.original.as_pointer() for obj in objects if may_instance(obj)}
    if not wanted:
        return {}
    found: dict[int, list[Instance]] = {pointer: [] for pointer in wanted}
    by_mesh: dict[int, object] = {}  # mesh pointer -> local_shape result or NotRecognized
    geometry_ranks: dict[str, dict[int, int]] = {}  # generating object -> {mesh: rank}
    for item in depsgraph.object_instances:
        if not item.is_instance or item.parent is None:
            continue
        parent = item.parent.original
        if parent.as_pointer() not in wanted:
            continue
        evaluated = item.object
        if evaluated.type in SURFACELESS_TYPES:
            continue
        origin = evaluated.original
        # An instanced object shows its own evaluated data; a geometry-nodes mesh has none
        # (the item's object may be a temporary copy either way: compare the data).
        own_data = origin.evaluated_get(depsgraph).data
        if own_data is not None and own_data.as_pointer() == evaluated.data.as_pointer():
            base, key = origin.name, origin.name_full
        else:  # a mesh made by geometry nodes, instanced: no object of its own
            base = "Geometry" if origin == parent else f"{origin.name} geometry"
            ranks = geometry_ranks.setdefault(origin.name_full, {})
            rank = ranks.setdefault(evaluated.data.as_pointer(), len(ranks))
            key = f"{origin.name_full} geometry {rank}"
        local: object
        if evaluated.type != "MESH":
            local = not_a_mesh(base, evaluated.type)
        else:
            mesh_pointer = evaluated.data.as_pointer()
            local = by_mesh.get(mesh_pointer)
            if local is None:
                try:
                    local = local_shape(base, key, evaluated, terrain_model)
                except NotRecognized as error:
                    local = error
                except ValueError as error:  # core refused the shape
                    local = NotRecognized(f"{base} cannot be queried: {error}")
                by_mesh[mesh_pointer] = local
        collection = parent.instance_collection if parent.instance_type == "COLLECTION" else None
        via = f" of {collection.name} via {parent.name}" if collection else f" via {parent.name}"
        matrix = np.array(item.matrix_world, dtype=np.float64)
        found[parent.as_pointer()].append(Instance(base, via, matrix, local))
    return found


def recognize_instances(instances) -> list:
    """The Recognized of each Instance, named e.g. "Sphere (instance of Rocks via Empty)",
    numbered "Sphere (instance 2/5 via Points)" when an instancer has several of one object;
    NotRecognized (naming the instance) for the first that is not a supported shape."""
    counts = Counter(instance.base for instance in instances)
    seen: Counter[str] = Counter()
    targets = []
    for instance in instances:
        seen[instance.base] += 1
        count = counts[instance.base]
        number = f" {seen[instance.base]}/{count}" if count > 1 else ""
        name = f"{instance.base} (instance{number}{instance.via})"
        if isinstance(instance.local, NotRecognized):
            message = str(instance.local).removeprefix(instance.base)
            raise NotRecognized(name + message)
        kind, shape, size = instance.local
        try:
            targets.append(placed_target(name, kind, shape, size, instance.matrix))
        except NotRecognized:
            raise
        except ValueError as error:
            raise NotRecognized(f"{name} cannot be queried: {error}") from None
    return targets


def recognize_object(obj, depsgraph, terrain_model: str = "SURFACE", instances=None) -> list:
    """``obj`` as a list of targets: itself, or its instances (``instances`` as from
    read_instances, read here when not given) and its own mesh when it has vertices."""
    if instances is None:
        instances = read_instances([obj], depsgraph, terrain_model)
    own_instances = instances.get(obj.original.as_pointer())
    if not own_instances:
        return [recognize(obj, depsgraph, terrain_model)]
    targets = []
    if obj.type == "MESH" and len(obj.evaluated_get(depsgraph).data.vertices):
        targets.append(recognize(obj, depsgraph, terrain_model))
    return targets + recognize_instances(own_instances)


def recognize_all(objects, depsgraph, terrain_model: str = "SURFACE") -> list:
    """Every object of ``objects`` recognised, instances included; NotRecognized for the
    first that is not."""
    instances = read_instances(objects, depsgraph, terrain_model)
    return [
        target
        for obj in objects
        for target in recognize_object(obj, depsgraph, terrain_model, instances)
    ]


def describe(obj, depsgraph, terrain_model: str = "SURFACE"):
    """(recognised, text) for the panel: the shape's description, a summary of an
    instancer's instances, or why it is not a target."""
    try:
        targets = recognize_object(obj, depsgraph, terrain_model)
    except ValueError as error:
        return False, str(error).removeprefix(f"{obj.name} ")
    own = [target.description for target in targets if target.name == obj.name]
    instances = Counter(target.description for target in targets if target.name != obj.name)
    if not instances:
        return True, own[0]
    total = sum(instances.values())
    summary = ", ".join(
        f"{count} x {text}" if count > 1 else text for text, count in instances.items()
    )
    text = f"{total} instance{'s' if total > 1 else ''}: {summary}"
    return True, " + ".join([*own, text])
