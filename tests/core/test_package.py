"""The repository is the Python package geometry_queries: a wheel built from it (as by
``pip install .``) holds that package alone (core, operators, ui; no tests, benchmarks or
demo, no generic top-level name), and its core imports and answers without Blender."""

import os
import subprocess
import sys
import tomllib
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def backend():
    """Replaces the conftest's two-backend fixture: nothing here queries in this process."""
    yield None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), ROOT],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (built,) = out.glob("geometry_queries-*.whl")
    return built


def sources(folder):
    """The package's Python files below ``folder``, as paths inside the wheel."""
    found = []
    for directory, subdirectories, names in os.walk(os.path.join(ROOT, folder)):
        subdirectories[:] = [name for name in subdirectories if name != "__pycache__"]
        relative = os.path.relpath(directory, ROOT)
        found += [f"geometry_queries/{relative}/{name}" for name in names if name.endswith(".py")]
    return found


def test_the_wheel_holds_the_package_alone(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    version = tomllib.load(open(os.path.join(ROOT, "pyproject.toml"), "rb"))["project"]["version"]
    manifest = tomllib.load(open(os.path.join(ROOT, "blender_manifest.toml"), "rb"))
    assert version == manifest["version"]
    assert {name.split("/")[0] for name in names} == {
        "geometry_queries",
        f"geometry_queries-{version}.dist-info",
    }
    # geometry_queries.dask (the extra's module) and its graph, beside the add-on's entry.
    expected = [f"geometry_queries/{name}.py" for name in ("__init__", "dask", "dask_graph")]
    for folder in ("core", "operators", "ui"):
        expected += sources(folder)
    assert sorted(name for name in names if name.endswith(".py")) == sorted(expected)


def test_the_installed_core_answers_without_blender(wheel, tmp_path):
    site = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site, wheel],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    code = (
        "import sys\n"
        "import geometry_queries.core as core\n"
        "hits = core.raycast(core.Sphere((0, 0, 0), 1.0), (0, 0, 5), (0, 0, -1))\n"
        "print(hits.distance, core.__file__.startswith(sys.argv[1]), 'bpy' in sys.modules)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(site))  # the installed copy, not this checkout
    run = subprocess.run(
        [sys.executable, "-c", code, str(site)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["4.0", "True", "False"]
