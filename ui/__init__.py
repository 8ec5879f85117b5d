"""Blender UI: the settings PropertyGroup, the sidebar panel and the Object menu entries."""
import bpy

classes = ()

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()


def unregister():
    _unregister_classes()
