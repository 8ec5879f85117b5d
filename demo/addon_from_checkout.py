"""Use the add-on straight from this checkout, without installing it as an extension.

The checkout is linked into a temporary folder under the name ``geometry_queries`` (whatever
the checkout's own folder is called) and imported from there as a package, so its relative
imports work exactly as in the installed extension. Used by the demo, the script example,
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
        link_dir = tempfile.mkdtemp(prefix="gq-addon-")
        atexit.register(shutil.rmtree, link_dir, ignore_errors=True)
        os.symlink(ROOT, os.path.join(link_dir, "geometry_queries"))
        sys.path.insert(0, link_dir)
    import geometry_queries

    return geometry_queries


def register_addon():
    """Import the add-on from this checkout and register it; returns the package."""
    addon = import_addon()
    addon.register()
    return addon
