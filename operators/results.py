"""Writing query results into the scene, and removing them again.

Everything created here carries the custom property ``TAG`` ("geometry_queries"), so Clear
Hits removes exactly what the add-on made and nothing else. Results go into one collection,
"Geometry Query Hits", linked to the scene's master collection.

Ray hits are written as
* empties (``'EMPTIES'``): one single-arrow empty per hit with its Z axis along the hit
  normal, named after the target, with custom properties ``distance`` and ``target`` (and
  ``point``, ``normal`` as float64 triples: object locations are only float32);
* one point mesh (``'POINT_MESH'``): one vertex per hit, written with ``foreach_set`` (never
  one operator call per hit), with point attributes ``hit_normal`` (FLOAT_VECTOR),
  ``distance`` (FLOAT) and ``target_index`` (INT, into the object's ``targets`` property).
``'AUTO'`` picks empties for at most ``EMPTIES_MAX_HITS`` hits and the point mesh above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import bpy
import numpy as np
from mathutils import Matrix, Vector

if TYPE_CHECKING:  # fake-bpy-module's Literal types, which exist only in the stubs
    from bpy.stub_internal.rna_enums import ObjectEmptyDrawtypeItems

# Two gaps in fake-bpy-module, each ignored where it shows: `key in id_block` (ID properties;
# the stubs' bpy_struct has no __contains__), and an attribute's `data` (mesh.attributes
# returns the base type Attribute there; at run time FloatVectorAttribute, IntAttribute, ...).

TAG = "geometry_queries"
HITS_COLLECTION_NAME = "Geometry Query Hits"
EMPTIES_MAX_HITS = 64


# Each fixed length unit of Scene > Units > Length and how bpy.utils.units writes it.
LENGTH_UNIT_SYMBOLS = {
    "KILOMETERS": "km",
    "METERS": "m",
    "CENTIMETERS": "cm",
    "MILLIMETERS": "mm",
    "MICROMETERS": "µm",
    "MILES": "mi",
    "FEET": "'",
    "INCHES": '"',
    "THOU": "thou",
}


def format_length(scene, value: float) -> str:
    """``value`` (Blender units) as the scene's unit settings show lengths: Unit Scale
    applied, in the chosen Length unit ("4.000 cm", "0.131'"), Blender's own choice when it
    is Adaptive ("4 cm"), a plain number under Unit System None ("0.040")."""
    units = scene.unit_settings
    if units.system == "NONE":
        return f"{value:.3f}"
    scaled = value * units.scale_length
    symbol = LENGTH_UNIT_SYMBOLS.get(units.length_unit)
    if symbol is None:  # ADAPTIVE
        return bpy.utils.units.to_string(units.system, "LENGTH", scaled, precision=4)
    # to_value answers in float32 (0.00999999978 for 1 cm); every unit's definition has at
    # most 7 significant digits (1 mi = 1609.344 m), so rounding there makes it exact.
    unit = float(f"{bpy.utils.units.to_value(units.system, 'LENGTH', f'1{symbol}'):.7g}")
    space = "" if symbol in "'\"" else " "
    return f"{scaled / unit:.3f}{space}{symbol}"


def hits_collection(scene):
    """The add-on's collection in ``scene``, created (and tagged) when missing."""
    for collection in scene.collection.children:
        if TAG in collection:
            return collection
    collection = bpy.data.collections.new(HITS_COLLECTION_NAME)
    collection[TAG] = "collection"
    scene.collection.children.link(collection)
    return collection


def new_marker(
    collection, name: str, location, z_axis, display_type: ObjectEmptyDrawtypeItems, size: float
):
    """A tagged empty at ``location`` whose Z axis points along ``z_axis``."""
    marker = bpy.data.objects.new(name, None)
    marker.empty_display_type = display_type
    marker.empty_display_size = size
    rotation = Vector(z_axis).to_track_quat("Z", "Y").to_matrix().to_4x4()
    marker.matrix_world = Matrix.Translation(Vector(location)) @ rotation
    marker[TAG] = "marker"
    collection.objects.link(marker)
    return marker


def resolve_output(output: str, hit_count: int) -> str:
    """'EMPTIES' or 'POINT_MESH' for the requested ``output`` ('AUTO' decides by count)."""
    if output == "AUTO":
        return "EMPTIES" if hit_count <= EMPTIES_MAX_HITS else "POINT_MESH"
    return output


def write_hit_empties(scene, hits, target_names, size: float) -> list:
    """One empty per hit of ``hits`` (a nearest.NearestHits); returns the new objects."""
    collection = hits_collection(scene)
    markers = []
    for ray in np.flatnonzero(hits.hit):
        target = target_names[hits.target[ray]]
        marker = new_marker(
            collection, f"{target} hit", hits.point[ray], hits.normal[ray], "SINGLE_ARROW", size
        )
        marker["distance"] = float(hits.distance[ray])
        marker["target"] = target
        marker["point"] = hits.point[ray].tolist()
        marker["normal"] = hits.normal[ray].tolist()
        markers.append(marker)
    return markers


def write_hit_point_mesh(scene, hits, target_names, name: str = "Ray Hits"):
    """One mesh object whose vertices are the hits of ``hits`` (a nearest.NearestHits, or a
    NearestCasts: its contact points, with the centres as an attribute); returns it."""
    rows = np.flatnonzero(hits.hit)
    mesh = bpy.data.meshes.new(name)
    mesh[TAG] = "hits"
    mesh.vertices.add(len(rows))
    mesh.attributes["position"].data.foreach_set(  # type: ignore[attr-defined]
        "vector", hits.point[rows].astype(np.float32).ravel()
    )
    normal = mesh.attributes.new("hit_normal", "FLOAT_VECTOR", "POINT")
    normal.data.foreach_set("vector", hits.normal[rows].astype(np.float32).ravel())  # type: ignore[attr-defined]
    distance = mesh.attributes.new("distance", "FLOAT", "POINT")
    distance.data.foreach_set("value", hits.distance[rows].astype(np.float32))  # type: ignore[attr-defined]
    target = mesh.attributes.new("target_index", "INT", "POINT")
    target.data.foreach_set("value", hits.target[rows].astype(np.int32))  # type: ignore[attr-defined]
    if hasattr(hits, "center"):  # sphere casts: where the moving sphere's centre stopped
        center = mesh.attributes.new("cast_center", "FLOAT_VECTOR", "POINT")
        center.data.foreach_set("vector", hits.center[rows].astype(np.float32).ravel())  # type: ignore[attr-defined]
    mesh.update()
    point_cloud = bpy.data.objects.new(name, mesh)
    point_cloud[TAG] = "hits"
    point_cloud["targets"] = list(target_names)
    hits_collection(scene).objects.link(point_cloud)
    return point_cloud


def write_cast_markers(scene, casts, target_names, radius: float) -> list:
    """Two empties per contact of ``casts`` (a nearest.NearestCasts): a sphere of the cast
    radius at the moving centre, and an arrow along the target normal at the contact point."""
    collection = hits_collection(scene)
    markers = []
    for cast in np.flatnonzero(casts.hit):
        target = target_names[casts.target[cast]]
        center, point, normal = casts.center[cast], casts.point[cast], casts.normal[cast]
        sphere = new_marker(collection, f"{target} cast centre", center, normal, "SPHERE", radius)
        arrow = new_marker(
            collection, f"{target} cast contact", point, normal, "SINGLE_ARROW", max(radius, 1e-3)
        )
        for marker, location in ((sphere, center), (arrow, point)):
            marker["distance"] = float(casts.distance[cast])
            marker["target"] = target
            marker["point"] = location.tolist()
            marker["normal"] = normal.tolist()
        markers += [sphere, arrow]
    return markers


def scene_collections(scene) -> list:
    """``scene``'s master collection and every collection under it."""
    return [scene.collection, *scene.collection.children_recursive]


def created_in(scene) -> tuple[list, list]:
    """(tagged objects, tagged collections) in ``scene``: what Clear Hits removes there."""
    objects = [obj for obj in scene.objects if TAG in obj]
    collections = [c for c in scene.collection.children_recursive if TAG in c]
    return objects, collections


def remove_created(scene) -> int:
    """Take everything the add-on created out of ``scene`` (tagged objects and collections
    only, never a user's own); returns the number of objects taken out.

    Other scenes keep theirs. What ``scene`` shares with another scene (a Linked Copy shares
    the hits collection) is only unlinked from ``scene``; the rest is deleted, with the point
    meshes' data. A tagged collection that still holds someone else's objects stays."""
    objects, collections = created_in(scene)
    others = [other for other in bpy.data.scenes if other != scene]
    shared_objects = {obj for other in others for obj in other.objects}
    shared_collections = {c for other in others for c in scene_collections(other)}
    own_collections = [c for c in scene_collections(scene) if c not in shared_collections]

    for collection in collections:
        if collection in shared_collections:
            for parent in own_collections:
                if collection.name in parent.children:
                    parent.children.unlink(collection)
    meshes = set()
    for obj in objects:
        if obj in shared_objects:
            for collection in own_collections:
                if obj.name in collection.objects:
                    collection.objects.unlink(obj)
        else:
            if obj.type == "MESH" and TAG in obj.data:
                meshes.add(obj.data)
            bpy.data.objects.remove(obj, do_unlink=True)
    for mesh in meshes:
        if mesh.users == 0:
            bpy.data.meshes.remove(mesh)
    for collection in collections:
        if collection in shared_collections:
            continue
        if not collection.all_objects and not collection.children:
            bpy.data.collections.remove(collection)
    return len(objects)


def anything_created(scene) -> bool:
    objects, collections = created_in(scene)
    return bool(objects or collections)
