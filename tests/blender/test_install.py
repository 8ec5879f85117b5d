"""The extension the way a user gets it: Blender's own ``blender_ext.py build`` makes the zip,
a fresh Blender (a subprocess with its own BLENDER_USER_RESOURCES) installs it with
``extensions.package_install_files``, fires a ray through the installed operator, and
uninstalls it with ``extensions.package_uninstall``, leaving nothing registered.

Also the way CI or a developer runs the suite inside a Blender binary: tests/run_in_blender.py
runs pytest and hands its exit code back."""

import json
import math
import os
import subprocess
import sys
import tomllib
import zipfile

import bpy
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSTALL_CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "install_check.py")
RUN_IN_BLENDER = os.path.join(ROOT, "tests", "run_in_blender.py")
ADDON_FOLDERS = ("core", "operators", "ui")


def blender_ext_path():
    """blender_ext.py, the extension command line tool shipped inside bpy / Blender."""
    path = os.path.join(
        bpy.utils.system_resource("SCRIPTS"), "addons_core", "bl_pkg", "cli", "blender_ext.py"
    )
    assert os.path.isfile(path), path
    return path


def blender_command(script, *args):
    """Run ``script`` in a new Blender: the Blender binary when we are inside one, else this
    Python (bpy as a module)."""
    if bpy.app.binary_path:
        return [
            bpy.app.binary_path,
            "-b",
            "--factory-startup",
            "--python-exit-code",
            "1",
            "--python",
            script,
            "--",
            *args,
        ]
    return [sys.executable, script, *args]


PLATFORMS = ("linux_x64", "windows_x64", "macos_arm64", "macos_x64")


def manifest_wheels():
    """The wheel files blender_manifest.toml lists (./wheels/...)."""
    with open(os.path.join(ROOT, "blender_manifest.toml"), "rb") as manifest:
        return tomllib.load(manifest)["wheels"]


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    """`make package`'s build: the wheels the manifest lists (downloaded by `make wheels`
    when missing), then one zip per platform."""
    if not all(os.path.isfile(os.path.join(ROOT, wheel)) for wheel in manifest_wheels()):
        subprocess.run(
            ["make", "-C", ROOT, "wheels", f"PY={sys.executable}"],
            check=True,
            capture_output=True,
            text=True,
        )
    out_dir = tmp_path_factory.mktemp("gq-package")
    subprocess.run(
        [
            sys.executable,
            blender_ext_path(),
            "build",
            "--split-platforms",
            "--source-dir",
            ROOT,
            "--output-dir",
            str(out_dir),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return {path.name: path for path in out_dir.iterdir()}


@pytest.fixture(scope="module")
def package(packages):
    """The package for this machine's platform (the one CI installs)."""
    (linux,) = [path for name, path in packages.items() if name.endswith("-linux_x64.zip")]
    return linux


def test_one_package_per_platform_named_after_id_version_and_platform(packages):
    manifest = zipfile.ZipFile(next(iter(packages.values()))).read("blender_manifest.toml")
    version = next(
        line.split('"')[1]
        for line in manifest.decode().splitlines()
        if line.startswith("version =")
    )
    assert sorted(packages) == sorted(
        f"geometry_queries-{version}-{platform}.zip" for platform in PLATFORMS
    )


def test_each_package_bundles_numba_and_llvmlite_for_its_platform_and_both_pythons(packages):
    tags = {
        "linux_x64": "manylinux",
        "windows_x64": "win_amd64",
        "macos_arm64": "arm64",
        "macos_x64": "macosx_10_15_x86_64",
    }
    for name, path in packages.items():
        platform = next(platform for platform in PLATFORMS if name.endswith(f"-{platform}.zip"))
        wheels = [entry for entry in zipfile.ZipFile(path).namelist() if entry.endswith(".whl")]
        # name and Python of each: both Pythons of the supported Blenders, 3.11 and 3.13
        assert sorted(tuple(wheel.split("/")[1].split("-")[0:3:2]) for wheel in wheels) == [
            ("llvmlite", "cp311"),
            ("llvmlite", "cp313"),
            ("numba", "cp311"),
            ("numba", "cp313"),
        ], name
        assert all(tags[platform] in wheel for wheel in wheels), (name, wheels)
        assert not any(wheel.split("/")[1].startswith("numpy") for wheel in wheels)


def test_package_holds_only_the_addon(package):
    names = zipfile.ZipFile(package).namelist()
    assert {name.split("/")[0] for name in names} == {
        "blender_manifest.toml",
        "LICENSE",
        "__init__.py",
        "wheels",
        *ADDON_FOLDERS,
    }
    for name in names:
        parts = name.split("/")
        assert not any(part.startswith(".") or part == "__pycache__" for part in parts), name
        assert (
            name in ("blender_manifest.toml", "LICENSE")
            or name.endswith(".py")
            or (parts[0] == "wheels" and name.endswith(".whl"))
        ), name
    # ... and every module of the add-on is in it.
    for folder in ADDON_FOLDERS:
        for file_name in os.listdir(os.path.join(ROOT, folder)):
            if file_name.endswith(".py"):
                assert f"{folder}/{file_name}" in names


def test_install_fire_ray_uninstall_in_fresh_blender(package, tmp_path):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "user"))
    env.pop("PYTHONPATH", None)  # only the installed copy may be importable
    run = subprocess.run(
        blender_command(INSTALL_CHECK, str(package)),
        env=env,
        capture_output=True,
        text=True,
        timeout=900,  # includes compiling every kernel in the background
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result_lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert len(result_lines) == 1, run.stdout[-3000:] + run.stderr[-3000:]
    observed = json.loads(result_lines[0][len("RESULT ") :])

    user_dir = str(tmp_path / "user")
    assert observed["user_resources"] == user_dir
    assert observed["repo_directory"].startswith(user_dir)
    assert observed["before"] == {
        "operators": [],
        "types": [],
        "scene_property": False,
        "modules": [],
        "addon_enabled": False,
        "object_menu_entries": [],
    }

    assert observed["install"] == ["FINISHED"]
    installed = observed["installed"]
    assert installed["operators"] == [
        "clear_hits",
        "cumulative_visibility",
        "fire_ray",
        "sphere_cast",
        "visibility",
    ]
    assert "GEOMETRY_QUERIES_OT_fire_ray" in installed["types"]
    assert installed["scene_property"] and installed["addon_enabled"]
    assert "bl_ext.user_default.geometry_queries" in installed["modules"]
    assert installed["object_menu_entries"] == ["bl_ext.user_default.geometry_queries.ui.menu"]
    assert "blender_manifest.toml" in observed["installed_files"]
    assert "tests" not in observed["installed_files"]

    # The ray (0.2, 0.1, 5) -> -Z meets the unit sphere at z = sqrt(1 - 0.2^2 - 0.1^2).
    fired = observed["fire_ray"]
    assert fired["result"] == ["FINISHED"]
    assert fired["operator_module"].startswith("bl_ext.user_default.geometry_queries.")
    assert fired["core_file"].startswith(user_dir)
    assert fired["hit_names"] == ["Sphere hit"]
    z = math.sqrt(1.0 - 0.2**2 - 0.1**2)
    assert fired["hit_distances"][0] == pytest.approx(5.0 - z, abs=1e-6)
    assert fired["hit_points"][0] == pytest.approx([0.2, 0.1, z], abs=1e-6)

    # The first click does not wait for numba: the numpy reference answers it while the
    # kernels are prepared in the background. Once they are, the compiled backend answers
    # inside Blender, with numba and llvmlite from the wheels the package brought
    # (install_check.py lets them import from nowhere else), its kernels cached in the
    # extension's user directory, the same answers as numpy.
    assert observed["numba_after_register"] == [] or observed["loaded_after_register"] > 0
    assert fired["seconds"] < 5.0  # generous: the machine compiles in the background
    assert observed["prepared"]["line"] == "Fast kernels: ready"
    compiled = observed["compiled"]
    assert compiled["backend"] == "numba"
    assert compiled["batch_compiled"]
    assert compiled["numba_file"].startswith(user_dir), compiled["numba_file"]
    assert compiled["llvmlite_file"].startswith(user_dir), compiled["llvmlite_file"]
    assert compiled["kernels_loaded"] == [
        "cylinder.cast_kernel",
        "cylinder.ray_kernel",
        "cylinder.torus_kernel",
        "heightfield.cast_cells_kernel",
        "heightfield.cast_kernel",
        "heightfield.cast_walk_kernel",
        "heightfield.crossings_kernel",
        "heightfield.ray_kernel",
        "heightfield.viewshed_kernel",
        "kernel_common",
        "sphere.cast_kernel",
        "sphere.ray_kernel",
    ]
    assert compiled["cache_dir"].startswith(user_dir)
    assert any(name.startswith("sphere/ray_kernel.raycast") for name in compiled["cached_files"])
    assert any(name.startswith("cylinder/ray_kernel.raycast") for name in compiled["cached_files"])
    assert compiled["batch_hits"] > 1000
    assert compiled["same_hits_as_numpy"]
    assert compiled["largest_difference_from_numpy"] < 1e-12

    assert observed["uninstall"] == ["FINISHED"]
    assert observed["uninstalled"] == observed["before"]
    assert not observed["package_dir_left"]
    assert not observed["in_bl_ext"]


def test_run_in_blender_runs_pytest_and_returns_its_exit_code(tmp_path):
    def run(*pytest_args):
        command = blender_command(RUN_IN_BLENDER, "-q", "-p", "no:cacheprovider", *pytest_args)
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)

    # Paths are relative to the repository root whatever the working directory; bpy works.
    passed = run("tests/blender/test_install.py::test_package_holds_only_the_addon")
    assert passed.returncode == 0, passed.stdout[-3000:] + passed.stderr[-3000:]
    assert "1 passed" in passed.stdout

    failing_test = tmp_path / "test_fails.py"
    failing_test.write_text("def test_fails():\n    assert 1 == 2\n")
    failed = run(str(failing_test))
    assert failed.returncode == 1, failed.stdout[-3000:] + failed.stderr[-3000:]
    assert "1 failed" in failed.stdout

    nothing = run("tests/blender/test_install.py", "-k", "no_test_has_this_name")
    assert nothing.returncode == 5, nothing.stdout[-3000:] + nothing.stderr[-3000:]
