"""The panel's settings: one PropertyGroup on the scene, ``scene.geometry_queries``.

It inherits the operators' own property declarations (the mixins of
operators/properties.py); the panel's buttons copy them into the operator call, so the
panel, F3 and scripts all run the same operator code."""

import bpy
from bpy.props import PointerProperty, StringProperty

from ..operators import properties


class GeometryQueriesSettings(
    bpy.types.PropertyGroup,
    properties.SightProperties,
    properties.TerrainModelProperty,
    properties.MarkerSizeProperty,
    properties.RayPatternProperties,
    properties.DirectionSourceProperty,
):
    # Bases registered from the last listed to the first, then these (operators/query.py);
    # annotation calls take `type: ignore[valid-type]` as in operators/properties.py.
    cast_radius: properties.CAST_RADIUS  # type: ignore[valid-type]
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
