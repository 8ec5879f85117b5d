"""First use of each query kind on the numba backend: a fresh process, its first call.

    .venv/bin/python bench/bench_first_use.py [name fragment ...]

Each kind runs in two new Python processes sharing a new, empty numba cache folder: the first
compiles the kernel (and caches it), the second loads it from the cache. The time is the
first query call's (10k rays, so the threaded path runs too), which includes importing
numba: ``import geometry_queries.core`` does not. CPU time (process_time) is the figure that
counts on a shared machine. Targets: <= 2 s compiling, <= 0.3 s from the cache. Arguments
keep only the kinds whose name contains one of them.
"""

import json
import os
import subprocess
import sys
import tempfile

import common  # noqa: F401  (sys.path, BLENDER_USER_RESOURCES)
from common import print_table

from demo.addon_from_checkout import LINK_DIR

KINDS = {
    "ray-sphere": "raycast(Sphere((0, 0, 0), 1.0), origins, directions)",
    "ray-circle (2D)": "raycast(Sphere((0, 0), 1.0), origins[:, :2], directions[:, :2])",
    "ray-placed sphere": "raycast(Placed(Sphere((0, 0, 0), 1.0), SHEAR), origins, directions)",
    "ray-cylinder": "raycast(Cylinder((0, 0, -1), (0, 0, 1), 1.0), origins, directions)",
    "ray-open tube": (
        "raycast(Cylinder((0, 0, -1), (0, 0, 1), 1.0, capped=False), origins, directions)"
    ),
    "ray-placed cylinder": (
        "raycast(Placed(Cylinder((0, 0, -1), (0, 0, 1), 1.0), SHEAR), origins, directions)"
    ),
    "sphere cast": "sphere_cast(Sphere((0, 0, 0), 1.0), origins, origins + directions, 0.1)",
    "sphere cast, placed": (
        "sphere_cast(Placed(Sphere((0, 0, 0), 1.0), SIMILARITY), origins, origins + directions,"
        " 0.1)"
    ),
    "sphere cast vs cylinder": (
        "sphere_cast(Cylinder((0, 0, -1), (0, 0, 1), 1.0), origins, origins + directions, 0.1)"
    ),
    "sphere cast vs terrain": "sphere_cast(TERRAIN, origins, origins + directions, 0.1)",
    "sphere cast vs terrain surface": "sphere_cast(SURFACE, origins, origins + directions, 0.1)",
    "ray-terrain": "raycast(TERRAIN, origins, directions)",
    "ray-terrain surface": "raycast(SURFACE, origins, directions)",
    "ray-terrain bilinear": "raycast(BILINEAR, origins, directions)",
    "ray-placed terrain": "raycast(Placed(TERRAIN, SHEAR), origins, directions)",
    "occluded sphere": "occluded(Sphere((0, 0, 0), 1.0), origins, origins + directions)",
    "occluded cylinder": (
        "occluded(Cylinder((0, 0, -1), (0, 0, 1), 1.0), origins, origins + directions)"
    ),
    "occluded terrain": "occluded(TERRAIN, origins, origins + directions)",
    "raycast_all terrain": "raycast_all(TERRAIN, origins, directions)",
    # The sweep and, for the vertices it leaves undecided, occluded's terrain kernel.
    "viewshed terrain": "viewshed(TERRAIN, (0.0, 0.0, 2.0))",
}

CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
started, started_cpu = time.perf_counter(), time.process_time()
import numpy as np
from geometry_queries.core import (Cylinder, Heightfield, Placed, Sphere, backend, occluded,
                                   raycast, raycast_all, sphere_cast, viewshed)
imported = time.perf_counter() - started
rng = np.random.default_rng(0)
origins = rng.normal(0, 3, (10_000, 3))
directions = -origins + rng.normal(0, 0.5, (10_000, 3))
SHEAR = [[1, 0.3, 0, 1], [0, 2, 0.5, -2], [0.2, 0, 0.7, 3], [0, 0, 0, 1]]
SIMILARITY = [[0, -2, 0, 1], [2, 0, 0, 2], [0, 0, 2, 3], [0, 0, 0, 1]]
x = np.linspace(-4, 4, 201)
HEIGHTS = np.sin(2 * x)[None, :] * np.cos(1.5 * x)[:, None]
TERRAIN = Heightfield(HEIGHTS, spacing=(0.04, 0.04), origin=(-4, -4))
SURFACE = Heightfield(HEIGHTS, spacing=(0.04, 0.04), origin=(-4, -4), solid=False)
BILINEAR = Heightfield(HEIGHTS, spacing=(0.04, 0.04), origin=(-4, -4), surface="BILINEAR")
start, start_cpu = time.perf_counter(), time.process_time()
{call}
first, first_cpu = time.perf_counter() - start, time.process_time() - start_cpu
start = time.perf_counter()
{call}
again = time.perf_counter() - start
print(json.dumps(dict(backend=backend(), imported=imported, first=first, first_cpu=first_cpu,
                      again=again)))
"""


def run_fresh(call, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, GEOMETRY_QUERIES_BACKEND="numba")
    code = CHILD.format(root=LINK_DIR, call=call)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(fragments):
    rows = []
    for kind, call in KINDS.items():
        if fragments and not any(fragment in kind for fragment in fragments):
            continue
        with tempfile.TemporaryDirectory(prefix="gq-numba-cache-") as cache:
            empty = run_fresh(call, cache)
            cached = run_fresh(call, cache)
        assert empty["backend"] == cached["backend"] == "numba"
        rows.append(
            (
                kind,
                f"{empty['first']:.2f} s",
                f"{empty['first_cpu']:.2f} s",
                f"{cached['first']:.3f} s",
                f"{cached['first_cpu']:.3f} s",
                f"{cached['again'] * 1e3:.2f} ms",
            )
        )
        print(*rows[-1], sep=" | ", flush=True)
    print_table(
        "First call of each query kind in a fresh process (10k rays; numba imported by it)",
        ("query", "empty cache", "(CPU)", "with cache", "(CPU)", "second call"),
        rows,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
