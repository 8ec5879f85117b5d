"""Object > Geometry Queries: every operator in one submenu of the 3D viewport's Object
menu, so menu search (F3) finds them all."""

import bpy


class GEOMETRY_QUERIES_MT_object(bpy.types.Menu):
    bl_idname = "GEOMETRY_QUERIES_MT_object"
    bl_label = "Geometry Queries"

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        assert layout is not None  # the stubs allow None, but a menu draws into a layout
        layout.operator("geometry_queries.fire_ray")
        layout.operator("geometry_queries.sphere_cast")
        layout.operator("geometry_queries.visibility")
        layout.operator("geometry_queries.cumulative_visibility")
        layout.separator()
        layout.operator("geometry_queries.clear_hits")


def draw_object_menu(self: bpy.types.Menu, context: bpy.types.Context) -> None:
    layout = self.layout
    assert layout is not None  # the stubs allow None, but a menu draws into a layout
    layout.separator()
    layout.menu(GEOMETRY_QUERIES_MT_object.bl_idname)


classes = (GEOMETRY_QUERIES_MT_object,)


def register():
    bpy.types.VIEW3D_MT_object.append(draw_object_menu)


def unregister():
    bpy.types.VIEW3D_MT_object.remove(draw_object_menu)
