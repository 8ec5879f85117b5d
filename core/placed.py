"""A shape placed in the world by an affine matrix: rays go to local space, hits come back.

Math. With ``x_world = L x_local + T``, a world ray ``o + t d`` (|d| = 1) is the local ray
``L^-1 (o - T) + t L^-1 d``. Its local direction has length ``s = |L^-1 d|``, so a local
distance along the unit local direction is ``t_local = s t_world``: divide by ``s`` on the
way back, multiply ``max_distance`` by ``s`` on the way in. Normals are covectors and go
back through the inverse transpose ``L^-T``, then are re-normalized. A sphere cast keeps its
shape only under a similarity (``L = k Q``, Q orthogonal); then radii and lengths scale by
``1/k`` into local space and distances by ``k`` out of it.
"""
from __future__ import annotations

import numpy as np

from .rays import unit_rows


class Placed:
    """``shape`` (in its local space) placed by the affine (D+1)x(D+1) ``matrix``."""

    def __init__(self, shape, matrix):
        if not hasattr(shape, "_intersect"):
            raise ValueError(f"shape must be a core shape, got {type(shape).__name__}")
        self.shape = shape
        self.dimension = shape.dimension
        size = self.dimension + 1
        try:
            matrix = np.array(matrix, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(f"matrix must be a {size}x{size} array of numbers: {error}") from None
        if matrix.shape != (size, size):
            raise ValueError(f"matrix must have shape ({size}, {size}), got {matrix.shape}")
        if not np.isfinite(matrix).all():
            raise ValueError("matrix must be finite")
        bottom = np.zeros(size)
        bottom[-1] = 1.0
        if not np.array_equal(matrix[-1], bottom):
            raise ValueError(f"matrix must be affine (last row {bottom.tolist()}), "
                             f"got last row {matrix[-1].tolist()}")
        linear = matrix[:-1, :-1]
        singular_values = np.linalg.svd(linear, compute_uv=False)
        if not singular_values[-1] > 1e-12 * singular_values[0]:
            raise ValueError(f"matrix is singular (singular values {singular_values.tolist()})")
        self.matrix = matrix
        self.linear = linear
        self.translation = matrix[:-1, -1].copy()
        self.inverse_linear = np.linalg.inv(linear)
        # Uniform scale k when L = k Q (Q orthogonal), else None.
        k = float(np.sqrt(singular_values[0] * singular_values[-1]))
        uniform = (singular_values[0] - singular_values[-1]) <= 1e-9 * singular_values[0]
        self.uniform_scale = k if uniform else None

    def __repr__(self):
        return f"Placed({self.shape!r}, matrix={self.matrix.tolist()})"

    def _intersect(self, origins, directions, max_distance):
        local_origins = (origins - self.translation) @ self.inverse_linear.T
        local_directions, stretch = unit_rows(directions @ self.inverse_linear.T)
        found = self.shape._intersect(local_origins, local_directions, max_distance * stretch)
        distance = found[0] / stretch
        normal, _ = unit_rows(found[1] @ self.inverse_linear)
        return (distance, normal) + tuple(found[2:])

    def _check_sphere_cast(self):
        inner_check = getattr(self.shape, "_check_sphere_cast", None)
        if not hasattr(self.shape, "_sphere_cast"):
            raise ValueError(f"sphere_cast supports Sphere targets (optionally Placed); "
                             f"got Placed {type(self.shape).__name__}")
        if inner_check is not None:
            inner_check()
        if self.uniform_scale is None:
            raise ValueError("sphere_cast needs a placement without non-uniform scale "
                             "(a swept sphere does not stay a sphere under it)")

    def _sphere_cast(self, starts, directions, lengths, radius):
        k = self.uniform_scale
        local_starts = (starts - self.translation) @ self.inverse_linear.T
        local_directions, _ = unit_rows(directions @ self.inverse_linear.T)
        distance, center, point, normal = self.shape._sphere_cast(
            local_starts, local_directions, lengths / k, radius / k)
        return (distance * k,
                center @ self.linear.T + self.translation,
                point @ self.linear.T + self.translation,
                normal @ self.linear.T / k)
