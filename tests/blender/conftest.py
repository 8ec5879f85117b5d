"""Real Blender (bpy 5.0.1) tests, headless.

BLENDER_USER_RESOURCES points to a temporary directory before bpy is imported, so nothing
is written to the user's Blender configuration. The add-on is imported from this checkout
as the package ``geometry_queries`` (through a symlink, whatever the checkout's folder is
called) and registered once per session; every test starts from empty factory settings.
"""

import atexit
import os
import shutil
import sys
import tempfile

if "bpy" not in sys.modules:
    os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="gq-blender-user-")
    atexit.register(shutil.rmtree, os.environ["BLENDER_USER_RESOURCES"], ignore_errors=True)

import bpy  # noqa: E402  (must come after BLENDER_USER_RESOURCES is set)
import pytest  # noqa: E402

from demo.addon_from_checkout import import_addon  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)  # blender_scenes.py, the tests' shared helpers


@pytest.fixture(scope="session")
def addon():
    module = import_addon()
    module.register()
    yield module
    module.unregister()


@pytest.fixture
def empty_scene(addon):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    yield bpy.context.scene
