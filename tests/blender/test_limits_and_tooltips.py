"""Settings out of range are refused with a message naming them, never silently changed;
a cast of radius 0 is a ray; every tooltip is one paragraph.

Blender clamps a value outside a property's hard min or max without a word, an operator
argument from Python as well as an assignment (the first test shows it), so the add-on's
properties have soft limits only and the operators check the values they use."""

import bpy
import pytest
from blender_scenes import add_uv_sphere, created_markers, select_only, snapshot

RAY = dict(origin=(0, 0, 0), direction=(0, 0, -1))
CAST = dict(start=(0, 0, 0), end=(0, 0, -10))


SEEN: dict = {}


class GEOMETRY_QUERIES_TEST_OT_clamp_probe(bpy.types.Operator):
    bl_idname = "geometry_queries_test.clamp_probe"
    bl_label = "Clamp Probe"

    count: bpy.props.IntProperty(min=1, max=10)  # type: ignore[valid-type]
    length: bpy.props.FloatProperty(min=0.0)  # type: ignore[valid-type]
    soft_length: bpy.props.FloatProperty(soft_min=0.0)  # type: ignore[valid-type]

    def execute(self, context):
        SEEN.update(count=self.count, length=self.length, soft_length=self.soft_length)
        return {"FINISHED"}


def test_blender_clamps_operator_arguments_to_hard_limits_silently(addon):
    bpy.utils.register_class(GEOMETRY_QUERIES_TEST_OT_clamp_probe)
    try:
        probe = bpy.ops.geometry_queries_test.clamp_probe
        assert probe(count=0, length=-1.0, soft_length=-1.0) == {"FINISHED"}
        assert SEEN == dict(count=1, length=0.0, soft_length=-1.0)
        probe(count=100)
        assert SEEN["count"] == 10
    finally:
        bpy.utils.unregister_class(GEOMETRY_QUERIES_TEST_OT_clamp_probe)


LIMITED = (
    "max_distance",
    "fan_count",
    "fan_angle",
    "grid_rows",
    "grid_columns",
    "grid_width",
    "marker_size",
    "radius",
    "cast_radius",
)


def test_no_setting_has_a_hard_limit_that_would_hide_a_bad_value(addon):
    settings = bpy.types.Scene.bl_rna.properties["geometry_queries"].fixed_type
    structs = [settings] + [
        getattr(bpy.ops.geometry_queries, name).get_rna_type()
        for name in ("fire_ray", "sphere_cast", "visibility", "cumulative_visibility")
    ]
    checked = 0
    for struct in structs:
        for prop in struct.properties:
            if prop.identifier not in LIMITED:
                continue
            checked += 1
            # The type's own range (no min/max given), whichever the number type.
            assert prop.hard_min < -1e9 and prop.hard_max > 1e9, (struct.identifier, prop)
            assert prop.soft_min >= 0, (struct.identifier, prop.identifier)
    # the settings', Fire Ray's, Sphere Cast's, the two visibility operators' max_distance
    assert checked == 8 + 7 + 7 + 1 + 1


def assert_refused(call, message):
    """``call`` raises the operator's ERROR report (as RuntimeError), changing nothing."""
    before = snapshot()
    with pytest.raises(RuntimeError, match=message):
        call()
    assert snapshot() == before


@pytest.fixture
def sphere_below(empty_scene):
    select_only(add_uv_sphere(radius=1.0, location=(0.0, 0.0, -5.0)))
    return empty_scene


@pytest.mark.parametrize(
    "operator, arguments, message",
    [
        ("fire_ray", dict(max_distance=0.0), r"Max Distance must be more than 0, got 0$"),
        ("fire_ray", dict(max_distance=-1.0), r"Max Distance must be more than 0, got -1$"),
        ("sphere_cast", dict(max_distance=0.0), r"Max Distance must be more than 0, got 0$"),
        ("sphere_cast", dict(max_distance=-2.5), r"Max Distance must be more than 0, got -2.5"),
        ("sphere_cast", dict(CAST, radius=-1.0), r"Radius must be 0 or more, got -1$"),
        ("fire_ray", dict(RAY, pattern="FAN", fan_count=0), r"Rays must be at least 1, got 0$"),
        ("fire_ray", dict(RAY, pattern="FAN", fan_count=-3), r"Rays must be at least 1, got -3$"),
        (
            "fire_ray",
            dict(RAY, pattern="FAN", fan_count=2_000_000),
            r"Rays must be at most 1,000,000, got 2,000,000$",
        ),
        (
            "sphere_cast",
            dict(CAST, pattern="FAN", fan_count=0),
            r"Rays must be at least 1, got 0$",
        ),
        (
            "fire_ray",
            dict(RAY, pattern="FAN", fan_angle=-0.5),
            r"Cone Angle must be between 0 and 180 degrees, got -28.6479$",
        ),
        (
            "fire_ray",
            dict(RAY, pattern="GRID", grid_rows=0, grid_columns=0),
            r"Rows and Columns must be at least 1, got 0 x 0$",
        ),
        (
            "sphere_cast",
            dict(CAST, pattern="GRID", grid_rows=3, grid_columns=0),
            r"Rows and Columns must be at least 1, got 3 x 0$",
        ),
        (
            "fire_ray",
            dict(RAY, pattern="GRID", grid_rows=5000, grid_columns=2),
            r"Rows and Columns must be at most 2,048, got 5,000 x 2$",
        ),
        (
            "fire_ray",
            dict(RAY, pattern="GRID", grid_width=-1.0),
            r"Width must be a number of at least 0, got -1$",
        ),
        ("fire_ray", dict(RAY, marker_size=0.0), r"Marker Size must be at least 0.001, got 0$"),
    ],
)
def test_a_value_out_of_range_is_refused_naming_it(sphere_below, operator, arguments, message):
    call = getattr(bpy.ops.geometry_queries, operator)
    assert_refused(lambda: call(**arguments), "Error: " + message)


def test_settings_unused_by_the_pattern_are_not_checked(sphere_below):
    bpy.ops.geometry_queries.fire_ray(**RAY, pattern="SINGLE", fan_count=0, grid_rows=0)
    bpy.ops.geometry_queries.fire_ray(**RAY, output="POINT_MESH", marker_size=0.0)
    bpy.ops.geometry_queries.sphere_cast(**CAST, max_distance=0.0)  # End is given
    assert len(created_markers()) == 1 + 2


def test_the_panels_settings_keep_a_bad_value_for_the_operator_to_refuse(sphere_below):
    settings = sphere_below.geometry_queries
    settings.cast_radius, settings.fan_count, settings.max_distance = -1.0, 0, -3.0
    assert (settings.cast_radius, settings.fan_count, settings.max_distance) == (-1.0, 0, -3.0)
    assert_refused(
        lambda: bpy.ops.geometry_queries.sphere_cast(**CAST, radius=settings.cast_radius),
        "Radius must be 0 or more, got -1",
    )


@pytest.mark.parametrize("start_z", [0.0, -3.0])
def test_a_cast_of_radius_0_is_a_ray_from_start_to_end(sphere_below, start_z):
    bpy.ops.geometry_queries.sphere_cast(start=(0.3, 0, start_z), end=(0.3, 0, -10), radius=0)
    assert sphere_below.geometry_queries.last_result.startswith("Sphere cast touches Sphere")
    bpy.ops.geometry_queries.fire_ray(origin=(0.3, 0, start_z), direction=(0, 0, -1))
    ray = next(m for m in created_markers() if m.name.endswith(" hit"))
    contact = next(m for m in created_markers() if m.name.endswith(" cast contact"))
    assert contact["distance"] == pytest.approx(ray["distance"], abs=1e-12)
    assert contact["point"] == pytest.approx(ray["point"], abs=1e-12)


def test_a_cast_of_radius_0_stops_at_its_end(sphere_below):
    """Clipped to the segment: the sphere's top is 4 below the start, the end 3.5."""
    bpy.ops.geometry_queries.sphere_cast(start=(0, 0, 0), end=(0, 0, -3.5), radius=0.0)
    assert created_markers() == []
    last = sphere_below.geometry_queries.last_result
    assert last == "Sphere cast touches nothing between start and end"


def one_paragraph(text):
    return "\n" not in text and "  " not in text and text == text.strip()


def addon_structs():
    """Every class the add-on registers, as Blender describes it (an operator's own RNA
    comes from bpy.ops; bpy.types gives the base Operator's)."""
    structs = [bpy.types.Scene.bl_rna.properties["geometry_queries"].fixed_type]
    for name in dir(bpy.types):
        if name.startswith("GEOMETRY_QUERIES_OT_"):
            verb = name.removeprefix("GEOMETRY_QUERIES_OT_")
            structs.append(getattr(bpy.ops.geometry_queries, verb).get_rna_type())
        elif name.startswith("GEOMETRY_QUERIES_"):
            structs.append(getattr(bpy.types, name).bl_rna)
    return structs


def test_every_tooltip_is_one_paragraph(addon):
    structs = addon_structs()
    identifiers = {struct.identifier for struct in structs}
    assert {
        "GeometryQueriesSettings",
        "GEOMETRY_QUERIES_OT_fire_ray",
        "GEOMETRY_QUERIES_OT_sphere_cast",
        "GEOMETRY_QUERIES_OT_visibility",
        "GEOMETRY_QUERIES_OT_clear_hits",
        "GEOMETRY_QUERIES_PT_main",
        "GEOMETRY_QUERIES_MT_object",
    } <= identifiers
    texts = [bpy.types.Scene.bl_rna.properties["geometry_queries"].description]
    for struct in structs:
        texts.append(struct.description)
        for prop in struct.properties:
            texts += [prop.name, prop.description]
            if prop.type == "ENUM":
                texts += [item.description for item in prop.enum_items]
    bad = [text for text in texts if not one_paragraph(text)]
    assert bad == []
    assert all(struct.description for struct in structs if "_OT_" in struct.identifier)
