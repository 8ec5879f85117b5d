"""Blender UI: the settings PropertyGroup, the sidebar panel and the Object menu entries.

No keymaps: every operator is reachable from the sidebar, the Object menu and F3."""

import bpy

from . import menu, panel, settings

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(
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
