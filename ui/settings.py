"""The panel's settings: one PropertyGroup on the scene, ``scene.geometry_queries``.

Its ray and cast settings use the operators' own property definitions
(operators/properties.py); the panel's buttons copy them into the operator call, so the
panel, F3 and scripts all run the same operator code."""

import bpy
from bpy.props import PointerProperty, StringProperty

from ..operators import properties


# Blender's property annotations are calls, which mypy rejects as types; fake-bpy-module
# cannot describe them (Blender's own annotation semantics), hence `type: ignore[valid-type]`.
class GeometryQueriesSettings(bpy.types.PropertyGroup):
    direction_source: properties.direction_source_property()  # type: ignore[valid-type]
    max_distance: properties.max_distance_property()  # type: ignore[valid-type]
    pattern: properties.pattern_property()  # type: ignore[valid-type]
    fan_count: properties.fan_count_property()  # type: ignore[valid-type]
    fan_angle: properties.fan_angle_property()  # type: ignore[valid-type]
    grid_rows: properties.grid_rows_property()  # type: ignore[valid-type]
    grid_columns: properties.grid_columns_property()  # type: ignore[valid-type]
    grid_width: properties.grid_width_property()  # type: ignore[valid-type]
    output: properties.output_property()  # type: ignore[valid-type]
    marker_size: properties.marker_size_property()  # type: ignore[valid-type]
    terrain_model: properties.terrain_model_property()  # type: ignore[valid-type]
    cast_radius: properties.cast_radius_property()  # type: ignore[valid-type]
    observer_height: properties.observer_height_property()  # type: ignore[valid-type]
    target_height: properties.target_height_property()  # type: ignore[valid-type]
    last_result: StringProperty(  # type: ignore[valid-type]
        name="Last Result", description="What the last query found", default=""
    )


# Adding a property to a Blender type at run time is beyond the stubs: Scene has no
# geometry_queries attribute there, and PointerProperty(...) returns None.
def register():
    bpy.utils.register_class(GeometryQueriesSettings)
    bpy.types.Scene.geometry_queries = PointerProperty(type=GeometryQueriesSettings)  # type: ignore[attr-defined, func-returns-value]


def unregister():
    del bpy.types.Scene.geometry_queries  # type: ignore[attr-defined]
    bpy.utils.unregister_class(GeometryQueriesSettings)
