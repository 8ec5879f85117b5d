"""operators/compat.py on the Blender running the suite (`make test-all` runs it on each
supported version), and the exit of a process that used the add-on."""

import os
import subprocess
import sys
import textwrap

import bpy

from demo.addon_from_checkout import LINK_DIR, ROOT


def test_a_timer_survives_a_file_load_and_stops_when_removed(empty_scene):
    from geometry_queries.operators.compat import add_timer, remove_timer

    def tick():
        return 10.0

    add_timer(tick, first_interval=10.0)
    try:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        assert bpy.app.timers.is_registered(tick)
    finally:
        remove_timer(tick)
    assert not bpy.app.timers.is_registered(tick)
    remove_timer(tick)  # stopped already: nothing to do


def run_python(code):
    """``code`` in a fresh Python with this bpy (nothing compiled: numpy answers)."""
    environment = dict(os.environ, GEOMETRY_QUERIES_BACKEND="numpy", PYTHONPATH=LINK_DIR)
    environment.pop("BLENDER_USER_RESOURCES", None)  # the script makes its own
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_process_exits_cleanly_after_a_file_load_with_the_addon_enabled():
    # Blender 4.2 crashed at exit once a file load had dropped a timer that was not
    # persistent; the panel's timer is persistent and unregister() removes it.
    run = run_python(
        """
        import sys
        sys.path.insert(0, ".")
        from demo.addon_from_checkout import temporary_user_resources
        temporary_user_resources()
        import bpy
        import geometry_queries as addon
        from geometry_queries.ui.panel import redraw_while_preparing
        addon.register()
        bpy.ops.wm.read_factory_settings(use_empty=True)
        print(bpy.app.timers.is_registered(redraw_while_preparing))
        bpy.ops.mesh.primitive_uv_sphere_add()
        bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 5), direction=(0, 0, -1))
        addon.unregister()
        print(bpy.app.timers.is_registered(redraw_while_preparing))
        """
    )
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    lines = run.stdout.splitlines()
    assert (lines[0], lines[-1]) == ("True", "False"), run.stdout


def test_a_script_that_leaves_the_addon_registered_exits_cleanly():
    # demo/addon_from_checkout.register_addon unregisters at exit: bpy 4.2 as a module
    # crashes at exit while classes registered outside addon_utils remain.
    run = run_python(
        """
        import sys
        sys.path.insert(0, ".")
        from demo.addon_from_checkout import register_addon, temporary_user_resources
        temporary_user_resources()
        import bpy
        register_addon()
        bpy.ops.wm.read_factory_settings(use_empty=True)
        bpy.ops.mesh.primitive_uv_sphere_add()
        print(bpy.ops.geometry_queries.fire_ray(origin=(0, 0, 5), direction=(0, 0, -1)))
        """
    )
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout.split()[-1] == "{'FINISHED'}", run.stdout
