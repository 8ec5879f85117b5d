"""Cumulative Visibility (geometry_queries.cumulative_visibility): the ``visible_count``
attribute equals core.cumulative_viewshed's counts on the recognised terrain, vertex by
vertex; a call without observers changes nothing."""

import bpy
import numpy as np
import pytest
from blender_scenes import add_displaced_grid, select_only, snapshot

from geometry_queries import core
from geometry_queries.operators import mapping
from geometry_queries.operators.terrain_frame import vertex_cells


def add_empty(name, location):
    empty = bpy.data.objects.new(name, None)
    empty.location = location
    bpy.context.scene.collection.objects.link(empty)
    bpy.context.view_layer.update()
    return empty


def counts_attribute(obj):
    values = np.empty(len(obj.data.vertices), dtype=np.int32)
    obj.data.attributes["visible_count"].data.foreach_get("value", values)
    return values


OBSERVERS = [(-0.6, 0.4, 0.5), (0.7, -0.5, 0.3), (0.05, 0.9, 0.8)]


@pytest.mark.parametrize("model", ["SURFACE", "SOLID"])
@pytest.mark.parametrize(
    "options",
    [
        {"observer_height": 0.2},
        {"observer_height": 0.1, "target_height": 0.05, "max_distance": 1.1},
        {"observer_height": 0.0, "earth_curvature": True, "refraction": 0.3},
    ],
)
def test_counts_equal_core(empty_scene, model, options):
    terrain = add_displaced_grid(vertices_per_side=17, size=2.0, strength=0.5)
    empties = [add_empty(f"Observer {k}", location) for k, location in enumerate(OBSERVERS)]
    select_only(terrain, *empties)
    bpy.ops.geometry_queries.cumulative_visibility(terrain_model=model, **options)
    got = counts_attribute(terrain)

    depsgraph = bpy.context.evaluated_depsgraph_get()
    recognized = mapping.recognize(terrain, depsgraph, model)
    field = recognized.shape.shape
    expected = core.cumulative_viewshed(
        field,
        np.array(OBSERVERS),
        max_distance=options.get("max_distance", np.inf),
        **{key: value for key, value in options.items() if key != "max_distance"},
    )
    rows, columns = vertex_cells(terrain.evaluated_get(depsgraph), recognized)
    np.testing.assert_array_equal(got, expected[rows, columns])
    assert 0 < got.max() <= len(OBSERVERS)
    colors = terrain.data.color_attributes
    assert colors.active_color_name == "visible_count_color"


def test_report_and_translated_terrain(empty_scene):
    terrain = add_displaced_grid(vertices_per_side=9, location=(5.0, -3.0, 1.0))
    empties = [add_empty("Eye", (5.2, -3.1, 2.0)), add_empty("Eye 2", (4.5, -2.5, 2.5))]
    select_only(terrain, *empties)
    assert bpy.ops.geometry_queries.cumulative_visibility() == {"FINISHED"}
    message = bpy.context.scene.geometry_queries.last_result
    assert message.startswith("Seen from at least one of 2 observers: ")
    assert message.endswith("% of 81 vertices on Terrain")
    assert counts_attribute(terrain).max() == 2


def test_without_observers_nothing_changes(empty_scene):
    terrain = add_displaced_grid()
    select_only(terrain)
    before = snapshot()
    attributes = sorted(a.name for a in terrain.data.attributes)
    with pytest.raises(RuntimeError, match="Select one or more empties as observers"):
        bpy.ops.geometry_queries.cumulative_visibility()
    assert snapshot() == before
    assert sorted(a.name for a in terrain.data.attributes) == attributes


@pytest.mark.parametrize(
    "options, message",
    [
        ({"observer_height": -1.0}, "Observer Height"),
        ({"max_distance": -2.0}, "Max Distance"),
        ({"refraction": 1.5}, "Refraction"),
    ],
)
def test_out_of_range_options_are_refused(empty_scene, options, message):
    terrain = add_displaced_grid()
    select_only(terrain, add_empty("Eye", (0, 0, 1)))
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.geometry_queries.cumulative_visibility(**options)
    assert "visible_count" not in terrain.data.attributes


def visible_attribute(obj):
    values = np.empty(len(obj.data.vertices), dtype=bool)
    obj.data.attributes["visible"].data.foreach_get("value", values)
    return values


@pytest.mark.parametrize(
    "options",
    [
        {"max_distance": 0.9},
        {"earth_curvature": True, "refraction": 0.2},  # a scene unit of 1,000 km: R = 6.371
    ],
)
def test_visibility_options_agree_with_core(empty_scene, options):
    bpy.context.scene.unit_settings.scale_length = 1e6
    terrain = add_displaced_grid(vertices_per_side=17, size=2.0, strength=0.3)
    select_only(terrain)
    origin = (-0.4, 0.3, 0.4)
    bpy.ops.geometry_queries.visibility(origin=origin, observer_height=0.1, **options)
    got = visible_attribute(terrain)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    recognized = mapping.recognize(terrain, depsgraph, "SURFACE")
    expected = core.viewshed(
        recognized.shape.shape, origin, observer_height=0.1, earth_radius=6.371, **options
    )
    rows, columns = vertex_cells(terrain.evaluated_get(depsgraph), recognized)
    # Curvature lowers the targets in a different order of operations: a line grazing a
    # ridge within rounding may be decided either way.
    assert np.count_nonzero(got != expected[rows, columns]) <= 2
    flat = core.viewshed(recognized.shape.shape, origin, observer_height=0.1)
    assert not np.array_equal(expected, flat)  # the option changes the answer
