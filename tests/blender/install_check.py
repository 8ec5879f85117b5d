"""Install the built extension zip into a fresh Blender, use it, uninstall it; print what was
observed as one JSON line (prefixed with ``RESULT ``) for tests/blender/test_install.py.

    python tests/blender/install_check.py geometry_queries-<version>.zip
    blender -b --factory-startup --python tests/blender/install_check.py -- <zip>

Run in its own process, with its own BLENDER_USER_RESOURCES (the test sets it; run by hand,
a temporary directory is used), so the extension repository it installs into is empty and
nothing clashes with the dev copy of the add-on that the test session registers.
"""

import atexit
import importlib.machinery
import json
import os
import shutil
import sys
import tempfile
import time

if "bpy" not in sys.modules and "BLENDER_USER_RESOURCES" not in os.environ:
    os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="gq-install-")
    atexit.register(shutil.rmtree, os.environ["BLENDER_USER_RESOURCES"], ignore_errors=True)

BUNDLED = ("numba", "llvmlite")


class OnlyBundledWheels:
    """numba and llvmlite import only from the wheels the extension brought (installed under
    BLENDER_USER_RESOURCES), never from the Python running Blender: the compiled backend
    must work for a user who installed nothing."""

    def find_spec(self, name, path=None, target=None):
        if name not in BUNDLED:
            return None  # other modules, and the packages' submodules, as usual
        user = os.environ["BLENDER_USER_RESOURCES"]
        bundled = [entry for entry in sys.path if entry.startswith(user)]
        spec = importlib.machinery.PathFinder.find_spec(name, bundled)
        if spec is None:
            raise ModuleNotFoundError(f"{name} is not among the extension's wheels", name=name)
        return spec


sys.meta_path.insert(0, OnlyBundledWheels())

import bpy  # noqa: E402  (after BLENDER_USER_RESOURCES)

PKG_ID = "geometry_queries"
REPO = "user_default"
MODULE = f"bl_ext.{REPO}.{PKG_ID}"


def script_args():
    """Arguments after ``--`` (Blender binary) or after the script name (Python)."""
    return sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]


def registered_state():
    """What of the add-on is visible to Blender right now."""
    return {
        "operators": sorted(dir(bpy.ops.geometry_queries)),
        "types": sorted(name for name in dir(bpy.types) if name.startswith("GEOMETRY_QUERIES_")),
        "scene_property": hasattr(bpy.types.Scene, PKG_ID),
        "modules": sorted(name for name in sys.modules if name.startswith(MODULE)),
        "addon_enabled": MODULE in bpy.context.preferences.addons,
        "object_menu_entries": [
            func.__module__
            for func in getattr(bpy.types.VIEW3D_MT_object.draw, "_draw_funcs", ())
            if func.__module__.startswith(MODULE)
        ],
    }


def fire_one_ray():
    """A ray straight down at a UV sphere of radius 1 at the origin, off-centre."""
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=1.0, location=(0.0, 0.0, 0.0))
    sphere = bpy.context.object
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == sphere)
    result = bpy.ops.geometry_queries.fire_ray(origin=(0.2, 0.1, 5.0), direction=(0.0, 0.0, -1.0))
    hits = [obj for obj in bpy.data.objects if "distance" in obj]
    return {
        "result": sorted(result),
        "hit_names": [obj.name for obj in hits],
        "hit_distances": [float(obj["distance"]) for obj in hits],
        "hit_points": [list(obj["point"]) for obj in hits],
        "operator_module": bpy.types.GEOMETRY_QUERIES_OT_fire_ray.__module__,
        "core_file": sys.modules[MODULE + ".core"].__file__,
    }


def compiled_backend():
    """Which backend answered, from where numba came, where its kernels were cached, and a
    batch query straight through the installed core."""
    import numpy as np

    core = sys.modules[MODULE + ".core"]
    numba = sys.modules.get("numba")
    cache = bpy.utils.extension_path_user(MODULE)
    rng = np.random.default_rng(0)
    origins = rng.normal(0, 3, (5000, 3))  # enough rays for the threaded path
    cylinder = core.Placed(core.Cylinder((0, 0, -1), (0, 0, 1), 1.0), np.eye(4))
    backend = sys.modules[MODULE + ".core.backend"]
    hits = core.raycast(cylinder, origins, -origins)
    with sys.modules[MODULE + ".core.backend"].use("numpy"):
        reference = core.raycast(cylinder, origins, -origins)
    return {
        "backend": core.backend(),
        "batch_compiled": backend.loaded(backend.kind(cylinder, "raycast")),
        "numba_file": getattr(numba, "__file__", None),
        "llvmlite_file": getattr(sys.modules.get("llvmlite"), "__file__", None),
        "kernels_loaded": sorted(
            name[len(MODULE + ".core.") :]
            for name in sys.modules
            if name.startswith(MODULE + ".core.")
            and (name.endswith("_kernel") or name.endswith(".kernel_common"))
        ),
        "cache_dir": cache,
        "cached_files": sorted(
            # numba keeps each source folder's kernels in a folder named after it
            f"{os.path.basename(folder).rsplit('_', 1)[0]}/{name}"
            for folder, _, names in os.walk(cache)
            for name in names
            if name.endswith(".nbi")
        ),
        "batch_hits": int(hits.hit.sum()),
        "same_hits_as_numpy": bool((hits.hit == reference.hit).all()),
        "largest_difference_from_numpy": float(
            np.abs(hits.point[hits.hit] - reference.point[hits.hit]).max()
        ),
    }


def main():
    (zip_path,) = script_args()
    repo = next(r for r in bpy.context.preferences.extensions.repos if r.module == REPO)
    observed = {
        "user_resources": os.environ["BLENDER_USER_RESOURCES"],
        "repo_directory": repo.directory,
        "before": registered_state(),
    }

    observed["install"] = sorted(
        bpy.ops.extensions.package_install_files(
            filepath=os.path.abspath(zip_path), repo=REPO, enable_on_install=True
        )
    )
    observed["installed"] = registered_state()
    # Registering imports no numba and compiles nothing: background processes compile, and a
    # thread loads each kind they report (so numba comes in only once one is ready).
    prepare = sys.modules[MODULE + ".core.prepare"]
    observed["numba_after_register"] = sorted(
        name
        for name in sys.modules
        if name.split(".")[0] in BUNDLED or name.endswith(("_kernel", ".kernel_common"))
    )
    observed["loaded_after_register"] = prepare.status().done
    observed["installed_files"] = sorted(os.listdir(os.path.join(repo.directory, PKG_ID)))
    started = time.perf_counter()
    observed["fire_ray"] = fire_one_ray()
    observed["fire_ray"]["seconds"] = time.perf_counter() - started
    observed["fire_ray"]["numba_imported"] = "numba" in sys.modules
    while prepare.status().state == "preparing" and time.perf_counter() - started < 600:
        time.sleep(0.2)
    observed["prepared"] = {
        "line": prepare.status().line(),
        "seconds": time.perf_counter() - started,
    }
    observed["compiled"] = compiled_backend()

    observed["uninstall"] = sorted(
        bpy.ops.extensions.package_uninstall(repo_directory=repo.directory, pkg_id=PKG_ID)
    )
    observed["uninstalled"] = registered_state()
    observed["package_dir_left"] = os.path.exists(os.path.join(repo.directory, PKG_ID))
    import bl_ext

    observed["in_bl_ext"] = hasattr(getattr(bl_ext, REPO, None), PKG_ID)
    print("RESULT " + json.dumps(observed), flush=True)


if __name__ == "__main__":
    main()
