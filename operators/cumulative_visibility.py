"""The Cumulative Visibility operator: how many of the selected empties (observers) see each
vertex of every selected terrain (core.cumulative_viewshed's question, asked one observer
at a time so a progress indicator moves).

Thin, like Visibility: read the options, recognise the terrains (visibility.py's helpers),
take each terrain into its world-aligned frame (terrain_frame.py: horizontal distances and
heights are the world's), count, write the point attributes ``visible_count`` (INT) and
``visible_count_color`` (a ramp from 0 to the number of observers, made the active colour).
Every check runs before the first write, so an error leaves the scene as it was. Only the
terrains themselves hide: other selected objects are not occluders here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import bpy
import numpy as np

from .. import core
from . import properties, terrain_frame
from .messages import format_count
from .query import in_object_mode, query_targets, store_last_result
from .visibility import check_vertex_count, recognize_occluders, shared_meshes
from .visibility_attributes import HIDDEN_COLOR, VISIBLE_COLOR, fresh_attribute

if TYPE_CHECKING:  # fake-bpy-module's Literal types, which exist only in the stubs
    from bpy.stub_internal.rna_enums import OperatorReturnItems

COUNT_ATTRIBUTE = "visible_count"
COLOR_ATTRIBUTE = "visible_count_color"
# The ramp: no observer, one observer, every observer (linear RGBA).
RAMP = np.array([HIDDEN_COLOR, (0.75, 0.35, 0.05, 1.0), VISIBLE_COLOR])


def gis_options(operator, scene) -> dict:
    """core.viewshed's keyword options from an operator's properties (ValueError naming a
    property out of range: the limits are soft, so values are checked here)."""
    values = {}
    for name, label in (
        ("observer_height", "Observer Height"),
        ("target_height", "Target Height"),
        ("max_distance", "Max Distance"),
        ("refraction", "Refraction"),
    ):
        value = float(getattr(operator, name))
        if not np.isfinite(value) or value < 0.0:
            raise ValueError(f"{label} must be a finite number >= 0, got {value:g}")
        values[name] = value
    if values["refraction"] > 1.0:
        raise ValueError(f"Refraction must be between 0 and 1, got {values['refraction']:g}")
    if values["max_distance"] == 0.0:
        values["max_distance"] = np.inf  # 0: no limit
    values["earth_curvature"] = bool(operator.earth_curvature)
    values["earth_radius"] = terrain_frame.scene_earth_radius(scene)
    return values


def observer_empties(context) -> list:
    return [obj for obj in query_targets(context) if obj.type == "EMPTY"]


def count_colors(counts: np.ndarray, observers: int) -> np.ndarray:
    """(N, 4) float32: 0 -> RAMP[0], 1 -> RAMP[1], ``observers`` -> RAMP[2], linear between."""
    stops = [0.0, 1.0, float(max(observers, 1))]
    if observers <= 1:
        stops = [0.0, 0.5, 1.0]
    return np.stack(
        [np.interp(counts, stops, RAMP[:, channel]) for channel in range(4)], axis=1
    ).astype(np.float32)


def write_counts(mesh, counts: np.ndarray, observers: int) -> None:
    """``counts`` ((vertices,) int) as the ``visible_count`` and colour attributes."""
    counts = np.ascontiguousarray(counts, dtype=np.int32)
    # Each attribute is filled before the next is created (adding one may move the others).
    fresh_attribute(mesh, COUNT_ATTRIBUTE, "INT", "POINT").data.foreach_set("value", counts)
    color = fresh_attribute(mesh, COLOR_ATTRIBUTE, "FLOAT_COLOR", "POINT")
    color.data.foreach_set("color", count_colors(counts, observers).ravel())
    color_attributes = mesh.color_attributes
    color_attributes.active_color_name = COLOR_ATTRIBUTE
    color_attributes.render_color_index = color_attributes.active_color_index
    mesh.update()


# Blender registers the annotations of the last base first (see operators/visibility.py).
class GEOMETRY_QUERIES_OT_cumulative_visibility(
    bpy.types.Operator,
    properties.TerrainModelProperty,
    properties.ReachProperties,
    properties.SightProperties,
):
    bl_idname = "geometry_queries.cumulative_visibility"
    bl_label = "Cumulative Visibility"
    bl_description = (
        "Count, for every vertex of the selected terrains, how many of the selected empties "
        "(observers) can see it: writes the point attributes 'visible_count' and "
        "'visible_count_color' (a colour ramp) on each terrain"
    )
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not in_object_mode(cls, context):
            return False
        if not context.selected_objects:
            cls.poll_message_set("Select terrains, and empties as observers")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        scene = context.scene
        try:
            options = gis_options(self, scene)
            empties = observer_empties(context)
            if not empties:
                raise ValueError("Select one or more empties as observers")
            depsgraph = context.evaluated_depsgraph_get()
            observers = np.array(
                [list(obj.evaluated_get(depsgraph).matrix_world.translation) for obj in empties],
                dtype=np.float64,
            )
            if not np.isfinite(observers).all():
                raise ValueError("An observer's location is not finite")
            objects = [obj for obj in query_targets(context) if obj.type != "EMPTY"]
            per_object = recognize_occluders(objects, depsgraph, self.terrain_model)
            own = [
                (obj, target)
                for obj, targets in zip(objects, per_object)
                for target in targets
                if target.name == obj.name and target.kind == "TERRAIN"
            ]
            if not own:
                raise ValueError("Select a terrain (a grid with heights) to count on")
            terrains = [obj for obj, _ in own]
            for terrain in terrains:
                check_vertex_count(terrain, depsgraph)
            shared = shared_meshes(terrains)
            if shared:
                raise ValueError(shared)
            jobs = []
            for terrain, recognized in own:
                frame = terrain_frame.terrain_frame(recognized)
                cells = terrain_frame.vertex_cells(terrain.evaluated_get(depsgraph), recognized)
                jobs.append((terrain, frame, cells))
        except ValueError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}

        answers = []
        window_manager = context.window_manager
        steps = len(jobs) * len(observers)
        if window_manager is not None:
            window_manager.progress_begin(0, steps)
        try:
            step = 0
            for _terrain, frame, (rows, columns) in jobs:
                counts = np.zeros(frame.terrain.heights.shape, dtype=np.int32)
                for observer in frame.to_frame(observers):
                    counts += core.viewshed(frame.terrain, observer, **options)
                    step += 1
                    if window_manager is not None:
                        window_manager.progress_update(step)
                answers.append(counts[rows, columns])
        finally:
            if window_manager is not None:
                window_manager.progress_end()

        for terrain, counts in zip(terrains, answers):
            write_counts(terrain.data, counts, len(observers))
        message = "; ".join(
            f"Seen from at least one of {format_count(len(observers), 'observer')}: "
            f"{100.0 * np.count_nonzero(counts) / len(counts):.1f} % of "
            f"{format_count(len(counts), 'vertex', 'vertices')} on {terrain.name}"
            for terrain, counts in zip(terrains, answers)
        )
        self.report({"INFO"}, message)
        store_last_result(context, message)
        return {"FINISHED"}


classes = (GEOMETRY_QUERIES_OT_cumulative_visibility,)
