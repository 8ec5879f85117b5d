"""Fitting exact shapes to float32 vertices: tolerances, snapping, planes, spheres, and
placements made exact similarities (no bpy; recognize.py builds on these).

Vertices come as Blender stores them, float32 computed in float32, so they sit a few ulps
off the shape they were made on. ``recognition_tolerance`` is how far a vertex may be off
and still count as on it: 1e-5 of the mesh's size (well above float32 noise, well below
any visible edit), or ``FLOAT32_ULPS`` float32 ulps at the largest |coordinate| when that
is more (a mesh far from its origin: at x = 5000 float32 steps by 4.9e-4).

Exact parameters. A fitted value is snapped to the nearest "round" value (a multiple of
1e-5 of the shape's size, so radius 1, 0.7 or 2.5 come out exact) when that lies within
``SNAP_TOLERANCE`` of the fit, otherwise the fit is kept; far from the origin the size
used is at least one float32 ulp there / SNAP_TOLERANCE (the vertices cannot tell closer
values apart). Fits work in coordinates relative to the vertices' mean.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from .placed import Placed

RELATIVE_TOLERANCE = 1e-5
FLOAT32_ULPS = 4  # vertices are float32, computed in float32: a few ulps of noise
SNAP_TOLERANCE = 3e-6  # relative to the shape's size
SIMILARITY_TOLERANCE = 1e-6  # relative spread of a placement's singular values


# ---------------------------------------------------------------------------- sizes


def shape_size(points: np.ndarray) -> float:
    """The largest extent of ``points`` along a coordinate axis."""
    return float(np.ptp(points, axis=0).max())


def float32_noise(points: np.ndarray) -> float:
    """One float32 ulp at the points' largest |coordinate|: how finely Blender can place a
    vertex there (6e-5 at 700, 4.9e-4 at 5000), whatever the mesh's own size."""
    return float(np.spacing(np.float32(np.abs(points).max())))


def recognition_tolerance(points: np.ndarray) -> float:
    """How far a vertex may be off an exact shape and still count as on it: 1e-5 of the
    mesh's size, or ``FLOAT32_ULPS`` ulps of float32 at its largest |coordinate| when that is
    more (a mesh far from its object's origin, e.g. with its transform applied)."""
    return max(RELATIVE_TOLERANCE * shape_size(points), FLOAT32_ULPS * float32_noise(points))


def snapped(values, size: float, noise: float = 0.0):
    """``values`` rounded to multiples of 1e-5 * size (a decimal step) where that moves
    them by at most SNAP_TOLERANCE * size; other values are returned unchanged. ``noise``
    (float32_noise of the vertices) raises ``size`` to at least noise / SNAP_TOLERANCE: far
    from the origin the vertices cannot tell apart values closer than one float32 ulp."""
    values = np.asarray(values, dtype=np.float64)
    size = max(size, noise / SNAP_TOLERANCE)
    step = 10.0 ** (np.floor(np.log10(size)) - 5)
    rounded = np.round(values / step) * step
    # Shorten the binary expansion: 0.7 as the double nearest to 0.7, not 0.7000000000000001.
    rounded = np.array([float(f"{value:.12g}") for value in np.atleast_1d(rounded)]).reshape(
        rounded.shape
    )
    return np.where(np.abs(rounded - values) <= SNAP_TOLERANCE * size, rounded, values)


# ---------------------------------------------------------------------------- fits


def spread_sample(points: np.ndarray, count: int) -> np.ndarray:
    """Indices of ``count`` points far apart from each other (farthest-point sampling)."""
    distance = np.linalg.norm(points - points.mean(axis=0), axis=1)
    chosen = [int(np.argmax(distance))]
    distance = np.linalg.norm(points - points[chosen[0]], axis=1)
    for _ in range(count - 1):
        chosen.append(int(np.argmax(distance)))
        distance = np.minimum(distance, np.linalg.norm(points - points[chosen[-1]], axis=1))
    return np.array(chosen)


def two_parallel_planes(points: np.ndarray, tolerance: float):
    """(unit normal, heights of the points along it) when all points lie on at most two
    parallel planes, else None.

    If they do, at least four of any seven points lie on one of the planes (pigeonhole).
    Points on a circle, plus perhaps its centre (a triangle-fan cap), have at most three on
    a line (the centre and two opposite rim points), so some three of those four span their
    plane; trying the planes through every triple of seven well-spread points finds it."""
    if len(points) < 5:
        return None
    count = min(7, len(points))
    sample = points[spread_sample(points, count)]
    # The candidate normals in one go (not one np.cross call per 3-vector).
    a, b, c = (sample[list(k)] for k in zip(*combinations(range(count), 3)))
    normals = np.cross(b - a, c - a)
    lengths = np.linalg.norm(normals, axis=1)
    edges = np.linalg.norm(b - a, axis=1)
    for k in range(len(normals)):
        if lengths[k] <= tolerance * edges[k]:
            continue
        normal = normals[k] / lengths[k]
        heights = points @ normal
        off_first = np.abs(heights - a[k] @ normal) > tolerance
        if not off_first.any():
            return normal, heights
        other = heights[off_first]
        if np.abs(other - other[0]).max() <= tolerance:
            return normal, heights
    return None


def fit_sphere(points: np.ndarray):
    """Least-squares (algebraic) sphere through ``points`` (a circle for 2D points):
    (centre, radius). |p - c|^2 = r^2 is linear in (c, r^2 - |c|^2) once expanded."""
    mean = points.mean(axis=0)
    centred = points - mean
    matrix = np.column_stack([2.0 * centred, np.ones(len(points))])
    rhs = np.einsum("ij,ij->i", centred, centred)
    solution, *_ = np.linalg.lstsq(matrix, rhs, rcond=None)
    centre = solution[:-1] + mean
    radius = float(np.linalg.norm(points - centre, axis=1).mean())
    return centre, radius


# ---------------------------------------------------------------------------- placements


def scale_description(matrix: np.ndarray):
    """(uniform scale factor, or None when the placement scales non-uniformly)."""
    singular = np.linalg.svd(matrix[:3, :3], compute_uv=False)
    if singular[0] - singular[-1] <= 1e-6 * singular[0]:
        return float(singular[0])
    return None


def as_similarity(placed):
    """``placed`` with its matrix made an exact similarity (k Q: rotation or reflection times
    one scale) when it is one up to the float32 noise of Blender's matrices (the singular
    values agree within ``SIMILARITY_TOLERANCE``); core's sphere casts need an exact one.
    Q is the nearest orthogonal matrix (polar decomposition), k snaps like the shape
    parameters. Other placements are returned unchanged (core refuses them with a reason)."""
    linear = placed.matrix[:3, :3]
    left, singular, right = np.linalg.svd(linear)
    if singular[0] - singular[-1] > SIMILARITY_TOLERANCE * singular[0]:
        return placed
    scale = float(snapped(np.sqrt(singular[0] * singular[-1]), float(singular[0])))
    matrix = placed.matrix.copy()
    matrix[:3, :3] = scale * (left @ right)
    return Placed(placed.shape, matrix)


def as_cylinder_similarity(placed):
    """``placed`` (a Placed Cylinder) with its matrix made exactly a rotation (or reflection)
    times a scale uniform across the cylinder's axis and any along it, when it is one up to
    the float32 noise of Blender's matrices; core folds exactly such a placement into the
    cylinder for its sphere casts. With F the cylinder's frame (across, across, along) as
    columns and S the lengths of L F's columns, the nearest such matrix is
    Q diag(a, a, b) F^T with a = sqrt(S0 S1), b = S2 and Q the rotation taking S closest to
    L F (orthogonal Procrustes: the polar factor of L F S, which weights each direction by
    its length, so a long axis keeps its direction). It is taken when no entry of it is more than
    ``SIMILARITY_TOLERANCE`` x the largest scale off L (float32 rounds each entry by up to
    6e-8 of the largest; a scale along the axis of 40 blurs a scale of 0.25 across it), with
    a and b then snapped like the shape parameters. Other placements are returned unchanged
    (core refuses them with a reason: an elliptic cross-section or a sheared axis)."""
    frame = np.column_stack(placed.shape.frame)
    linear = placed.matrix[:3, :3]
    images = linear @ frame
    lengths = np.linalg.norm(images, axis=0)
    left, _, right = np.linalg.svd(images * lengths)  # Procrustes: Q S nearest L F
    rotation = left @ right
    across, along = np.sqrt(lengths[0] * lengths[1]), lengths[2]
    nearest = rotation @ np.diag([across, across, along]) @ frame.T
    largest = float(lengths.max())
    if np.abs(nearest - linear).max() > SIMILARITY_TOLERANCE * largest:
        return placed
    noise = float(np.spacing(np.float32(largest)))  # one float32 ulp of the largest scale
    across, along = (float(snapped(value, float(value), noise)) for value in (across, along))
    matrix = placed.matrix.copy()
    matrix[:3, :3] = rotation @ np.diag([across, across, along]) @ frame.T
    return Placed(placed.shape, matrix)


def as_terrain_similarity(placed):
    """``placed`` (a Placed Heightfield) with its matrix made exactly a rotation (or
    reflection) times a scale along each of the terrain's local axes, when it is one up to
    the float32 noise of Blender's matrices; core folds exactly such a placement into the
    terrain's grid for its sphere casts. As for a cylinder, with the identity for the frame
    and a scale of its own for each axis: Q diag(S) with S the lengths of L's columns and Q
    the polar factor of L diag(S). Other placements (a shear) are returned unchanged; core
    refuses them with a reason."""
    linear = placed.matrix[:3, :3]
    lengths = np.linalg.norm(linear, axis=0)
    left, _, right = np.linalg.svd(linear * lengths)
    rotation = left @ right
    largest = float(lengths.max())
    if np.abs(rotation * lengths - linear).max() > SIMILARITY_TOLERANCE * largest:
        return placed
    noise = float(np.spacing(np.float32(largest)))
    lengths = [float(snapped(value, float(value), noise)) for value in lengths]
    matrix = placed.matrix.copy()
    matrix[:3, :3] = rotation * lengths
    return Placed(placed.shape, matrix)


def as_cast_target(placed, kind: str):
    """``placed`` ready for core's sphere casts: its matrix snapped as above for its
    ``kind`` ('SPHERE', 'CYLINDER' or 'TERRAIN')."""
    if kind == "SPHERE":
        return as_similarity(placed)
    if kind == "CYLINDER":
        return as_cylinder_similarity(placed)
    return as_terrain_similarity(placed)
