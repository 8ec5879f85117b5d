"""Synthetic meshes as Blender builds them, in numpy: (vertices (N, 3), Faces)."""

import numpy as np

from geometry_queries.core.recognize import Faces


def rotation(axis, angle):
    """The 3x3 rotation by ``angle`` about ``axis`` (Rodrigues)."""
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    cross = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * cross + (1 - np.cos(angle)) * cross @ cross


def uv_sphere(segments=32, rings=16, radius=1.0):
    """Two poles and rings - 1 circles of ``segments`` vertices; triangle fans at the poles,
    quads between circles."""
    theta = np.pi * np.arange(1, rings) / rings
    phi = 2 * np.pi * np.arange(segments) / segments
    circle = np.stack(
        [
            np.outer(np.sin(theta), np.cos(phi)),
            np.outer(np.sin(theta), np.sin(phi)),
            np.repeat(np.cos(theta)[:, None], segments, axis=1),
        ],
        axis=-1,
    ).reshape(-1, 3)
    vertices = radius * np.vstack([[0, 0, 1], circle, [0, 0, -1]])
    bottom = len(vertices) - 1

    def at(ring, k):
        return 1 + ring * segments + k % segments

    polygons = [(0, at(0, k), at(0, k + 1)) for k in range(segments)]
    for ring in range(rings - 2):
        for k in range(segments):
            polygons.append((at(ring, k), at(ring + 1, k), at(ring + 1, k + 1), at(ring, k + 1)))
    polygons += [(at(rings - 2, k + 1), at(rings - 2, k), bottom) for k in range(segments)]
    return vertices, Faces.from_polygons(polygons)


def icosphere(subdivisions=1, radius=1.0):
    """An icosahedron, each triangle split in four ``subdivisions`` times, on the sphere."""
    t = (1 + 5**0.5) / 2
    vertices = [
        (-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t),
        (0, -1, -t), (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1),
    ]  # fmt: skip
    triangles = [
        (0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
        (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
        (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1),
    ]  # fmt: skip
    points = [np.array(v, float) / np.linalg.norm(v) for v in vertices]
    for _ in range(subdivisions):
        middles: dict = {}

        def middle(a, b, middles=middles):
            key = (min(a, b), max(a, b))
            if key not in middles:
                m = points[a] + points[b]
                points.append(m / np.linalg.norm(m))
                middles[key] = len(points) - 1
            return middles[key]

        finer = []
        for a, b, c in triangles:
            ab, bc, ca = middle(a, b), middle(b, c), middle(c, a)
            finer += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        triangles = finer
    return radius * np.array(points), Faces.from_triangles(triangles)


def cylinder(segments=32, radius=1.0, depth=2.0, fill="NGON"):
    """Blender's Cylinder primitive around z from -depth/2 to depth/2: fill 'NGON' (one face
    per cap), 'TRIFAN' (a centre vertex per cap) or 'NOTHING' (an open tube)."""
    phi = 2 * np.pi * np.arange(segments) / segments
    ring = np.column_stack([radius * np.cos(phi), radius * np.sin(phi), np.zeros(segments)])
    vertices = [ring + (0, 0, -depth / 2), ring + (0, 0, depth / 2)]
    polygons = [
        (k, (k + 1) % segments, segments + (k + 1) % segments, segments + k)
        for k in range(segments)
    ]
    if fill == "NGON":
        polygons += [tuple(reversed(range(segments))), tuple(range(segments, 2 * segments))]
    elif fill == "TRIFAN":
        vertices.append([[0, 0, -depth / 2], [0, 0, depth / 2]])
        low, high = 2 * segments, 2 * segments + 1
        for k in range(segments):
            polygons.append(((k + 1) % segments, k, low))
            polygons.append((segments + k, segments + (k + 1) % segments, high))
    return np.vstack(vertices), Faces.from_polygons(polygons)


def lattice(nx=6, ny=4, spacing=(0.5, 0.25), origin=(-1.0, 2.0), diagonals=None, seed=0):
    """A grid of nx x ny vertices with random heights, vertices in a shuffled order, each
    cell split along its diagonal (True: (i+1, j)-(i, j+1)); returns
    (vertices, triangles (T, 3), heights (ny, nx), diagonals (ny-1, nx-1))."""
    rng = np.random.default_rng(seed)
    if diagonals is None:
        diagonals = rng.random((ny - 1, nx - 1)) < 0.5
    heights = rng.normal(size=(ny, nx))
    j, i = np.mgrid[0:ny, 0:nx]
    grid = np.column_stack(
        [origin[0] + i.ravel() * spacing[0], origin[1] + j.ravel() * spacing[1], heights.ravel()]
    )
    order = rng.permutation(nx * ny)  # vertex k of the mesh is lattice point order[k]
    where = np.empty_like(order)
    where[order] = np.arange(nx * ny)
    triangles = []
    for cj in range(ny - 1):
        for ci in range(nx - 1):
            a, b = cj * nx + ci, cj * nx + ci + 1
            c, d = a + nx, b + nx
            if diagonals[cj, ci]:
                triangles += [(a, b, c), (b, d, c)]
            else:
                triangles += [(a, b, d), (a, d, c)]
    return grid[order], where[np.array(triangles)], heights, diagonals


def cube(size=2.0):
    vertices = (
        size
        / 2
        * np.array([(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
    )
    polygons = [
        (0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3),
    ]  # fmt: skip
    return vertices, Faces.from_polygons(polygons)


def cone(segments=32, radius=1.0, depth=2.0):
    """Blender's Cone: a ring, an apex and an n-gon base."""
    phi = 2 * np.pi * np.arange(segments) / segments
    ring = np.column_stack([radius * np.cos(phi), radius * np.sin(phi), np.full(segments, -1.0)])
    vertices = np.vstack([ring * (1, 1, depth / 2), [[0, 0, depth / 2]]])
    polygons = [(k, (k + 1) % segments, segments) for k in range(segments)]
    polygons.append(tuple(reversed(range(segments))))
    return vertices, Faces.from_polygons(polygons)


def placed(vertices, matrix, translation):
    """Vertices moved by a linear map and a translation."""
    return vertices @ np.asarray(matrix, float).T + np.asarray(translation, float)
