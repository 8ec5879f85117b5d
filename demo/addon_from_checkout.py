"""Use the add-on straight from this checkout, without installing it as an extension.

The checkout is linked into a folder under the name ``geometry_queries`` (whatever the
checkout's own folder is called; see _link_dir) and imported from there as a package, so its
relative imports work exactly as in the installed extension. Used by the demo, the script example,
the benchmarks and the Blender tests. An installed extension needs none of this:
its operators are simply there.

Nothing here imports bpy: a script calls temporary_user_resources() first, then imports bpy.
"""

import atexit
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK_DIR = os.path.join(ROOT, "build", "addon-from-checkout")


def temporary_user_resources(prefix: str = "gq-user-") -> str:
    """Point BLENDER_USER_RESOURCES at a new temporary folder, removed when this process
    exits, unless it names one already (a caller's); call it before importing bpy, so the
    user's Blender configuration is left alone. Returns the folder."""
    if not os.environ.get("BLENDER_USER_RESOURCES"):
        folder = tempfile.mkdtemp(prefix=prefix)
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        os.environ["BLENDER_USER_RESOURCES"] = folder
    return os.environ["BLENDER_USER_RESOURCES"]


def import_addon(subprocesses=False):
    """The add-on package from this checkout, imported as ``geometry_queries``; with
    ``subprocesses``, importable by the processes this one starts too (PYTHONPATH: dask's
    workers, the tests' fresh interpreters)."""
    if "geometry_queries" not in sys.modules:
        sys.path.insert(0, _link_dir())
    if subprocesses:
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if LINK_DIR not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([LINK_DIR, *paths])
    import geometry_queries

    return geometry_queries


def _link_dir():
    """The folder holding the link ``geometry_queries`` -> this checkout: one per checkout,
    ``build/addon-from-checkout`` (ignored by git), the same for every process and every
    run. numba files its cache of compiled kernels by the path of their source files
    (core/__pycache__ when run from a checkout), so a stable path is what lets the
    demo, the scripts, the tests and the benchmarks load the kernels compiled by an earlier
    run instead of compiling and filing them again under a new path."""
    os.makedirs(LINK_DIR, exist_ok=True)
    link = os.path.join(LINK_DIR, "geometry_queries")
    if os.path.lexists(link) and os.path.realpath(link) != os.path.realpath(ROOT):
        os.remove(link)  # a link to elsewhere (this checkout moved)
    try:
        os.symlink(ROOT, link)
    except FileExistsError:  # made by another process at the same time
        pass
    return LINK_DIR


def register_addon():
    """Import the add-on from this checkout and register it, and unregister it when Python
    exits, before bpy's own teardown (exit functions run last registered first): bpy 4.2 as
    a Python module crashes at exit while an add-on that addon_utils did not enable is still
    registered. Returns the package."""
    addon = import_addon()
    addon.register()
    atexit.register(addon.unregister)
    return addon
