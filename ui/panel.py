"""View3D > Sidebar > "Geometry Queries": settings, the recognised shape of each selected
object, the four operators' buttons, the last result and the fast kernels' state (redrawn
every half second while they are prepared in the background, core/prepare.py).

Recognising a large terrain takes too long for every redraw of the sidebar, so
the panel keeps its descriptions until the next depsgraph update (any edit, modifier change,
transform, frame change or file load empties it): they never outlive the evaluated data they
describe. The operators never use this; they always recognise afresh."""

from typing import TYPE_CHECKING

import bpy
from bpy.app.handlers import persistent

from ..core import prepare
from ..operators import mapping
from ..operators.compat import add_timer, remove_timer
from ..operators.messages import format_count
from ..operators.properties import (
    FIRE_RAY_SETTINGS,
    SPHERE_CAST_SETTINGS,
    VISIBILITY_SETTINGS,
)
from ..operators.update_handlers import forget_on_update, stop_forgetting

if TYPE_CHECKING:  # fake-bpy-module's Literal types, which exist only in the stubs
    from bpy.stub_internal.rna_enums import RegionTypeItems, SpaceTypeItems

MAX_LISTED_OBJECTS = 8
REDRAW_SECONDS = 0.5  # the kernels' line, while they are prepared

# (object name, terrain model) -> (recognised, text), valid until the next depsgraph update
_descriptions: dict[tuple[str, str], tuple[bool, str]] = {}


@persistent
def forget_descriptions(*_):
    _descriptions.clear()


def describe(obj, depsgraph, terrain_model):
    """mapping.describe, remembered until the next depsgraph update."""
    key = (obj.name, terrain_model)
    if key not in _descriptions:
        _descriptions[key] = mapping.describe(obj, depsgraph, terrain_model)
    return _descriptions[key]


class GeometryQueriesSidebar:
    """Where every panel of the add-on lives."""

    bl_space_type: "SpaceTypeItems" = "VIEW_3D"
    bl_region_type: "RegionTypeItems" = "UI"
    bl_category = "Geometry Queries"


class GEOMETRY_QUERIES_PT_main(GeometryQueriesSidebar, bpy.types.Panel):
    bl_label = "Geometry Queries"

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        assert layout is not None  # the stubs allow None, but a panel draws into a layout
        settings = context.scene.geometry_queries  # type: ignore[union-attr]  # see settings.py
        self.draw_targets(layout.box(), context)

        box = layout.box()
        box.label(text="Rays and Sphere Casts", icon="LIGHT_SUN")
        column = box.column(align=True)
        column.prop(settings, "direction_source", text="")
        column.prop(settings, "max_distance")
        box.prop(settings, "pattern", expand=True)
        if settings.pattern == "FAN":
            column = box.column(align=True)
            column.prop(settings, "fan_count")
            column.prop(settings, "fan_angle")
        elif settings.pattern == "GRID":
            column = box.column(align=True)
            column.prop(settings, "grid_rows")
            column.prop(settings, "grid_columns")
            column.prop(settings, "grid_width")
        column = box.column(align=True)
        column.prop(settings, "output")
        column.prop(settings, "marker_size")
        fire = box.operator("geometry_queries.fire_ray", icon="TRACKING_FORWARDS")
        for name in FIRE_RAY_SETTINGS:
            setattr(fire, name, getattr(settings, name))

        # Casts take the same pattern, from the cursor along its -Z axis.
        box.prop(settings, "cast_radius")
        cast = box.operator("geometry_queries.sphere_cast", icon="SPHERE")
        cast.radius = settings.cast_radius
        for name in SPHERE_CAST_SETTINGS:
            setattr(cast, name, getattr(settings, name))

        box = layout.box()
        box.label(text="Visibility", icon="HIDE_OFF")
        column = box.column(align=True)
        column.prop(settings, "observer_height")
        column.prop(settings, "target_height")
        visibility = box.operator("geometry_queries.visibility", icon="HIDE_OFF")
        for name in VISIBILITY_SETTINGS:
            setattr(visibility, name, getattr(settings, name))
        cumulative = box.operator("geometry_queries.cumulative_visibility", icon="GROUP_VERTEX")
        for name in VISIBILITY_SETTINGS:
            setattr(cumulative, name, getattr(settings, name))

        layout.operator("geometry_queries.clear_hits", icon="TRASH")
        if settings.last_result:
            layout.label(text=settings.last_result, icon="INFO")
        status = prepare.status()
        state = status.state
        layout.label(
            text=status.line(),
            icon="CHECKMARK"
            if state == "ready"
            else "SORTTIME"
            if state == "preparing"
            else "ERROR"
            if state == "unavailable"
            else "INFO",
        )

    @staticmethod
    def draw_targets(box, context):
        box.label(text="Selected Targets", icon="RESTRICT_SELECT_OFF")
        settings = context.scene.geometry_queries
        box.prop(settings, "terrain_model")
        objects = context.selected_objects
        if not objects:
            box.label(text="Nothing selected")
            return
        depsgraph = context.evaluated_depsgraph_get()
        column = box.column(align=True)
        for obj in objects[:MAX_LISTED_OBJECTS]:
            recognized, text = describe(obj, depsgraph, settings.terrain_model)
            column.label(text=f"{obj.name}: {text}", icon="CHECKMARK" if recognized else "ERROR")
        if len(objects) > MAX_LISTED_OBJECTS:
            column.label(text=f"... and {format_count(len(objects) - MAX_LISTED_OBJECTS)} more")


classes = (GEOMETRY_QUERIES_PT_main,)


def redraw_while_preparing():
    """A timer: redraw the sidebars while the kernels are prepared (the state line moves)."""
    window_manager = bpy.context.window_manager
    for window in window_manager.windows if window_manager is not None else ():
        for area in window.screen.areas:
            if area.type == "VIEW_3D":
                for region in area.regions:
                    if region.type == "UI":
                        region.tag_redraw()
    return REDRAW_SECONDS if prepare.status().state == "preparing" else None


def register():
    forget_on_update(forget_descriptions)
    add_timer(redraw_while_preparing, first_interval=REDRAW_SECONDS)


def unregister():
    stop_forgetting(forget_descriptions)
    remove_timer(redraw_while_preparing)
