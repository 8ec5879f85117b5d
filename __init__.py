"""geometry_queries: exact, batched ray casts and sphere casts for Blender.

Only register()/unregister() live here. The bpy-dependent packages are imported inside
them, so ``core`` stays importable on a machine without Blender.
"""


def register():
    from . import operators, ui

    operators.register()
    ui.register()


def unregister():
    from . import operators, ui

    ui.unregister()
    operators.unregister()
