"""Ray vs heightfield terrain: our EXACT and MARCH against a BVHTree.ray_cast loop and embreex.

    .venv/bin/python bench/bench_heightfield.py [--sizes 256 1024] [--rays 100000]

For each grid size, in the same run and on the same triangles (two per cell, split along
(i, j)-(i+1, j+1) as our TRIANGLES surface): 100k rays from above the terrain with a random
tilt of up to 45 degrees; rays/s of Heightfield (EXACT, the compiled kernel on all cores,
loaded before it is timed) and march.MarchHeightfield (MARCH) over
the whole batch (and of surface="BILINEAR" for reference; and of solid=False, the surface
alone, for the same rays and for their mirror images from below the terrain), of a Python
loop of
mathutils.bvhtree.BVHTree.ray_cast over a 20k-ray subset,
and of embreex (optional) over the whole batch; build times of our hierarchy and of the
embreex scene; and the largest difference between our TRIANGLES hits and BVHTree's (and
embreex's). Both engines work in float32: at coordinates near 1000 their own rounding is
~3e-5 (shown by comparing them with each other), so the 1e-5 agreement is checked on a
grid centred on the origin, where float32 resolves it.

Grid coordinates, heights, ray origins and directions are rounded to float32 values, so the
float32 engines see exactly the geometry we do. Times are the best of a few runs.
"""

import argparse
import time

import common  # noqa: F401  (sys.path, BLENDER_USER_RESOURCES)
import numpy as np
from common import best_time
from march import MarchHeightfield

from geometry_queries.core import Heightfield, raycast
from geometry_queries.core.backend import use

BVH_RAYS = 20_000


def fractal_terrain(n, rng):
    """An n x n fractal (sum of octaves of smoothly upsampled noise) terrain, relief ~n/10,
    heights on a 2^-10 grid (exact in float32)."""
    heights = np.zeros((n, n))
    size = 4
    amplitude = n / 20.0
    while size <= n:
        coarse = rng.uniform(-1, 1, (size + 1, size + 1))
        t = np.linspace(0, size, n)
        i = np.minimum(t.astype(int), size - 1)
        f = t - i
        rows = coarse[i] * (1 - f)[:, None] + coarse[i + 1] * f[:, None]
        heights += amplitude * (rows[:, i] * (1 - f) + rows[:, i + 1] * f)
        size *= 2
        amplitude *= 0.5
    return np.round(heights * 1024) / 1024


def grid_triangles(n):
    """Vertices (n*n, 3 with z to fill) and triangles of an n x n grid, split as TRIANGLES."""
    index = np.arange(n * n).reshape(n, n)
    a, b = index[:-1, :-1].ravel(), index[:-1, 1:].ravel()
    c, d = index[1:, :-1].ravel(), index[1:, 1:].ravel()
    return np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)])


def rays_from_above(n, heights, count, rng):
    origins = np.column_stack(
        [
            rng.uniform(0, n - 1, count),
            rng.uniform(0, n - 1, count),
            np.full(count, heights.max() + 10.0),
        ]
    )
    tilt = rng.uniform(0, np.radians(45), count)
    azimuth = rng.uniform(0, 2 * np.pi, count)
    directions = np.column_stack(
        [np.sin(tilt) * np.cos(azimuth), np.sin(tilt) * np.sin(azimuth), -np.cos(tilt)]
    )
    f32 = lambda a: a.astype(np.float32).astype(np.float64)  # noqa: E731
    return f32(origins), f32(directions)


def bvhtree_loop(vertices, triangles, origins, directions):
    """(rays/s, distances) of the per-ray Python loop over BVHTree.ray_cast, and build s."""
    import bpy  # noqa: F401  (makes mathutils importable)
    from mathutils import Vector
    from mathutils.bvhtree import BVHTree

    start = time.perf_counter()
    tree = BVHTree.FromPolygons(vertices.tolist(), triangles.tolist())
    build = time.perf_counter() - start
    distance = np.full(len(origins), np.inf)

    def loop():
        for row in range(len(origins)):
            location, _, _, length = tree.ray_cast(Vector(origins[row]), Vector(directions[row]))
            if location is not None:
                distance[row] = length

    return len(origins) / best_time(loop, repeat=1), distance, build


def embreex_run(vertices, triangles, origins, directions):
    """(rays/s, distances, scene build s) of embreex, or None when it is not installed."""
    try:
        from embreex import rtcore_scene
        from embreex.mesh_construction import TriangleMesh
    except ImportError:
        return None
    o32 = origins.astype(np.float32)
    d32 = directions.astype(np.float32)
    start = time.perf_counter()
    scene = rtcore_scene.EmbreeScene()
    TriangleMesh(scene, vertices.astype(np.float32), triangles.astype(np.int32))
    scene.run(o32[:1], d32[:1], output=1)  # commits (builds) the scene
    build = time.perf_counter() - start
    result = {}

    def run():
        result.update(scene.run(o32, d32, output=1))

    seconds = best_time(run, repeat=5)
    distance = np.where(result["geomID"] >= 0, result["tfar"], np.inf)
    return len(origins) / seconds, distance, build


def bench(n, count, rng):
    heights = fractal_terrain(n, rng)
    origins, directions = rays_from_above(n, heights, count, rng)
    exact = Heightfield(heights)
    march = MarchHeightfield(heights)

    build = best_time(lambda: Heightfield(heights).hierarchy, repeat=5)
    _ = exact.hierarchy  # built before timing the queries
    bilinear = Heightfield(heights, surface="BILINEAR")
    # The surface alone (solid=False): the same rays, and their mirror images from below.
    surface = Heightfield(heights, solid=False)
    from_below = origins * [1, 1, -1] + [0, 0, heights.min() + heights.max()]
    upward = directions * [1, 1, -1]
    hits = {}
    # The compiled kernels, each loaded (compiled or from the cache) before it is timed: a
    # batch this size would otherwise run on numpy while no kernel is loaded (backend.py).
    with use("numba"):
        for field, start, toward in (
            (exact, origins, directions),
            (bilinear, origins, directions),
            (surface, origins, directions),  # builds both hierarchies
            (surface, from_below, upward),
        ):
            raycast(field, start[:1], toward[:1])
        exact_rate = count / best_time(
            lambda: hits.update(exact=raycast(exact, origins, directions)), repeat=5
        )
        bilinear_rate = count / best_time(lambda: raycast(bilinear, origins, directions), repeat=3)
        surface_above_rate = count / best_time(
            lambda: raycast(surface, origins, directions), repeat=3
        )
        surface_below_rate = count / best_time(
            lambda: raycast(surface, from_below, upward), repeat=3
        )
    march_rate = count / best_time(
        lambda: hits.update(march=raycast(march, origins, directions)), repeat=1
    )

    x, y = np.meshgrid(np.arange(n, dtype=float), np.arange(n, dtype=float))
    vertices = np.column_stack([x.ravel(), y.ravel(), heights.ravel()])
    triangles = grid_triangles(n)
    ours = hits["exact"]
    bvh_rate, bvh_distance, bvh_build = bvhtree_loop(
        vertices, triangles, origins[:BVH_RAYS], directions[:BVH_RAYS]
    )
    embree = embreex_run(vertices, triangles, origins, directions)

    def agreement(theirs, rows):
        same = np.isfinite(theirs) == ours.hit[rows]
        both = np.isfinite(theirs) & ours.hit[rows]
        worst = np.abs(theirs[both] - ours.distance[rows][both]).max() if both.any() else 0.0
        return int((~same).sum()), float(worst)

    bvh_disagree, bvh_worst = agreement(bvh_distance, slice(0, BVH_RAYS))
    emb = embree[0] if embree else None
    # The float32 engines against each other: their own rounding at these coordinates.
    noise = None
    if embree:
        both = np.isfinite(bvh_distance) & np.isfinite(embree[1][:BVH_RAYS])
        noise = float(np.abs(bvh_distance[both] - embree[1][:BVH_RAYS][both]).max())
    return {
        "n": n,
        "exact": exact_rate,
        "march": march_rate,
        "bilinear": bilinear_rate,
        "surface_above": surface_above_rate,
        "surface_below": surface_below_rate,
        "bvh": bvh_rate,
        "embreex": emb,
        "build_ms": build * 1e3,
        "embreex_build_ms": embree[2] * 1e3 if embree else None,
        "bvh_build_s": bvh_build,
        "hit_rate": ours.hit.mean(),
        "bvh_disagree": bvh_disagree,
        "bvh_worst": bvh_worst,
        "embreex_agree": agreement(embree[1], slice(None)) if embree else None,
        "float32_noise": noise,
        "march_missed": int((ours.hit & ~hits["march"].hit).sum()),
    }


def small_grid_agreement(rng, n=64, count=5000):
    """Largest |distance difference| between our TRIANGLES hits and BVHTree.ray_cast where
    float32 can resolve 1e-5: an n x n grid centred on the origin (|x|, |y| <= n/2), heights
    of a few units, rays starting 2 units above the terrain. Also hit/miss disagreements."""
    import bpy  # noqa: F401  (makes mathutils importable)
    from mathutils import Vector
    from mathutils.bvhtree import BVHTree

    heights = fractal_terrain(n, rng) * 0.25
    heights = np.round(heights * 1024) / 1024
    half = (n - 1) / 2
    field = Heightfield(heights, origin=(-half, -half))
    origins = np.column_stack(
        [
            rng.uniform(-half, half, count),
            rng.uniform(-half, half, count),
            np.full(count, heights.max() + 2.0),
        ]
    )
    tilt = rng.uniform(0, np.radians(45), count)
    azimuth = rng.uniform(0, 2 * np.pi, count)
    directions = np.column_stack(
        [np.sin(tilt) * np.cos(azimuth), np.sin(tilt) * np.sin(azimuth), -np.cos(tilt)]
    )
    origins = origins.astype(np.float32).astype(np.float64)
    directions = directions.astype(np.float32).astype(np.float64)
    ours = raycast(field, origins, directions)
    x, y = np.meshgrid(np.arange(n) - half, np.arange(n) - half)
    vertices = np.column_stack([x.ravel(), y.ravel(), heights.ravel()])
    tree = BVHTree.FromPolygons(vertices.tolist(), grid_triangles(n).tolist())
    theirs = np.full(count, np.inf)
    for row in range(count):
        location, _, _, length = tree.ray_cast(Vector(origins[row]), Vector(directions[row]))
        if location is not None:
            theirs[row] = length
    both = ours.hit & np.isfinite(theirs)
    disagree = int((ours.hit != np.isfinite(theirs)).sum())
    return disagree, float(np.abs(ours.distance[both] - theirs[both]).max()), int(both.sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--rays", type=int, default=100_000)
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    results = [bench(n, args.rays, rng) for n in args.sizes]

    def rate(value):
        return "n/a" if value is None else f"{value / 1e6:.3f}"

    def ratio(ours, theirs):
        return "n/a" if theirs is None else f"{ours / theirs:.1f}x"

    print(
        f"\nRay vs heightfield: {args.rays} rays from above, tilt <= 45 deg (M rays/s; "
        f"BVHTree loop over {BVH_RAYS} rays)"
    )
    header = [
        "grid",
        "EXACT",
        "MARCH",
        "BVHTree",
        "embreex",
        "hier. build",
        "embreex build",
        "EXACT/MARCH",
        "EXACT/BVHTree",
        "EXACT/embreex",
        "EXACT BILINEAR",
        "SURFACE above",
        "SURFACE below",
    ]
    rows = [
        [
            f"{r['n']}x{r['n']}",
            rate(r["exact"]),
            rate(r["march"]),
            rate(r["bvh"]),
            rate(r["embreex"]),
            f"{r['build_ms']:.1f} ms",
            "n/a" if r["embreex_build_ms"] is None else f"{r['embreex_build_ms']:.0f} ms",
            ratio(r["exact"], r["march"]),
            ratio(r["exact"], r["bvh"]),
            ratio(r["exact"], r["embreex"]),
            rate(r["bilinear"]),
            rate(r["surface_above"]),
            rate(r["surface_below"]),
        ]
        for r in results
    ]
    widths = [max(len(str(v)) for v in column) for column in zip(header, *rows)]
    print("  ".join(f"{h:>{w}}" for h, w in zip(header, widths)))
    print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    for row in rows:
        print("  ".join(f"{v:>{w}}" for v, w in zip(row, widths)))
    print()
    for r in results:
        print(
            f"{r['n']}x{r['n']}: hit rate {r['hit_rate']:.3f}; MARCH missed {r['march_missed']} "
            f"rays EXACT hit; BVHTree build {r['bvh_build_s']:.1f} s"
        )
        print(
            f"  EXACT vs BVHTree ({BVH_RAYS} rays): {r['bvh_disagree']} hit/miss disagreements, "
            f"max |distance difference| {r['bvh_worst']:.1e}"
        )
        if r["embreex_agree"]:
            print(
                f"  EXACT vs embreex: {r['embreex_agree'][0]} hit/miss disagreements, max "
                f"|distance difference| {r['embreex_agree'][1]:.1e}; BVHTree vs embreex "
                f"(both float32): {r['float32_noise']:.1e}"
            )
    disagree, worst, compared = small_grid_agreement(rng)
    verdict = "OK" if disagree == 0 and worst <= 1e-5 else "FAILED"
    print(
        f"TRIANGLES vs BVHTree.ray_cast where float32 resolves 1e-5 (64x64 grid centred on the "
        f"origin, {compared} hits): {disagree} hit/miss disagreements, max |distance difference| "
        f"{worst:.1e} -> {verdict} (target 1e-5)"
    )


if __name__ == "__main__":
    main()
