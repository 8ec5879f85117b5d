"""The operators: Fire Ray, Sphere Cast, Clear Hits.

Each stays thin: read its properties (the 3D cursor fills the ones not given), map the
selected objects to shapes (mapping.py), query core (nearest.py), write the results
(results.py). None needs a window or a 3D view, except Fire Ray with Direction From = View,
which says so when there is none. Any ValueError (bad input, an object that is not a
supported shape) is reported as an error and cancels the operator with the scene untouched.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import bpy
import numpy as np
from bpy.props import FloatVectorProperty
from mathutils import Vector

from . import mapping, nearest, patterns, properties, results
from .messages import format_count

if TYPE_CHECKING:  # fake-bpy-module's Literal types, which exist only in the stubs
    from bpy.stub_internal.rna_enums import OperatorReturnItems

# Blender's property annotations (`origin: FloatVectorProperty(...)`) are calls, which mypy
# rejects as types; fake-bpy-module cannot describe them (they are Blender's own annotation
# semantics), hence the `# type: ignore[valid-type]` on each.


# The cursor's rotation in each of its rotation modes.
CURSOR_ROTATIONS = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}


def cursor_location(scene) -> Vector:
    """The 3D cursor's location, the default origin (or start) of every query; ValueError
    naming the cursor when it is not finite."""
    location = scene.cursor.location.copy()
    if not np.isfinite(location).all():
        raise ValueError(f"The 3D cursor's location is not finite {patterns.as_text(location)}")
    return location


def cursor_forward(scene) -> Vector:
    """The 3D cursor's -Z axis, the default direction of every query; ValueError naming the
    cursor when its rotation is not finite."""
    cursor = scene.cursor
    rotation = getattr(cursor, CURSOR_ROTATIONS.get(cursor.rotation_mode, "rotation_euler"))
    forward = cursor.matrix.to_3x3() @ Vector((0.0, 0.0, -1.0))
    if not (np.isfinite(rotation).all() and np.isfinite(forward).all()):
        raise ValueError("The 3D cursor's rotation is not finite")
    return forward


def store_last_result(context: bpy.types.Context, message: str) -> None:
    settings = getattr(context.scene, "geometry_queries", None)
    if settings is not None:
        settings.last_result = message


def query_targets(context: bpy.types.Context) -> list:
    """The selected objects, except results the add-on created earlier (hit markers and
    point meshes are never targets, so selecting everything just works)."""
    # An ID property test, which the stubs lack (see results.py).
    return [obj for obj in context.selected_objects if results.TAG not in obj]  # type: ignore[operator]


def operator_pattern(operator, origin, direction):
    """patterns.ray_pattern with the operator's own Pattern settings (Fire Ray's and Sphere
    Cast's, which share their definitions)."""
    return patterns.ray_pattern(
        operator.pattern,
        origin,
        direction,
        fan_count=operator.fan_count,
        fan_angle=operator.fan_angle,
        grid_rows=operator.grid_rows,
        grid_columns=operator.grid_columns,
        grid_width=operator.grid_width,
    )


def in_object_mode(cls: type[bpy.types.Operator], context: bpy.types.Context) -> bool:
    """Every query's first poll check (saying why the button is grey when it fails)."""
    if context.mode != "OBJECT":
        cls.poll_message_set("Switch to Object Mode: queries read the evaluated objects")
        return False
    return True


def poll_objects_to_query(cls: type[bpy.types.Operator], context: bpy.types.Context) -> bool:
    if not in_object_mode(cls, context):
        return False
    if not query_targets(context):
        cls.poll_message_set("Select the objects to query (spheres, cylinders, terrains)")
        return False
    return True


# The redo panel lists properties in the order Blender registers them: the annotations of a
# class's plain bases from the last listed to the first (the first listed wins, as in Python's
# method resolution order), then the class's own. So each operator lists the points it aims
# with last, and they come first.
class FireRayAim:
    origin: properties.point_property(  # type: ignore[valid-type]
        "Origin",
        "Where the rays start (default: the 3D cursor)",
    )
    direction: FloatVectorProperty(  # type: ignore[valid-type]
        name="Direction",
        description="Ray direction, any length but zero (default: the 3D cursor's -Z axis)",
        subtype="XYZ",
        size=3,
        options={"SKIP_SAVE"},
    )


# Each operator's tooltip is its bl_description, one paragraph (a docstring would keep its
# line breaks and indentation).
class GEOMETRY_QUERIES_OT_fire_ray(
    bpy.types.Operator,
    properties.TerrainModelProperty,
    properties.MarkerSizeProperty,
    properties.RayPatternProperties,
    properties.DirectionSourceProperty,
    FireRayAim,
):
    bl_idname = "geometry_queries.fire_ray"
    bl_label = "Fire Ray"
    bl_description = (
        "Cast rays from the 3D cursor (or a given origin) at the selected objects and mark "
        "the nearest hit of each ray"
    )
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_objects_to_query(cls, context)

    def fill_defaults(self, context):
        """Origin and direction from the cursor or the view where they were not given."""
        scene = context.scene
        if not self.properties.is_property_set("origin"):
            self.origin = cursor_location(scene)
        if self.direction_source == "VIEW":
            space = context.space_data
            in_3d_view = space is not None and space.type == "VIEW_3D"
            region_3d = context.region_data if in_3d_view else None
            if region_3d is None:
                raise ValueError(
                    "Direction From 'View' needs a 3D viewport to run in, and there "
                    "is none here (e.g. a script): pass direction=(x, y, z) instead"
                )
            self.direction = region_3d.view_rotation @ Vector((0.0, 0.0, -1.0))
        elif not self.properties.is_property_set("direction"):
            self.direction = cursor_forward(scene)

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        scene = context.scene
        try:
            self.fill_defaults(context)
            patterns.more_than_zero("Max Distance", self.max_distance)
            if self.output != "POINT_MESH" and not self.marker_size >= properties.MARKER_MIN_SIZE:
                raise ValueError(
                    f"Marker Size must be at least {properties.MARKER_MIN_SIZE:g}, "
                    f"got {self.marker_size:g}"
                )
            origins, directions = operator_pattern(self, self.origin, self.direction)
            targets = mapping.recognize_all(
                query_targets(context), context.evaluated_depsgraph_get(), self.terrain_model
            )
            hits = nearest.nearest_ray_hits(targets, origins, directions, self.max_distance)
        except ValueError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}

        names = [target.name for target in targets]
        hit_count = int(np.count_nonzero(hits.hit))
        if hit_count:
            if results.resolve_output(self.output, hit_count) == "EMPTIES":
                results.write_hit_empties(scene, hits, names, self.marker_size)
            else:
                results.write_hit_point_mesh(scene, hits, names)
        rays = len(origins)
        message = f"{format_count(hit_count)} of {format_count(rays, 'ray')} hit"
        if hit_count:
            ray = int(np.argmin(hits.distance))
            message += (
                f"; nearest: {names[hits.target[ray]]} at "
                f"{results.format_length(scene, hits.distance[ray])}"
            )
        self.report({"INFO"}, message)
        store_last_result(context, message)
        return {"FINISHED"}


class SphereCastAim:
    start: properties.point_property(  # type: ignore[valid-type]
        "Start",
        "Where the sphere's centre starts (default: the 3D cursor)",
    )
    end: properties.point_property(  # type: ignore[valid-type]
        "End",
        "Where the sphere's centre ends (default: Max Distance along "
        "the 3D cursor's -Z axis from the start)",
    )
    radius: properties.CAST_RADIUS  # type: ignore[valid-type]


class GEOMETRY_QUERIES_OT_sphere_cast(
    bpy.types.Operator,
    properties.TerrainModelProperty,
    properties.RayPatternProperties,
    SphereCastAim,
):
    bl_idname = "geometry_queries.sphere_cast"
    bl_label = "Sphere Cast"
    bl_description = (
        "Move a sphere from a start to an end point (or a fan or grid of such casts) and "
        "mark where it first touches one of the selected spheres, cylinders and terrains"
    )
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_objects_to_query(cls, context)

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        scene = context.scene
        try:
            if not self.properties.is_property_set("start"):
                self.start = cursor_location(scene)
            if not self.properties.is_property_set("end"):
                patterns.more_than_zero("Max Distance", self.max_distance)
                patterns.finite_number("Max Distance", self.max_distance)
                self.end = Vector(self.start) + self.max_distance * cursor_forward(scene)
            start = patterns.finite_vector("Start", self.start)
            end = patterns.finite_vector("End", self.end)
            radius = patterns.finite_number("Radius", self.radius)
            if not radius >= 0.0:  # 0 is a ray from start to end, as in core
                raise ValueError(f"Radius must be 0 or more, got {radius:g}")
            if (start == end).all():
                raise ValueError("Start and End must differ (the cast needs a direction)")
            # Every cast of a pattern is as long as End - Start (a fan's rays, a grid's rows).
            starts, directions = operator_pattern(self, start, end - start)
            ends = starts + np.linalg.norm(end - start) * directions
            if self.pattern == "SINGLE":
                ends = end[np.newaxis, :]  # exactly End, not a rounding of it
            targets = mapping.recognize_all(
                query_targets(context), context.evaluated_depsgraph_get(), self.terrain_model
            )
            targets = [replace(t, shape=mapping.as_cast_target(t.shape, t.kind)) for t in targets]
            casts = nearest.nearest_cast_contacts(targets, starts, ends, radius)
        except ValueError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}

        names = [target.name for target in targets]
        touching = int(np.count_nonzero(casts.hit))
        if touching:
            if results.resolve_output(self.output, touching) == "EMPTIES":
                results.write_cast_markers(scene, casts, names, radius)
            else:
                results.write_hit_point_mesh(scene, casts, names, name="Cast Contacts")
        if len(starts) == 1:
            message = "Sphere cast touches nothing between start and end"
        else:
            message = (
                f"{format_count(touching)} of {format_count(len(starts), 'sphere cast')} touch"
            )
        if touching:
            cast = int(np.argmin(casts.distance))
            distance = results.format_length(scene, casts.distance[cast])
            first = f"{names[casts.target[cast]]} after {distance}"
            message = (
                f"Sphere cast touches {first}"
                if len(starts) == 1
                else f"{message}; nearest: {first}"
            )
        self.report({"INFO"}, message)
        store_last_result(context, message)
        return {"FINISHED"}


class GEOMETRY_QUERIES_OT_clear_hits(bpy.types.Operator):
    bl_idname = "geometry_queries.clear_hits"
    bl_label = "Clear Hits"
    bl_description = (
        "Remove the objects and collections Geometry Queries created in this scene (and "
        "nothing else)"
    )
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not results.anything_created(context.scene):
            cls.poll_message_set("Nothing to clear: this scene has no Geometry Queries results")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        removed = results.remove_created(context.scene)
        message = f"Removed {format_count(removed, 'object')}"
        self.report({"INFO"}, message)
        store_last_result(context, message)
        return {"FINISHED"}


classes = (
    GEOMETRY_QUERIES_OT_fire_ray,
    GEOMETRY_QUERIES_OT_sphere_cast,
    GEOMETRY_QUERIES_OT_clear_hits,
)
