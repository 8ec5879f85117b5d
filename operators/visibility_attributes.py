"""Writing a terrain's visibility onto its mesh: two point attributes, both written with
``foreach_set`` (no loop over vertices).

* ``visible`` (BOOLEAN, POINT): True where the vertex can be seen from the observer;
* ``visibility`` (FLOAT_COLOR, POINT): ``VISIBLE_COLOR`` or ``HIDDEN_COLOR`` per vertex,
  made the active and the render colour attribute, so the viewport shows it (Solid shading,
  Color: Attribute) and a material's Color Attribute node renders it.

They go on the original mesh (``obj.data``), in its vertex order, which is the evaluated
mesh's as long as no modifier changes the vertex count (the operator checks). An existing
attribute of the same name is overwritten in place when its type and domain match, else
replaced."""

from __future__ import annotations

import numpy as np

from .messages import format_count

VISIBLE_ATTRIBUTE = "visible"
COLOR_ATTRIBUTE = "visibility"
VISIBLE_COLOR = (0.85, 0.82, 0.70, 1.0)  # light sand (linear RGBA)
HIDDEN_COLOR = (0.32, 0.02, 0.02, 1.0)  # dark red


def fresh_attribute(mesh, name: str, data_type: str, domain: str):
    """``mesh``'s attribute ``name`` with this type and domain, created or replaced."""
    existing = mesh.attributes.get(name)
    if existing is not None:
        if existing.data_type == data_type and existing.domain == domain:
            return existing
        mesh.attributes.remove(existing)
    return mesh.attributes.new(name, data_type, domain)


def write_visibility(mesh, visible: np.ndarray) -> None:
    """``visible`` ((vertices,) bool) as the ``visible`` and ``visibility`` attributes."""
    visible = np.ascontiguousarray(visible, dtype=bool)
    if len(visible) != len(mesh.vertices):
        raise ValueError(
            f"{mesh.name}: {format_count(len(visible), 'visibility value')} for "
            f"{format_count(len(mesh.vertices), 'vertex', 'vertices')}"
        )
    # Each attribute is filled before the next is created: adding an attribute may move the
    # others' storage (and invalidate references to them).
    flags = fresh_attribute(mesh, VISIBLE_ATTRIBUTE, "BOOLEAN", "POINT")
    flags.data.foreach_set("value", visible)
    colors = np.where(visible[:, None], VISIBLE_COLOR, HIDDEN_COLOR).astype(np.float32)
    color = fresh_attribute(mesh, COLOR_ATTRIBUTE, "FLOAT_COLOR", "POINT")
    color.data.foreach_set("color", colors.ravel())
    color_attributes = mesh.color_attributes
    color_attributes.active_color_name = COLOR_ATTRIBUTE
    color_attributes.render_color_index = color_attributes.active_color_index
    mesh.update()
