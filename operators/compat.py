"""Where Blender's Python API behaves differently across the versions the extension supports
(Blender 4.2 LTS to 5.3; Python 3.11 and 3.13), the difference is handled here and nowhere
else, each with a test that runs on every supported version (tests/blender/test_compat.py).
Everything else the add-on uses (operators and their property keywords, mesh and colour
attributes, the depsgraph and its instances, extension paths and installs) behaves alike on
all of them, which the whole Blender suite checks on each version.

Timers. Loading a file (File > Open, File > New, ``wm.read_factory_settings``) drops every
timer registered without ``persistent=True``. Blender 4.2 drops it badly: the process then
crashes when it exits (a segmentation fault, seen with bpy 4.2 as a Python module); 5.0 and
later exit cleanly. A persistent timer is never dropped behind the add-on's back, so the
add-on registers its timers here, persistent on every version, and unregisters them itself.
"""

from collections.abc import Callable

import bpy

Timer = Callable[[], float | None]


def add_timer(function: Timer, first_interval: float) -> None:
    """Run ``function`` after ``first_interval`` seconds, then again after the seconds it
    returns, until it returns None or :func:`remove_timer`; file loads do not stop it."""
    bpy.app.timers.register(function, first_interval=first_interval, persistent=True)


def remove_timer(function: Timer) -> None:
    """Stop ``function`` where it still runs (a timer that returned None has stopped)."""
    if bpy.app.timers.is_registered(function):
        bpy.app.timers.unregister(function)
