"""What Blender reports to the shape cache (shape_cache.py): which objects' geometry may have
changed, so their cached shapes' topology is compared again at the next query. Registered
from register() until unregister()."""

import bpy
from bpy.app.handlers import persistent

from .shape_cache import SHAPES


@persistent
def geometry_updated(_scene, depsgraph) -> None:
    SHAPES.geometry_updated(
        update.id.name_full  # an evaluated copy, named as its original
        for update in depsgraph.updates
        if update.is_updated_geometry and isinstance(update.id, bpy.types.Object)
    )


@persistent
def forget_topology(*_) -> None:
    SHAPES.forget_topology()


# Evaluations that depsgraph_update_post does not report object by object.
EVERYTHING_MAY_CHANGE = (
    bpy.app.handlers.frame_change_post,
    bpy.app.handlers.undo_post,
    bpy.app.handlers.redo_post,
    bpy.app.handlers.load_post,
)


def register() -> None:
    bpy.app.handlers.depsgraph_update_post.append(geometry_updated)
    for handlers in EVERYTHING_MAY_CHANGE:
        handlers.append(forget_topology)


def unregister() -> None:
    if geometry_updated in bpy.app.handlers.depsgraph_update_post:
        bpy.app.handlers.depsgraph_update_post.remove(geometry_updated)
    for handlers in EVERYTHING_MAY_CHANGE:
        if forget_topology in handlers:
            handlers.remove(forget_topology)
    SHAPES.forget_topology()
