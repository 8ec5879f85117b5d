"""Blender operators: map selected objects to core shapes, query, write the results."""
import bpy

classes = ()

_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()


def unregister():
    _unregister_classes()
