"""The add-on registers and unregisters cleanly, repeatedly, in real Blender: operators,
the Scene settings, the panel and the Object menu entry come and go together."""

import bpy

OPERATORS = (
    "GEOMETRY_QUERIES_OT_fire_ray",
    "GEOMETRY_QUERIES_OT_sphere_cast",
    "GEOMETRY_QUERIES_OT_clear_hits",
)
UI_CLASSES = ("GEOMETRY_QUERIES_PT_main", "GEOMETRY_QUERIES_MT_object")


def object_menu_entries():
    return [draw.__name__ for draw in bpy.types.VIEW3D_MT_object._dyn_ui_initialize()]


def handler_names():
    return [handler.__name__ for handler in bpy.app.handlers.depsgraph_update_post]


def assert_registered():
    for name in OPERATORS + UI_CLASSES:
        assert hasattr(bpy.types, name), name
    for operator in ("fire_ray", "sphere_cast", "clear_hits"):
        assert getattr(bpy.ops.geometry_queries, operator).get_rna_type().name
    settings = bpy.types.Scene.bl_rna.properties["geometry_queries"]
    assert settings.fixed_type.identifier == "GeometryQueriesSettings"
    assert bpy.context.scene.geometry_queries.pattern == "SINGLE"
    assert object_menu_entries().count("draw_object_menu") == 1
    assert handler_names().count("forget_descriptions") == 1


def assert_unregistered():
    for name in OPERATORS + UI_CLASSES:
        assert not hasattr(bpy.types, name), name
    assert "geometry_queries" not in bpy.types.Scene.bl_rna.properties
    assert not hasattr(bpy.context.scene, "geometry_queries")
    assert "draw_object_menu" not in object_menu_entries()
    assert "forget_descriptions" not in handler_names()


def test_register_unregister_three_times_in_a_row(empty_scene, addon):
    assert_registered()
    for _ in range(3):
        addon.unregister()
        assert_unregistered()
        addon.register()
        assert_registered()


def test_operators_work_after_re_registering(empty_scene, addon):
    addon.unregister()
    addon.register()
    bpy.ops.mesh.primitive_uv_sphere_add(location=(0, 0, -5))
    bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1))
    assert bpy.context.scene.geometry_queries.last_result.startswith("1 of 1 ray hit")


def test_unregister_empties_the_shape_cache(empty_scene, addon):
    from geometry_queries.operators.shape_cache import SHAPES

    bpy.ops.mesh.primitive_uv_sphere_add(location=(0, 0, -5))
    bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 0), direction=(0, 0, -1))
    assert len(SHAPES) == 1
    addon.unregister()
    assert len(SHAPES) == 0 and SHAPES.nbytes == 0
    addon.register()
