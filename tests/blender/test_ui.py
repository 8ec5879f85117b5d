"""The sidebar panel and the Object menu, drawn into a recording layout (there is no window
to draw into headless): what they show, and that the panel's buttons carry its settings
into the operators, which then run the one code path."""

from types import SimpleNamespace

import bpy
import pytest
from blender_scenes import add_uv_sphere, select_only


class RecordingLayout:
    """Stands in for bpy.types.UILayout: records labels, props and operator buttons."""

    def __init__(self, record=None):
        self.record = (
            record
            if record is not None
            else {"labels": [], "props": [], "operators": [], "menus": []}
        )

    def box(self, **_):
        return RecordingLayout(self.record)

    column = row = box

    def separator(self):
        pass

    def label(self, text="", icon="NONE"):
        self.record["labels"].append((text, icon))

    def prop(self, data, name, **_):
        self.record["props"].append(name)

    def menu(self, name, **_):
        self.record["menus"].append(name)

    def operator(self, idname, icon="NONE", **_):
        self.record["labels"].append(("", icon))
        button = SimpleNamespace(idname=idname)
        self.record["operators"].append(button)
        return button


def draw_panel(context):
    from geometry_queries.ui.panel import GEOMETRY_QUERIES_PT_main

    layout = RecordingLayout()
    panel = SimpleNamespace(layout=layout, draw_targets=GEOMETRY_QUERIES_PT_main.draw_targets)
    GEOMETRY_QUERIES_PT_main.draw(panel, context)
    return layout.record


def test_panel_lists_the_recognised_shape_of_each_selected_object(empty_scene):
    sphere = add_uv_sphere(radius=1.0)
    bpy.ops.mesh.primitive_cube_add(location=(3, 0, 0))
    cube = bpy.context.object
    select_only(sphere, cube)
    labels = draw_panel(bpy.context)["labels"]
    assert ("Sphere: Sphere r=1.000", "CHECKMARK") in labels
    (cube_label,) = [label for label in labels if label[0].startswith("Cube: ")]
    assert cube_label[1] == "ERROR" and "only 4 vertices per circle" in cube_label[0]


@pytest.mark.parametrize(
    "status, icon",
    [
        (("preparing", 3, 43, ""), "SORTTIME"),
        (("ready", 43, 43, ""), "CHECKMARK"),
        (("unavailable", 0, 43, "numba is not installed"), "ERROR"),
        (("off", 0, 0, "GEOMETRY_QUERIES_BACKEND=numpy"), "INFO"),
    ],
)
def test_panel_shows_the_fast_kernels_state(empty_scene, monkeypatch, status, icon):
    from geometry_queries.core import prepare

    state = prepare.Status(*status)
    monkeypatch.setattr(prepare, "status", lambda: state)
    labels = draw_panel(bpy.context)["labels"]
    assert (state.line(), icon) in labels
    known = bpy.types.UILayout.bl_rna.functions["label"].parameters["icon"].enum_items.keys()
    assert icon in known
    expected = {
        "preparing": "Fast kernels: preparing, 3 of 43",
        "ready": "Fast kernels: ready",
        "unavailable": "Fast kernels: unavailable: numba is not installed",
        "off": "Fast kernels: off (GEOMETRY_QUERIES_BACKEND=numpy)",
    }
    assert state.line() == expected[state.state]


def test_panel_icons_exist_in_blender(empty_scene):
    sphere = add_uv_sphere(radius=1.0)
    bpy.ops.mesh.primitive_cube_add(location=(3, 0, 0))
    select_only(sphere, bpy.context.object)
    empty_scene.geometry_queries.last_result = "something"
    icons = {icon for _, icon in draw_panel(bpy.context)["labels"]}
    known = bpy.types.UILayout.bl_rna.functions["label"].parameters["icon"].enum_items.keys()
    assert icons - {"NONE"} and icons <= set(known)


def test_panel_descriptions_follow_every_depsgraph_update(empty_scene):
    sphere = add_uv_sphere(radius=1.0)
    select_only(sphere)
    assert ("Sphere: Sphere r=1.000", "CHECKMARK") in draw_panel(bpy.context)["labels"]
    sphere.scale = (2.0, 2.0, 2.0)
    assert ("Sphere: Sphere r=2.000", "CHECKMARK") in draw_panel(bpy.context)["labels"]
    displace = sphere.modifiers.new("Displace", "DISPLACE")
    displace.texture = bpy.data.textures.new("Noise", "CLOUDS")
    labels = draw_panel(bpy.context)["labels"]
    assert any(
        text.startswith("Sphere: is not a supported shape") and icon == "ERROR"
        for text, icon in labels
    )


def test_panel_buttons_pass_the_panel_settings_to_the_operators(empty_scene, addon):
    from geometry_queries.operators.properties import FIRE_RAY_SETTINGS

    settings = empty_scene.geometry_queries
    settings.pattern = "GRID"
    settings.grid_rows, settings.grid_columns, settings.grid_width = 3, 5, 0.5
    settings.max_distance = 42.0
    settings.output = "POINT_MESH"
    settings.cast_radius = 0.75
    record = draw_panel(bpy.context)
    buttons = {button.idname: button for button in record["operators"]}
    assert set(buttons) == {
        "geometry_queries.fire_ray",
        "geometry_queries.sphere_cast",
        "geometry_queries.visibility",
        "geometry_queries.cumulative_visibility",
        "geometry_queries.clear_hits",
    }
    fire = buttons["geometry_queries.fire_ray"]
    for name in FIRE_RAY_SETTINGS:
        assert getattr(fire, name) == getattr(settings, name), name
    assert buttons["geometry_queries.sphere_cast"].radius == 0.75
    assert buttons["geometry_queries.sphere_cast"].max_distance == 42.0
    assert {"grid_rows", "grid_columns", "grid_width"} <= set(record["props"])

    # The same values run the operator as the button would.
    sphere = add_uv_sphere(radius=10.0, location=(0, 0, -20))
    select_only(sphere)
    bpy.ops.geometry_queries.fire_ray(**{name: getattr(fire, name) for name in FIRE_RAY_SETTINGS})
    assert settings.last_result.startswith("15 of 15 rays hit")
    assert record["labels"][-1] != (settings.last_result, "INFO")
    assert (settings.last_result, "INFO") in draw_panel(bpy.context)["labels"]


def test_every_operator_setting_has_the_same_definition_on_the_panel(addon):
    from geometry_queries.operators.properties import FIRE_RAY_SETTINGS

    operator = bpy.ops.geometry_queries.fire_ray.get_rna_type().properties
    panel = bpy.types.Scene.bl_rna.properties["geometry_queries"].fixed_type.properties
    for name in FIRE_RAY_SETTINGS:
        for attribute in ("type", "subtype", "unit", "default", "hard_min", "hard_max"):
            if hasattr(operator[name], attribute):
                assert getattr(operator[name], attribute) == getattr(panel[name], attribute)


def test_object_menu_has_a_geometry_queries_submenu_with_every_operator(addon):
    from geometry_queries.ui.menu import GEOMETRY_QUERIES_MT_object, draw_object_menu

    assert draw_object_menu in bpy.types.VIEW3D_MT_object._dyn_ui_initialize()
    layout = RecordingLayout()
    draw_object_menu(SimpleNamespace(layout=layout), bpy.context)
    assert layout.record["menus"] == ["GEOMETRY_QUERIES_MT_object"]
    GEOMETRY_QUERIES_MT_object.draw(SimpleNamespace(layout=layout), bpy.context)
    assert [b.idname for b in layout.record["operators"]] == [
        "geometry_queries.fire_ray",
        "geometry_queries.sphere_cast",
        "geometry_queries.visibility",
        "geometry_queries.cumulative_visibility",
        "geometry_queries.clear_hits",
    ]


@pytest.mark.parametrize(
    "idname", ["fire_ray", "sphere_cast", "visibility", "cumulative_visibility", "clear_hits"]
)
def test_operators_are_undoable_and_describe_themselves(addon, idname):
    rna = getattr(bpy.ops.geometry_queries, idname).get_rna_type()
    operator_class = getattr(bpy.types, f"GEOMETRY_QUERIES_OT_{idname}")
    assert {"REGISTER", "UNDO"} <= operator_class.bl_options
    assert rna.name and rna.description


def test_distances_are_lengths(addon):
    for idname, names in (
        ("fire_ray", ("max_distance", "grid_width")),
        ("sphere_cast", ("radius", "max_distance")),
        ("visibility", ("observer_height", "target_height", "max_distance")),
        ("cumulative_visibility", ("observer_height", "target_height", "max_distance")),
    ):
        properties = getattr(bpy.ops.geometry_queries, idname).get_rna_type().properties
        for name in names:
            assert (properties[name].subtype, properties[name].unit) == ("DISTANCE", "LENGTH")


def test_visibility_box_passes_its_settings_and_runs_the_operator(empty_scene, addon):
    from blender_scenes import add_displaced_grid

    from geometry_queries.operators.properties import VISIBILITY_SETTINGS

    settings = empty_scene.geometry_queries
    settings.observer_height, settings.target_height = 2.5, 0.25
    settings.terrain_model = "SOLID"
    record = draw_panel(bpy.context)
    assert {"observer_height", "target_height"} <= set(record["props"])
    (button,) = [b for b in record["operators"] if b.idname == "geometry_queries.visibility"]
    for name in VISIBILITY_SETTINGS:
        assert getattr(button, name) == getattr(settings, name), name
    operator = bpy.ops.geometry_queries.visibility.get_rna_type().properties
    panel = bpy.types.Scene.bl_rna.properties["geometry_queries"].fixed_type.properties
    for name in VISIBILITY_SETTINGS:
        for attribute in ("type", "subtype", "unit", "default"):
            assert getattr(operator[name], attribute) == getattr(panel[name], attribute)

    terrain = add_displaced_grid(vertices_per_side=5)
    select_only(terrain)
    bpy.ops.geometry_queries.visibility(
        **{name: getattr(button, name) for name in VISIBILITY_SETTINGS}
    )
    assert (
        settings.last_result.startswith("Visible: ")
        and "of 25 vertices on Terrain" in settings.last_result
    )
    assert (settings.last_result, "INFO") in draw_panel(bpy.context)["labels"]
