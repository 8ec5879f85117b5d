"""Rays/s of the analytic core queries against Blender's BVHTree loop and embreex, in one run.

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
    best_time,
    bvhtree_loop_rate,
    cylinder_mesh,
    embreex_rate,
    embreex_scene,
    print_table,
    rate,
    ratio,
    rays_toward,
    uv_sphere_mesh,
)

from core import Cylinder, Sphere, raycast, sphere_cast

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


def main():
    rng = np.random.default_rng(0)
    origins, directions = rays_toward(rng, max(SIZES), np.zeros(3), 1.2)
    sphere = Sphere((0, 0, 0), 1.0)
    cylinder = Cylinder((0, 0, -1), (0, 0, 1), 1.0)
    sphere_mesh = uv_sphere_mesh(1.0, 32, 16)
    cylinder_mesh_ = cylinder_mesh(1.0, 2.0, 32)

    rows = []
    for name, shape, mesh in (
        ("ray-sphere", sphere, sphere_mesh),
        ("ray-cylinder", cylinder, cylinder_mesh_),
    ):
        bvh = bvhtree_loop_rate(*mesh, origins, directions)
        scene = embreex_scene(*mesh)
        for n in SIZES:
            ours = n / best_time(
                lambda shape=shape, n=n: raycast(shape, origins[:n], directions[:n])
            )
            embree = embreex_rate(scene, origins[:n], directions[:n])
            rows.append(
                (
                    name,
                    f"{n:,}",
                    rate(ours),
                    rate(bvh),
                    rate(embree),
                    ratio(ours, bvh),
                    ratio(ours, embree),
                )
            )
    ends = origins + directions
    bvh = bvhtree_loop_rate(*sphere_mesh, origins, directions)
    scene = embreex_scene(*sphere_mesh)
    for n in SIZES:
        ours = n / best_time(lambda n=n: sphere_cast(sphere, origins[:n], ends[:n], 0.1))
        embree = embreex_rate(scene, origins[:n], directions[:n])
        rows.append(
            (
                "sphere cast r=0.1",
                f"{n:,}",
                rate(ours),
                rate(bvh),
                rate(embree),
                ratio(ours, bvh),
                ratio(ours, embree),
            )
        )
    print_table(
        "Analytic queries (BVHTree and embreex ray-cast the tessellated mesh; "
        "the sphere cast is compared with their ray casts)",
        ("query", "rays", "ours", "BVHTree loop", "embreex", "vs BVHTree", "vs embreex"),
        rows,
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
