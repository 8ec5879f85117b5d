"""Real Blender tests, headless, on whichever bpy runs them (`make test`: 5.0.1;
`make test-all`: 4.2 and 5.3.0 too).

BLENDER_USER_RESOURCES points to a temporary directory before bpy is imported, so nothing
is written to the user's Blender configuration. The add-on is imported from this checkout
as the package ``geometry_queries`` (through a symlink in build/, whatever the checkout's
folder is called, so the kernels compiled by earlier sessions are loaded) and registered
once per session; every test starts from empty factory settings.
"""

import os
import sys

from demo.addon_from_checkout import import_addon, temporary_user_resources

if "bpy" not in sys.modules:
    os.environ.pop("BLENDER_USER_RESOURCES", None)  # always a new one of our own
    temporary_user_resources("gq-blender-user-")

import bpy  # noqa: E402  (must come after BLENDER_USER_RESOURCES is set)
import pytest  # noqa: E402

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
