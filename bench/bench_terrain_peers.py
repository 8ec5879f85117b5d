"""Ray vs a real terrain: our compiled Heightfield kernel against Open3D's RaycastingScene.

    .venv/bin/python bench/bench_terrain_peers.py [--rays 100000] [--repeat 10]

Terrains: the real DEM ``jacksboro_fault_dem.npz`` shipped with matplotlib (403 x 344
heights in metres, integers) and its 1024 x 1024 mirror-tiled version, on a grid of
74 m x 92.5 m (close to the DEM's 3 arc-seconds at its latitude). Rays: from 10 m above the
highest point, uniformly over the footprint, tilted up to 45 degrees. Coordinates, heights
and rays are float32 values, so Open3D (float32) sees exactly our geometry: the two
triangles per cell of our TRIANGLES surface.

Measured in the same run, timings interleaved (best of ``--repeat``; also the CPU time of
all threads per ray, which load from other processes disturbs less): rays/s of
``raycast(Heightfield(...), ...)`` on the numba backend (NUMBA_NUM_THREADS threads, by
default every core) and of Open3D's ``cast_rays`` (all threads), both solid and surface
terrain models for ours; build times: ours is Heightfield(...) plus the kernel's
arguments (the min/max hierarchies), Open3D's is the scene with the triangles up to its
first query (Embree builds its BVH then). Agreement: hit/miss disagreements and the largest
distance difference, also in float32 ulps of the hit point's largest coordinate.

Also, when mujoco is installed, MuJoCo 4's hfield geom (``mujoco.batch.Batch.ray``, one
thread; float32 heights): its rays/s and how far its answers are from ours.

Needs open3d and matplotlib (requirements-bench.txt; Open3D needs the system library
libusb-1.0-0 on Linux); prints why and exits 0 when they are missing.
"""

import argparse
import time

import common  # noqa: F401  (sys.path)
import numpy as np
from common import best_time, print_table

from geometry_queries.core import Heightfield, raycast
from geometry_queries.core.backend import backend, threads, use

SPACING = (74.0, 92.5)


def terrains():
    """(name, heights) of the DEM and its 1024 x 1024 mirror tiling."""
    from matplotlib import cbook

    dem = cbook.get_sample_data("jacksboro_fault_dem.npz")["elevation"].astype(np.float64)
    ny, nx = dem.shape
    tiled = np.pad(dem, ((0, 1024 - ny), (0, 1024 - nx)), mode="symmetric")
    return [(f"DEM {nx}x{ny}", dem), ("DEM tiled 1024x1024", tiled)]


def rays_from_above(heights, count, rng):
    ny, nx = heights.shape
    origins = np.column_stack(
        [
            rng.uniform(0, SPACING[0] * (nx - 1), count),
            rng.uniform(0, SPACING[1] * (ny - 1), count),
            np.full(count, heights.max() + 10.0),
        ]
    )
    tilt = rng.uniform(0, np.radians(45), count)
    azimuth = rng.uniform(0, 2 * np.pi, count)
    directions = np.column_stack(
        [np.sin(tilt) * np.cos(azimuth), np.sin(tilt) * np.sin(azimuth), -np.cos(tilt)]
    )
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    f32 = lambda a: a.astype(np.float32).astype(np.float64)  # noqa: E731
    return f32(origins), f32(directions)


def mesh(heights):
    """Vertices (float32) and triangles (uint32) of the TRIANGLES surface: cell (i, j)
    split along (i, j)-(i+1, j+1)."""
    ny, nx = heights.shape
    x, y = np.meshgrid(SPACING[0] * np.arange(nx), SPACING[1] * np.arange(ny))
    vertices = np.column_stack([x.ravel(), y.ravel(), heights.ravel()]).astype(np.float32)
    index = np.arange(nx * ny).reshape(ny, nx)
    a, b = index[:-1, :-1].ravel(), index[:-1, 1:].ravel()
    c, d = index[1:, :-1].ravel(), index[1:, 1:].ravel()
    triangles = np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)])
    return vertices, triangles.astype(np.uint32)


def open3d_scene(o3d, vertices, triangles):
    scene = o3d.t.geometry.RaycastingScene()
    scene.add_triangles(o3d.core.Tensor(vertices), o3d.core.Tensor(triangles))
    scene.cast_rays(o3d.core.Tensor(np.array([[0, 0, 1e4, 0, 0, -1]], dtype=np.float32)))
    return scene


def mujoco_hfield(heights):
    """MuJoCo 4's ray batch (``mujoco.batch.Batch``, one thread, its fastest path) over an
    hfield geom on our grid, or None without mujoco. MuJoCo keeps the heights as float32
    normalized to [0, 1] times the elevation range, and splits each cell along the same
    diagonal as our TRIANGLES."""
    try:
        import mujoco
        from mujoco.batch import Batch
    except ImportError:
        return None
    ny, nx = heights.shape
    rx, ry = SPACING[0] * (nx - 1) / 2, SPACING[1] * (ny - 1) / 2
    low, high = heights.min(), heights.max()
    model = mujoco.MjModel.from_xml_string(
        f'<mujoco><asset><hfield name="terrain" nrow="{ny}" ncol="{nx}" '
        f'size="{rx} {ry} {high - low} 1"/></asset><worldbody><geom type="hfield" '
        f'hfield="terrain" pos="{rx} {ry} {low}"/></worldbody></mujoco>'
    )
    model.hfield_data[:] = ((heights - low) / (high - low)).ravel()
    return Batch(model, nsim=1, nthread=1)


def bench(name, heights, count, repeat, rng, o3d):
    origins, directions = rays_from_above(heights, count, rng)
    solid = Heightfield(heights, SPACING)
    surface = Heightfield(heights, SPACING, solid=False)

    def build():
        Heightfield(heights, SPACING).kernel_arguments("raycast")

    build()  # imports the kernel module
    our_build = best_time(build, repeat=5)
    raycast(solid, origins[:4096], directions[:4096])  # compiles (or loads) the kernel
    raycast(surface, origins[:4096], directions[:4096])

    vertices, triangles = mesh(heights)
    start = time.perf_counter()
    scene = open3d_scene(o3d, vertices, triangles)
    their_build = time.perf_counter() - start
    their_build = min(
        their_build, best_time(lambda: open3d_scene(o3d, vertices, triangles), repeat=2)
    )
    rays32 = o3d.core.Tensor(np.hstack([origins, directions]).astype(np.float32))

    results = {}
    best = {"solid": np.inf, "surface": np.inf, "open3d": np.inf}
    cpu = dict(best)  # CPU time of all threads: what a run costs, whatever else runs
    for _ in range(repeat):  # interleaved, so load changes on the machine hit all alike
        for key, run in [
            ("solid", lambda: results.update(solid=raycast(solid, origins, directions))),
            ("surface", lambda: results.update(surface=raycast(surface, origins, directions))),
            ("open3d", lambda: results.update(open3d=scene.cast_rays(rays32))),
        ]:
            start = time.process_time()
            best[key] = min(best[key], best_time(run, repeat=1))
            cpu[key] = min(cpu[key], time.process_time() - start)

    mujoco = mujoco_hfield(heights)
    mujoco_rate = mujoco_agree = None
    if mujoco is not None:
        found = {}
        seconds = best_time(lambda: found.update(ray=mujoco.ray(origins, directions)), repeat=3)
        mujoco_rate = count / seconds
        distance = found["ray"][0][0]
        distance = np.where(distance >= 0, distance, np.inf)
        solid_hits = results["solid"]
        both = solid_hits.hit & np.isfinite(distance)
        mujoco_agree = (
            int((solid_hits.hit != np.isfinite(distance)).sum()),
            float(np.abs(solid_hits.distance[both] - distance[both]).max()),
        )

    ours = results["solid"]
    theirs = results["open3d"]["t_hit"].numpy().astype(np.float64)
    their_hit = np.isfinite(theirs)
    both = ours.hit & their_hit
    difference = np.abs(ours.distance[both] - theirs[both])
    scale = np.abs(ours.point[both]).max(axis=1).astype(np.float32)
    ulps = difference / np.spacing(scale).astype(np.float64)
    surface_same = np.array_equal(results["surface"].hit, ours.hit) and np.allclose(
        results["surface"].distance[ours.hit], ours.distance[ours.hit], rtol=1e-12, atol=0
    )
    return {
        "name": name,
        "solid": count / best["solid"],
        "surface": count / best["surface"],
        "open3d": count / best["open3d"],
        "cpu": cpu["solid"] / count,
        "open3d_cpu": cpu["open3d"] / count,
        "build": our_build,
        "open3d_build": their_build,
        "hit_rate": float(ours.hit.mean()),
        "disagree": int((ours.hit != their_hit).sum()),
        "worst": float(difference.max()) if both.any() else 0.0,
        "worst_ulps": float(ulps.max()) if both.any() else 0.0,
        "surface_same": surface_same,
        "mujoco": mujoco_rate,
        "mujoco_agree": mujoco_agree,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rays", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    try:
        import matplotlib  # noqa: F401
        import open3d as o3d
    except ImportError as error:  # optional peers (requirements-bench.txt)
        print(f"bench_terrain_peers: skipped, {error} (pip install -r requirements-bench.txt)")
        return
    if backend() != "numba":
        print("bench_terrain_peers: skipped, the numba backend is not active")
        return
    rng = np.random.default_rng(2026)
    with use("numba"):
        results = [bench(name, h, args.rays, args.repeat, rng, o3d) for name, h in terrains()]
    print_table(
        f"Ray vs terrain, {args.rays} rays from above (tilt <= 45 deg): numba kernel "
        f"({threads()} threads) vs Open3D RaycastingScene (all threads), M rays/s",
        [
            "terrain",
            "ours solid",
            "ours surface",
            "Open3D",
            "solid/Open3D",
            "surface/Open3D",
            "our build",
            "Open3D build",
            "build ratio",
        ],
        [
            [
                r["name"],
                f"{r['solid'] / 1e6:.2f}",
                f"{r['surface'] / 1e6:.2f}",
                f"{r['open3d'] / 1e6:.2f}",
                f"{r['solid'] / r['open3d']:.2f}x",
                f"{r['surface'] / r['open3d']:.2f}x",
                f"{r['build'] * 1e3:.1f} ms",
                f"{r['open3d_build'] * 1e3:.0f} ms",
                f"1/{r['open3d_build'] / r['build']:.0f}",
            ]
            for r in results
        ],
    )
    for r in results:
        print(
            f"{r['name']}: CPU time of all threads per ray: ours (solid) {r['cpu'] * 1e9:.0f} "
            f"ns, Open3D {r['open3d_cpu'] * 1e9:.0f} ns ({r['open3d_cpu'] / r['cpu']:.2f}x)"
        )
        print(
            f"{r['name']}: hit rate {r['hit_rate']:.3f}; against Open3D {r['disagree']} "
            f"hit/miss disagreements, max |distance difference| {r['worst']:.2e} m "
            f"({r['worst_ulps']:.1f} float32 ulps of the hit point's coordinates); surface "
            f"model {'gives the same hits' if r['surface_same'] else 'DIFFERS'}"
        )
        if r["mujoco"] is not None:
            print(
                f"{r['name']}: MuJoCo hfield (Batch.ray, one thread) {r['mujoco'] / 1e6:.2f} M "
                f"rays/s, ours {r['solid'] / r['mujoco']:.1f}x; {r['mujoco_agree'][0]} hit/miss "
                f"disagreements, max |distance difference| {r['mujoco_agree'][1]:.2e} m (its "
                f"heights are float32, normalized to the elevation range)"
            )


if __name__ == "__main__":
    main()
