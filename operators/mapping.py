"""Blender objects -> core shapes: each recognised object becomes ``Placed(shape, matrix_world)``.

The mesh is read from the **evaluated** object (``obj.evaluated_get(depsgraph).data``), so
modifiers count, and it is read afresh on every call. Vertices are read with ``foreach_get``
into numpy; no Python loop runs per vertex. What the mesh is (terrain, cylinder or sphere,
and why not) is decided by core.recognize on those arrays; the faces are read only when a
test there asks for them (MeshFaces). The one thing remembered between calls is each
object's recognised local shape together with a copy of exactly the mesh data it was
computed from (positions and the topology it depends on; shape_cache.py): it is reused only
when all of that is bit-identical (the topology compared again only after Blender reported a
geometry update of the object), so it cannot go stale, and it saves re-reading
``mesh.loop_triangles`` (slow: RNA item by item) on every query. The placement
(``matrix_world``) is read on every call.

First every vertex must be finite (an inf or nan vertex, e.g. from a shape key or a
modifier, is refused naming the object before any fit). A terrain is queried in the
caller's terrain model: 'SURFACE' (the triangles as drawn, hit from either side, so hits
agree with scene.ray_cast under any object transform) or 'SOLID' (the ground below the
surface in the terrain's local axes). Cylinder Cap Fill Type N-Gon or Triangle Fan closes
the mesh (a capped Cylinder), Nothing leaves an open tube. Non-uniform object scale makes a
sphere an ellipsoid, exactly.

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

import numpy as np

from .. import core
from ..core.fit import as_cast_target, as_cylinder_similarity, scale_description
from ..core.recognize import Faces, NotRecognized, check_finite, description, recognize_mesh
from .shape_cache import (
    SHAPES,
    Fingerprint,
    read_corner_edges,
    read_corner_verts,
    read_triangle_faces,
)

# Re-exported: callers (the operators, tests and benchmarks) use them from here.
__all__ = ["NotRecognized", "Recognized", "as_cast_target", "as_cylinder_similarity", "core"]


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


class MeshFaces(Faces):
    """The faces of a Blender mesh for core.recognize, each array read on first use:
    the faces' vertex cycles from ``.corner_vert`` and the loop triangles' faces (a face of
    n corners has n - 2 triangles), the triangles Blender draws, and closedness from
    ``.corner_edge`` (the data a cache entry is keyed on too)."""

    def __init__(self, mesh):
        self.mesh = mesh
        self._read: dict = {}

    def _once(self, name: str, read):
        if name not in self._read:
            self._read[name] = read(self.mesh)
        return self._read[name]

    def corner_verts(self) -> np.ndarray:
        return self._once("corner_verts", read_corner_verts)

    def sizes(self) -> np.ndarray:
        return self._once(
            "sizes",
            lambda mesh: np.bincount(read_triangle_faces(mesh), minlength=len(mesh.polygons)) + 2,
        )

    def triangles(self) -> np.ndarray:
        return self._once("triangles", loop_triangle_vertices)

    def is_closed(self) -> bool:
        return self._once("closed", mesh_is_closed)


def loop_triangle_vertices(mesh) -> np.ndarray:
    """(T, 3) vertex indices of Blender's own triangulation of ``mesh``: the triangles'
    corners (``loops``) mapped through ``.corner_vert``, which reads faster than the
    triangles' ``vertices`` (both are RNA reads item by item)."""
    triangles = mesh.loop_triangles
    corners = np.empty(len(triangles) * 3, dtype=np.int32)
    if len(corners):
        triangles.foreach_get("loops", corners)
    return read_corner_verts(mesh)[corners].reshape(-1, 3)


def world_matrix(evaluated_object) -> np.ndarray:
    return np.array(evaluated_object.matrix_world, dtype=np.float64)


# ---------------------------------------------------------------------------- public


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
        check_finite(positions, name)  # (a cached shape's positions were finite, bit for bit)
        local = recognize_mesh(positions, MeshFaces(mesh), name)
        if use_cache:
            kind, shape, _ = local
            if kind == "TERRAIN":  # built now, as the first query needs it: in the entry's size
                _ = shape.field(terrain_model).hierarchy
            # An open tube's rims are read from the faces' vertex cycles (MeshFaces.sizes).
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
