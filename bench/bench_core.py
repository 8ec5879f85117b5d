"""Rays/s of the analytic core queries (both backends) against MuJoCo, Blender's BVHTree loop
and embreex, in one run.

    .venv/bin/python bench/bench_core.py

Meshes: a 32x16 UV sphere and a 32-vertex cylinder built with bmesh (what Blender users
ray-cast today). Rays: from 5 units away, aimed at random points within 1.2 of the centre
(about half hit). BVHTree is timed on the first 20k rays (a Python loop); embreex on the
whole batch (float32, one call). Also: the tessellation error of the mesh answers against
the exact ones, and the peak memory of 10M rays against the size of inputs plus outputs.
"""

import tracemalloc

import common  # noqa: F401  (sys.path, BLENDER_USER_RESOURCES)
import numpy as np
from common import (
    agreement,
    best_time,
    bvhtree_loop_rate,
    cylinder_mesh,
    embreex_rate,
    embreex_scene,
    mujoco_geom,
    mujoco_rate,
    print_table,
    rate,
    ratio,
    rays_toward,
    uv_sphere_mesh,
)

from geometry_queries.core import Cylinder, Sphere, raycast, sphere_cast
from geometry_queries.core.backend import threads, use

SIZES = (100_000, 1_000_000)


def tessellation_error(vertices, triangles, shape, origins, directions, count=20_000):
    """Mean and max |BVHTree distance - exact distance| over rays both count as hits."""
    from mathutils import Vector
    from mathutils.bvhtree import BVHTree

    tree = BVHTree.FromPolygons([tuple(v) for v in vertices], [tuple(t) for t in triangles])
    exact = raycast(shape, origins[:count], directions[:count])
    errors = []
    for row in np.flatnonzero(exact.hit):
        location, _, _, mesh_distance = tree.ray_cast(
            Vector(origins[row]), Vector(directions[row]).normalized()
        )
        if location is not None:
            errors.append(abs(mesh_distance - exact.distance[row]))
    errors = np.array(errors)
    return errors.mean(), errors.max()


def peak_memory_ratio(shape, n=10_000_000):
    """Peak traced memory during a 10M-ray raycast over the bytes of inputs plus outputs."""
    rng = np.random.default_rng(7)
    tracemalloc.start()
    origins, directions = rays_toward(rng, n, np.zeros(3), 1.2)
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    hits = raycast(shape, origins, directions)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    inputs = origins.nbytes + directions.nbytes
    outputs = hits.hit.nbytes + hits.distance.nbytes + hits.point.nbytes + hits.normal.nbytes
    assert before >= inputs
    return peak / (inputs + outputs), peak, inputs + outputs


def timed_on(backend, function):
    """Best time of ``function`` on ``backend`` (after one call: the numba kernels compile on
    their first call, which bench_first_use.py measures)."""
    with use(backend):
        function()
        return best_time(function)


def main():
    rng = np.random.default_rng(0)
    origins, directions = rays_toward(rng, max(SIZES), np.zeros(3), 1.2)
    sphere = Sphere((0, 0, 0), 1.0)
    cylinder = Cylinder((0, 0, -1), (0, 0, 1), 1.0)
    sphere_mesh = uv_sphere_mesh(1.0, 32, 16)
    cylinder_mesh_ = cylinder_mesh(1.0, 2.0, 32)

    rows = []
    agreement_rows = []
    for name, shape, mesh, geom in (
        ("ray-sphere", sphere, sphere_mesh, '<geom type="sphere" size="1"/>'),
        ("ray-cylinder", cylinder, cylinder_mesh_, '<geom type="cylinder" size="1 1"/>'),
    ):
        bvh = bvhtree_loop_rate(*mesh, origins, directions)
        scene = embreex_scene(*mesh)
        batch = mujoco_geom(geom)
        for n in SIZES:
            rays = origins[:n], directions[:n]
            compiled = n / timed_on("numba", lambda shape=shape, rays=rays: raycast(shape, *rays))
            reference = n / timed_on("numpy", lambda shape=shape, rays=rays: raycast(shape, *rays))
            mujoco, mujoco_distance = mujoco_rate(batch, *rays)
            embree = embreex_rate(scene, *rays)
            rows.append(
                (
                    name,
                    f"{n:,}",
                    rate(compiled),
                    rate(reference),
                    rate(mujoco),
                    rate(bvh),
                    rate(embree),
                    ratio(compiled, reference),
                    ratio(compiled, mujoco),
                    ratio(compiled, bvh),
                    ratio(compiled, embree),
                )
            )
            if mujoco_distance is not None:
                differ, relative = agreement(raycast(shape, *rays).distance, mujoco_distance)
                agreement_rows.append((name, f"{n:,}", differ, f"{relative:.1e}"))
    ends = origins + directions
    bvh = bvhtree_loop_rate(*sphere_mesh, origins, directions)
    scene = embreex_scene(*sphere_mesh)
    for n in SIZES:
        cast = (origins[:n], ends[:n], 0.1)
        compiled = n / timed_on("numba", lambda cast=cast: sphere_cast(sphere, *cast))
        reference = n / timed_on("numpy", lambda cast=cast: sphere_cast(sphere, *cast))
        embree = embreex_rate(scene, origins[:n], directions[:n])
        rows.append(
            (
                "sphere cast r=0.1",
                f"{n:,}",
                rate(compiled),
                rate(reference),
                "n/a",
                rate(bvh),
                rate(embree),
                ratio(compiled, reference),
                "n/a",
                ratio(compiled, bvh),
                ratio(compiled, embree),
            )
        )
    print_table(
        f"Analytic queries, {threads()} thread(s) for numba (NUMBA_NUM_THREADS); MuJoCo 4 "
        "Batch.ray with one thread (distances only); BVHTree and embreex ray-cast the "
        "tessellated mesh (the sphere cast is compared with their ray casts)",
        (
            "query",
            "rays",
            "numba",
            "numpy",
            "MuJoCo",
            "BVHTree loop",
            "embreex",
            "vs numpy",
            "vs MuJoCo",
            "vs BVHTree",
            "vs embreex",
        ),
        rows,
    )
    if agreement_rows:
        print_table(
            "Answers against MuJoCo (same rays): rays whose hit/miss differ, largest relative "
            "distance difference",
            ("query", "rays", "hit/miss differ", "max relative difference"),
            agreement_rows,
        )

    error_rows = []
    for name, shape, mesh, radius in (
        ("UV sphere 32x16", sphere, sphere_mesh, 1.0),
        ("cylinder 32", cylinder, cylinder_mesh_, 1.0),
    ):
        mean, worst = tessellation_error(*mesh, shape, origins, directions)
        error_rows.append((name, f"{100 * mean / radius:.2f} %", f"{100 * worst / radius:.1f} %"))
    print_table(
        "Tessellation error of mesh ray casts (distance, as % of the radius)",
        ("mesh", "mean", "max"),
        error_rows,
    )

    factor, peak, payload = peak_memory_ratio(sphere)
    print_table(
        "Peak memory, ray-sphere, 10M rays (tracemalloc)",
        ("inputs + outputs", "peak", "peak / (inputs + outputs)"),
        [(f"{payload / 2**20:.0f} MiB", f"{peak / 2**20:.0f} MiB", f"{factor:.2f}x")],
    )


if __name__ == "__main__":
    main()
