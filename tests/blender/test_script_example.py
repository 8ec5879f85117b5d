"""demo/script_example.py, the README's scripting example, runs headless as documented:
``python demo/script_example.py [result.blend]`` with the venv's Python."""

import os
import subprocess
import sys

import bpy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_script_example_runs_reports_every_query_and_saves_the_hits(tmp_path, addon):
    saved = tmp_path / "result.blend"
    environment = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "user"))
    run = subprocess.run(
        [sys.executable, os.path.join(ROOT, "demo", "script_example.py"), str(saved)],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        cwd=str(tmp_path),
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    for expected in (
        "Sphere: Sphere r=1.000",
        "Cylinder: Cylinder r=0.600 h=2.000",
        "Terrain: Terrain 128x128",
        "1. 1 of 1 ray hit; nearest: Sphere at 3.546 m",
        "2. 10,000 of 10,000 rays hit; nearest: Cylinder at",
        "3. 24 of 24 rays hit",
        "4. Sphere cast touches Sphere after",
        "5. Error: Cube is not a supported shape",
        "6. Removed",
    ):
        assert any(line.startswith(expected) for line in lines), (expected, run.stdout)

    bpy.ops.wm.open_mainfile(filepath=str(saved))
    hits = bpy.data.collections["Geometry Query Hits"]
    assert "Ray Hits" in hits.objects and "Sphere hit" in hits.objects
    assert len(bpy.data.objects["Ray Hits"].data.vertices) == 10000
    bpy.ops.wm.read_factory_settings(use_empty=True)
