"""The panel's settings: one PropertyGroup on the scene, ``scene.geometry_queries``.

Its ray and cast settings use the operators' own property definitions
(operators/properties.py); the panel's buttons copy them into the operator call, so the
panel, F3 and scripts all run the same operator code."""

import bpy
from bpy.props import PointerProperty, StringProperty

from ..operators import properties


class GeometryQueriesSettings(bpy.types.PropertyGroup):
    direction_source: properties.direction_source_property()
    max_distance: properties.max_distance_property()
    pattern: properties.pattern_property()
    fan_count: properties.fan_count_property()
    fan_angle: properties.fan_angle_property()
    grid_rows: properties.grid_rows_property()
    grid_columns: properties.grid_columns_property()
    grid_width: properties.grid_width_property()
    output: properties.output_property()
    marker_size: properties.marker_size_property()
    terrain_model: properties.terrain_model_property()
    cast_radius: properties.cast_radius_property()
    last_result: StringProperty(
        name="Last Result", description="What the last query found", default=""
    )


def register():
    bpy.utils.register_class(GeometryQueriesSettings)
    bpy.types.Scene.geometry_queries = PointerProperty(type=GeometryQueriesSettings)


def unregister():
    del bpy.types.Scene.geometry_queries
    bpy.utils.unregister_class(GeometryQueriesSettings)
