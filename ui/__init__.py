"""Blender UI: the settings PropertyGroup, the sidebar panel and the Object menu entries.

No keymaps: every operator is reachable from the sidebar, the Object menu and F3."""

from collections.abc import Callable

import bpy

from . import menu, panel, settings

# fake-bpy-module says register_classes_factory returns None; it returns the two functions.
_register_classes: Callable[[], None]
_unregister_classes: Callable[[], None]
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(  # type: ignore[func-returns-value, misc]
    panel.classes + menu.classes
)


def register():
    settings.register()
    _register_classes()
    panel.register()
    menu.register()


def unregister():
    menu.unregister()
    panel.unregister()
    _unregister_classes()
    settings.unregister()
