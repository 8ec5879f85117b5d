"""Answers kept until the scene changes (the panel's descriptions of the selected objects,
the Visibility button's terrain check): a function that forgets them runs on every depsgraph
update and file load, from register() until unregister()."""

import bpy

HANDLERS = (bpy.app.handlers.depsgraph_update_post, bpy.app.handlers.load_post)


def forget_on_update(forget) -> None:
    for handlers in HANDLERS:
        handlers.append(forget)


def stop_forgetting(forget) -> None:
    """Remove ``forget`` from the handlers and forget once more (nothing kept after)."""
    for handlers in HANDLERS:
        if forget in handlers:
            handlers.remove(forget)
    forget()
