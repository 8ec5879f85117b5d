"""The Visibility operator: what can be seen from one point on every selected terrain.

Thin, like the query operators: read its properties (the 3D cursor fills the origin when it
is not given), map the selected objects to shapes (mapping.py), ask core for each terrain
vertex whether its line of sight is blocked (sightlines.py, ``core.occluded``), write the
answers onto the terrains' meshes (visibility_attributes.py). Every check runs before the
first write, so an error leaves the scene exactly as it was.

Its poll says when no selected object is a terrain. Recognising a 1024 x 1024 terrain takes
a fraction of a second, too slow for every redraw, so poll remembers which objects are
terrains until the next depsgraph update (any edit, modifier change, transform, frame change
or file load empties the memo), the panel's rule for its descriptions too.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import bpy
import numpy as np
from bpy.app.handlers import persistent

from .. import core
from . import mapping, patterns, properties, sightlines, terrain_frame, visibility_attributes
from .messages import format_count
from .query import cursor_location, in_object_mode, query_targets, store_last_result
from .update_handlers import forget_on_update, stop_forgetting

if TYPE_CHECKING:  # fake-bpy-module's Literal types, which exist only in the stubs
    from bpy.stub_internal.rna_enums import OperatorReturnItems

# object name -> may it be a terrain (may_be_terrain)?, valid until the next depsgraph update
_is_terrain: dict[str, bool] = {}


@persistent
def forget_terrains(*_):
    _is_terrain.clear()


def may_be_terrain(obj, depsgraph) -> bool:
    """True when ``obj`` is recognised as a terrain, or is a mesh whose modifiers change its
    vertex count (execute then says why it cannot take the answers); remembered until the
    next depsgraph update."""
    if obj.name not in _is_terrain:
        try:
            answer = mapping.recognize(obj, depsgraph).kind == "TERRAIN"
        except ValueError:
            answer = obj.type == "MESH" and len(set(vertex_counts(obj, depsgraph))) > 1
        _is_terrain[obj.name] = answer
    return _is_terrain[obj.name]


def vertex_counts(obj, depsgraph) -> tuple[int, int]:
    """(vertices of the mesh, vertices after its modifiers)."""
    return len(obj.data.vertices), len(obj.evaluated_get(depsgraph).data.vertices)


def recognize_occluders(objects, depsgraph, terrain_model: str) -> list:
    """Each object's targets, as mapping.recognize_all reads them (itself, or an instancer's
    instances and its own mesh), one list per object, with a word on modifiers that change a
    mesh's vertex count when an object is not recognised (a Subdivision Surface makes a
    grid no lattice)."""
    instances = mapping.read_instances(objects, depsgraph, terrain_model)
    recognized = []
    for obj in objects:
        try:
            recognized.append(mapping.recognize_object(obj, depsgraph, terrain_model, instances))
        except ValueError as error:
            if obj.type == "MESH":
                original, evaluated = vertex_counts(obj, depsgraph)
                if original != evaluated:
                    raise ValueError(
                        f"{error} (its modifiers change its vertex count from "
                        f"{format_count(original)} to {format_count(evaluated)})"
                    ) from None
            raise
    return recognized


def check_vertex_count(obj, depsgraph) -> None:
    """ValueError unless the terrain's modifiers keep its vertex count: the answers are
    written per vertex of the mesh, in the evaluated mesh's vertex order."""
    original, evaluated = vertex_counts(obj, depsgraph)
    if original != evaluated:
        raise ValueError(
            f"{obj.name}: its modifiers change its vertex count from {format_count(original)} "
            f"to {format_count(evaluated)} (e.g. Subdivision Surface), so the visibility of "
            "its evaluated vertices cannot be stored on its mesh: apply or remove that modifier"
        )


# The observer comes first in the redo panel: Blender registers plain bases' annotations from
# the last listed to the first, then the class's own (as for the query operators).
class VisibilityAim:
    origin: properties.point_property(  # type: ignore[valid-type]
        "Origin",
        "Where the observer stands (default: the 3D cursor)",
    )


class GEOMETRY_QUERIES_OT_visibility(
    bpy.types.Operator,
    properties.TerrainModelProperty,
    properties.ReachProperties,
    properties.SightProperties,
    VisibilityAim,
):
    bl_idname = "geometry_queries.visibility"
    bl_label = "Visibility from Cursor"
    # The tooltip: one paragraph (a docstring would keep its line breaks and indentation).
    bl_description = (
        "Mark which vertices of the selected terrains can be seen from the 3D cursor (or a "
        "given origin), past every selected object: writes the point attributes 'visible' "
        "and 'visibility' (a colour) on each terrain"
    )
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not in_object_mode(cls, context):
            return False
        depsgraph = context.evaluated_depsgraph_get()  # first: an update empties the memo
        if not any(may_be_terrain(obj, depsgraph) for obj in query_targets(context)):
            cls.poll_message_set(
                "Select a terrain (a grid with heights) to see what is visible on it; "
                "other selected objects occlude"
            )
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        scene = context.scene
        try:
            if not self.properties.is_property_set("origin"):
                self.origin = cursor_location(scene)
            observer = patterns.finite_vector("Origin", self.origin) + [
                0.0,
                0.0,
                patterns.finite_number("Observer Height", self.observer_height),
            ]
            raise_by = patterns.finite_number("Target Height", self.target_height)
            objects = query_targets(context)
            depsgraph = context.evaluated_depsgraph_get()
            per_object = recognize_occluders(objects, depsgraph, self.terrain_model)
            occluders = [target for targets in per_object for target in targets]
            # The selected terrains get the answers; instanced ones (in no mesh of their
            # own) only occlude.
            own_terrains = [
                (obj, target)
                for obj, targets in zip(objects, per_object)
                for target in targets
                if target.name == obj.name and target.kind == "TERRAIN"
            ]
            terrains = [obj for obj, _ in own_terrains]
            for terrain in terrains:
                check_vertex_count(terrain, depsgraph)
            shared = shared_meshes(terrains)
            if shared:
                raise ValueError(shared)
            reach = patterns.finite_number("Max Distance", self.max_distance)
            if reach < 0.0:
                raise ValueError(f"Max Distance must be >= 0 (0: no limit), got {reach:g}")
            drop = 0.0
            if self.earth_curvature:
                refraction = patterns.finite_number("Refraction", self.refraction)
                if not 0.0 <= refraction <= 1.0:
                    raise ValueError(f"Refraction must be between 0 and 1, got {refraction:g}")
                drop = (1.0 - refraction) / (2.0 * terrain_frame.scene_earth_radius(scene))
                occluders = [lowered(target, observer, drop) for target in occluders]
            answers = []
            for terrain, shape in own_terrains:
                points = sightlines.terrain_vertices(terrain.evaluated_get(depsgraph), shape)
                points[:, 2] += raise_by
                squared = ((points[:, :2] - observer[:2]) ** 2).sum(axis=1)
                points[:, 2] -= drop * squared
                near = squared <= reach * reach if reach > 0.0 else np.ones(len(points), bool)
                visible = np.zeros(len(points), dtype=bool)
                visible[near] = sightlines.visible_from(observer, points[near], occluders)
                answers.append(visible)
        except ValueError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}

        for terrain, visible in zip(terrains, answers):
            visibility_attributes.write_visibility(terrain.data, visible)
        message = "; ".join(
            f"Visible: {100.0 * np.count_nonzero(visible) / len(visible):.1f} % of "
            f"{format_count(len(visible), 'vertex', 'vertices')} on {terrain.name}"
            for terrain, visible in zip(terrains, answers)
        )
        self.report({"INFO"}, message)
        store_last_result(context, message)
        return {"FINISHED"}


def lowered(target, observer, drop: float):
    """A recognised terrain with every vertex lowered by ``drop d^2`` (earth curvature, d
    its horizontal distance from ``observer``), in its world-aligned frame; other shapes
    as they are."""
    if target.kind != "TERRAIN":
        return target
    frame = terrain_frame.terrain_frame(target)
    field = frame.terrain
    eye = frame.to_frame(observer[None])[0]
    ny, nx = field.heights.shape
    x = field.origin[0] + np.arange(nx) * field.spacing[0] - eye[0]
    y = field.origin[1] + np.arange(ny) * field.spacing[1] - eye[1]
    heights = field.heights - drop * (y[:, None] ** 2 + x[None, :] ** 2)
    bent = core.Heightfield(
        heights,
        spacing=field.spacing,
        origin=field.origin,
        surface=field.surface,
        diagonals=field.diagonals,
        solid=field.solid,
    )
    return dataclasses.replace(target, shape=core.Placed(bent, frame.matrix()))


def shared_meshes(terrains) -> str | None:
    """Why two selected terrains cannot both get their answers (they share one mesh, so
    the one written last would overwrite the other's), or None."""
    by_mesh: dict[str, list[str]] = {}
    for obj in terrains:
        by_mesh.setdefault(obj.data.name, []).append(obj.name)
    for mesh, names in by_mesh.items():
        if len(names) > 1:
            return (
                f"{' and '.join(names)} share the mesh {mesh}, which can hold one visibility "
                "only: select one of them, or make the mesh single user"
            )
    return None


classes = (GEOMETRY_QUERIES_OT_visibility,)


def register():
    forget_on_update(forget_terrains)


def unregister():
    stop_forgetting(forget_terrains)
