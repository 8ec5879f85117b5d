"""Use the add-on straight from this checkout, without installing it as an extension.

The checkout is linked into a folder under the name ``geometry_queries`` (whatever the
checkout's own folder is called; see _link_dir) and imported from there as a package, so its
relative imports work exactly as in the installed extension. Used by the demo, the script example,
the operator benchmark and the Blender tests. An installed extension needs none of this:
its operators are simply there.
"""

import atexit
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def import_addon():
    """The add-on package from this checkout, imported as ``geometry_queries``."""
    if "geometry_queries" not in sys.modules:
        sys.path.insert(0, _link_dir())
    import geometry_queries

    return geometry_queries


def _link_dir():
    """A folder holding the link ``geometry_queries`` -> this checkout: inside the Blender
    user directory when BLENDER_USER_RESOURCES names one (the tests' and scripts' temporary
    one), so that every process sharing it imports the sources from the same path and
    reuses the kernels compiled there (numba files them by their source's path), else a
    temporary folder of this process."""
    user = os.environ.get("BLENDER_USER_RESOURCES")
    if not user:
        link_dir = tempfile.mkdtemp(prefix="gq-addon-")
        atexit.register(shutil.rmtree, link_dir, ignore_errors=True)
    else:
        link_dir = os.path.join(user, "addon-from-checkout")
        os.makedirs(link_dir, exist_ok=True)
    link = os.path.join(link_dir, "geometry_queries")
    if os.path.lexists(link) and os.path.realpath(link) != os.path.realpath(ROOT):
        os.remove(link)  # another checkout's
    try:
        os.symlink(ROOT, link)
    except FileExistsError:  # made by another process sharing the folder
        pass
    return link_dir


def register_addon():
    """Import the add-on from this checkout and register it; returns the package."""
    addon = import_addon()
    addon.register()
    return addon
