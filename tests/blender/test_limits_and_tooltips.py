"""Every tooltip is one paragraph."""

import bpy


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
