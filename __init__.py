"""geometry_queries: exact, batched ray casts and sphere casts for Blender.

Only register()/unregister() live here. The bpy-dependent packages are imported inside
them, so ``core`` stays importable on a machine without Blender.
"""


def register():
    from . import operators, ui
    from .core import prepare

    _keep_compiled_kernels_in_user_directory()
    prepare.start()  # returns at once: the kernels are compiled and loaded in the background
    operators.register()
    ui.register()


def unregister():
    from . import operators, ui
    from .core import prepare

    ui.unregister()
    operators.unregister()
    prepare.stop()


def _keep_compiled_kernels_in_user_directory():
    """Installed as an extension, numba's cache of the compiled kernels goes to the extension's
    own user directory (writable, kept across updates). Nothing compiles here: background
    processes do (core/prepare.py)."""
    if not __package__.startswith("bl_ext."):
        return  # run from a checkout (tests, the demo): numba's default
    import bpy

    from .core.backend import set_cache_dir

    set_cache_dir(bpy.utils.extension_path_user(__package__, create=True))
