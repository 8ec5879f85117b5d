"""Blender operators: map selected objects to core shapes, query, write the results.

mapping.py     evaluated Blender objects -> vertex and face arrays -> core.recognize -> Placed
               core shapes (or a reason why not, naming the object)
shape_cache.py recognised shapes kept while their mesh data stays bit-identical
shape_watch.py Blender's reports of geometry updates, for the shape cache
patterns.py    ray patterns: SINGLE, FAN, GRID (numpy)
nearest.py     nearest hit over several targets (core.targets, naming a refused object)
results.py     hits -> empties or one point mesh; Clear Hits' removal
properties.py  property mixins shared with the panel's settings
messages.py    counts in reports, written alike everywhere ("4,000,000 rays")
query.py       the operators: fire_ray, sphere_cast, clear_hits
sightlines.py  lines of sight from one observer past several occluders (core.targets)
visibility_attributes.py  a terrain's visibility -> its mesh's point attributes
visibility.py  the operator: visibility (what can be seen from the cursor on terrains)
terrain_frame.py  a placed terrain in world-aligned axes (horizontal distances, heights)
cumulative_visibility.py  the operator: cumulative_visibility (how many empties see a vertex)
update_handlers.py  answers kept until the scene changes (forgotten on depsgraph updates)
"""

from collections.abc import Callable

import bpy

from . import cumulative_visibility, query, shape_watch, visibility
from .shape_cache import SHAPES

# fake-bpy-module says register_classes_factory returns None; it returns the two functions.
_register_classes: Callable[[], None]
_unregister_classes: Callable[[], None]
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(  # type: ignore[func-returns-value, misc]
    query.classes + visibility.classes + cumulative_visibility.classes
)


def register():
    _register_classes()
    shape_watch.register()
    visibility.register()


def unregister():
    visibility.unregister()
    shape_watch.unregister()
    _unregister_classes()
    SHAPES.clear()  # up to 96 MB of mesh copies: not kept by a disabled add-on
