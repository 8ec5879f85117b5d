"""Shared pieces of the benchmark scripts: timing, Blender meshes, embreex, table printing.

Every script sets BLENDER_USER_RESOURCES to a temporary directory before bpy is imported.
"""

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from demo.addon_from_checkout import import_addon, temporary_user_resources  # noqa: E402

temporary_user_resources("gq-bench-")
import_addon()  # the package geometry_queries, from this checkout

import bpy  # noqa: E402, F401  (after BLENDER_USER_RESOURCES; makes bmesh and mathutils importable)
import numpy as np  # noqa: E402


def register_with_kernels(timeout=300.0):
    """Register the add-on from this checkout and wait until its kernels are prepared in the
    background (core/prepare.py), as they are a minute after a user enables it; returns the
    seconds waited."""
    from demo.addon_from_checkout import register_addon

    register_addon()
    from geometry_queries.core import prepare

    started = time.perf_counter()
    while prepare.status().state == "preparing" and time.perf_counter() - started < timeout:
        time.sleep(0.1)
    if prepare.status().state != "ready":
        print(f"warning: {prepare.status().line()}", flush=True)
    return time.perf_counter() - started


def best_time(function, repeat=10):
    """Best wall time of ``repeat`` calls, in seconds."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def bmesh_triangles(build):
    """(vertices (V, 3) float64, triangles (T, 3) int) of a bmesh made by ``build(bm)``."""
    import bmesh

    bm = bmesh.new()
    build(bm)
    bmesh.ops.triangulate(bm, faces=bm.faces[:])
    vertices = np.array([v.co[:] for v in bm.verts])
    bm.verts.index_update()
    triangles = np.array([[v.index for v in face.verts] for face in bm.faces])
    bm.free()
    return vertices, triangles


def uv_sphere_mesh(radius=1.0, segments=32, rings=16):
    import bmesh

    return bmesh_triangles(
        lambda bm: bmesh.ops.create_uvsphere(
            bm, u_segments=segments, v_segments=rings, radius=radius
        )
    )


def cylinder_mesh(radius=1.0, depth=2.0, segments=32):
    import bmesh

    return bmesh_triangles(
        lambda bm: bmesh.ops.create_cone(
            bm,
            cap_ends=True,
            cap_tris=False,
            segments=segments,
            radius1=radius,
            radius2=radius,
            depth=depth,
        )
    )


def bvhtree_loop_rate(vertices, triangles, origins, directions, count=20_000):
    """Rays/s of the per-ray Python loop Blender users write today: for each numpy row,
    make the mathutils Vectors, call BVHTree.ray_cast, store distance and normal back into
    numpy arrays. Timed over the first ``count`` rays."""
    from mathutils import Vector
    from mathutils.bvhtree import BVHTree

    tree = BVHTree.FromPolygons([tuple(v) for v in vertices], [tuple(t) for t in triangles])
    origins, directions = origins[:count], directions[:count]
    distance = np.full(count, np.inf)
    normal = np.full((count, 3), np.nan)

    def loop():
        for row in range(count):
            location, face_normal, _, length = tree.ray_cast(
                Vector(origins[row]), Vector(directions[row])
            )
            if location is not None:
                distance[row] = length
                normal[row] = face_normal

    return count / best_time(loop, repeat=2)


def embreex_scene(vertices, triangles):
    """An embreex scene of the triangles, or None when embreex is not installed."""
    try:
        from embreex import rtcore_scene
        from embreex.mesh_construction import TriangleMesh
    except ImportError:
        return None
    scene = rtcore_scene.EmbreeScene()
    TriangleMesh(scene, vertices[triangles].astype(np.float32))
    return scene


def embreex_rate(scene, origins, directions):
    """Rays/s of embreex (distances and primitive ids) over the whole batch, or None."""
    if scene is None:
        return None
    origins32 = origins.astype(np.float32)
    directions32 = (directions / np.linalg.norm(directions, axis=1, keepdims=True)).astype(
        np.float32
    )
    scene.run(origins32[:1000], directions32[:1000], output=1)  # warm-up / lazy build
    return len(origins) / best_time(lambda: scene.run(origins32, directions32, output=1))


def mujoco_geom(geom_xml):
    """A MuJoCo 4 ray batch (``mujoco.batch.Batch``, one simulation, one thread: its fastest
    ray path) over a model holding the one geom, or None when mujoco is not installed."""
    try:
        import mujoco
        from mujoco.batch import Batch
    except ImportError:
        return None
    model = mujoco.MjModel.from_xml_string(f"<mujoco><worldbody>{geom_xml}</worldbody></mujoco>")
    return Batch(model, nsim=1, nthread=1)


def mujoco_rate(batch, origins, directions):
    """Rays/s of MuJoCo's Batch.ray over the whole batch (unit directions, so its distance is
    in length units) and its distances (inf for a miss); (None, None) without mujoco."""
    if batch is None:
        return None, None
    unit = directions / np.linalg.norm(directions, axis=1, keepdims=True)
    batch.ray(origins[:1000], unit[:1000])  # warm-up
    seconds = best_time(lambda: batch.ray(origins, unit))
    distance, _ = batch.ray(origins, unit)
    distance = distance[0]
    return len(origins) / seconds, np.where(distance >= 0, distance, np.inf)


def agreement(ours, theirs):
    """(rays whose hit/miss differ, largest relative distance difference on common hits)."""
    if theirs is None:
        return None, None
    both = np.isfinite(ours) & np.isfinite(theirs)
    differ = int((np.isfinite(ours) != np.isfinite(theirs)).sum())
    relative = np.abs(ours[both] - theirs[both]) / np.maximum(np.abs(ours[both]), 1e-300)
    return differ, float(relative.max()) if both.any() else 0.0


def rays_toward(rng, n, center, spread, distance=5.0):
    """``n`` rays from a sphere of ``distance`` around ``center`` aimed at random points
    within ``spread`` of it (a mix of hits and misses)."""
    away = rng.normal(size=(n, 3))
    away /= np.linalg.norm(away, axis=1, keepdims=True)
    origins = center + distance * away
    targets = center + rng.uniform(-spread, spread, (n, 3))
    return origins, targets - origins


def print_table(title, header, rows):
    print(f"\n{title}")
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    line = "  ".join(f"{h:>{w}}" for h, w in zip(header, widths))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(f"{str(x):>{w}}" for x, w in zip(row, widths)))


def rate(value):
    return "n/a" if value is None else f"{value / 1e6:.2f} M/s"


def ratio(ours, theirs):
    return "n/a" if theirs is None else f"{ours / theirs:.1f}x"
