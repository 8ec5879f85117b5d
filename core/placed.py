"""A shape placed in the world by an affine matrix: rays go to local space, hits come back.

Math. With ``x_world = L x_local + T``, a world ray ``o + t d`` (|d| = 1) is the local ray
``L^-1 (o - T) + t L^-1 d``. Its local direction has length ``s = |L^-1 d|``, so a local
distance along the unit local direction is ``t_local = s t_world``: divide by ``s`` on the
way back, multiply ``max_distance`` by ``s`` on the way in. Normals are covectors and go
back through the inverse transpose ``L^-T``, then are re-normalized. A sphere cast keeps its
shape only under a similarity (``L = k Q``, Q orthogonal); then radii and lengths scale by
``1/k`` into local space and distances by ``k`` out of it. A shape with ``_fold`` instead
takes the placement into its own parameters where that leaves a shape of its kind (a
cylinder scaled along its axis and uniformly across; a terrain scaled along its own axes,
under the rigid rest of the placement), and is cast against in world space.

A Placed shape implements the shape protocol (protocol.py) by delegating to its shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .protocol import Shape
from .reference import unit_components
from .vectors import linear_combination

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


class Placed:
    """``shape`` (in its local space) placed by the affine (D+1)x(D+1) ``matrix``."""

    placed = True

    def __init__(self, shape: Shape, matrix: ArrayLike) -> None:
        if not isinstance(shape, Shape):
            raise ValueError(f"shape must be a core shape, got {type(shape).__name__}")
        self.shape = shape
        self.dimension: int = shape.dimension
        self.solid: bool = shape.solid  # a surface stays a surface when placed
        self.supports: frozenset[str] = shape.supports
        self.chunk_size: int | None = shape.chunk_size  # rays per call, as the shape likes
        self.all_hits_chunk: int | None = shape.all_hits_chunk
        self.first_record_from_raycast: bool = shape.first_record_from_raycast
        self.kernel_family: str | None = shape.kernel_family
        self.compiled_queries: frozenset[str] = shape.compiled_queries
        self.kernel_cells: bool = shape.kernel_cells
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
            raise ValueError(
                f"matrix must be affine (last row {bottom.tolist()}), "
                f"got last row {matrix[-1].tolist()}"
            )
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
        self._placement = None  # the kernels' placement, made on first use

    def __repr__(self):
        return f"Placed({self.shape!r}, matrix={self.matrix.tolist()})"

    # The compiled kernels (backend.py) take the innermost shape's arguments and one
    # placement: nested placements are multiplied into one matrix.
    @property
    def kernel_variant(self):
        return self.shape.kernel_variant

    def numpy_seconds(self, query: str, n: int) -> float:
        """The inner shape's, with the moves to local space and back (half as much again)."""
        return 1.5 * self.shape.numpy_seconds(query, n)

    def kernel_arguments(self, query: str):
        return self.shape.kernel_arguments(query)

    def kernel_placement(self):
        if self._placement is None:
            inner = self.shape
            if isinstance(inner, Placed):
                self._placement = Placed(inner.shape, self.matrix @ inner.matrix).kernel_placement()
            else:
                from .kernel_common import placement  # numba: imported on the compiled path

                self._placement = placement(self)
        return self._placement

    def _local_rays(self, origin, direction):
        """World rays (components, unit directions) in local space: origin, unit direction
        and the stretch s = |L^-1 d| (a local distance is s times the world distance)."""
        inverse = self.inverse_linear
        relative = [o - t for o, t in zip(origin, self.translation)]
        local_origin = [linear_combination(row, relative) for row in inverse]
        local_direction = [linear_combination(row, direction) for row in inverse]
        stretch = np.sqrt(sum(x * x for x in local_direction))
        return local_origin, [x / stretch for x in local_direction], stretch

    def _world_normals(self, normal):
        """Local normals back through L^-T (world component i is sum_j inverse[j, i] n_j),
        re-normalized."""
        world, _ = unit_components(
            [linear_combination(column, normal) for column in self.inverse_linear.T]
        )
        return world

    def intersect(self, origin, direction, max_distance):
        local_origin, local_unit, stretch = self._local_rays(origin, direction)
        found = self.shape.intersect(local_origin, local_unit, max_distance * stretch)
        return (found[0] / stretch, self._world_normals(found[1])) + tuple(found[2:])

    def crossings(self, origin, direction, max_distance, kernel=None):
        """raycast_all's records of the shape in local space, brought back to the world
        as the ray query's hits are."""
        local_origin, local_unit, stretch = self._local_rays(origin, direction)
        ray, distance, normal = self.shape.crossings(
            local_origin, local_unit, max_distance * stretch, kernel
        )
        if len(ray):
            normal = self._world_normals(normal)
        return ray, distance / stretch[ray], normal

    def check(self, query: str) -> None:
        self.shape.check(query)
        if query == "sphere_cast" and self._folded() is None and self.uniform_scale is None:
            raise ValueError(
                "sphere_cast needs a placement without non-uniform scale "
                "(a swept sphere does not stay a sphere under it)"
            )

    def cast_target(self):
        """What a sphere cast runs against: the folded shape where the placement folds,
        else this placement (rigid or uniformly scaled)."""
        folded = self._folded()
        return self if folded is None else folded

    def _folded(self):
        """The shape with this placement folded into its parameters, for a shape that can
        take it (``fold``: a cylinder scaled along its axis and uniformly across stays a
        cylinder; a terrain scaled along its local axes stays a terrain, under the rigid
        rest of the placement), else None. The shape's ValueError says why a placement does
        not fold."""
        if not hasattr(self, "_folded_shape"):
            self._folded_shape = self.shape.fold(self.linear, self.translation)
        return self._folded_shape

    def fold(self, linear, translation):
        """This placed shape placed again by ``x -> linear x + translation``: the product of
        the two placements folded into the inner shape (None where it does not fold), so
        a nested placement folds as one (the compiled kernels see one placement)."""
        size = self.dimension + 1
        matrix = np.eye(size)
        matrix[:-1, :-1] = linear @ self.linear
        matrix[:-1, -1] = linear @ self.translation + translation
        return Placed(self.shape, matrix)._folded()

    def sweep(self, start, direction, radius, length):
        folded = self._folded()
        if folded is not None:  # already in world space
            return folded.sweep(start, direction, radius, length)
        k = self.uniform_scale  # L = k Q: lengths shrink by k into local space
        relative = [s - t for s, t in zip(start, self.translation)]
        local_start = [linear_combination(row, relative) for row in self.inverse_linear]
        local_direction = [k * linear_combination(row, direction) for row in self.inverse_linear]
        # Only for a shape that has it: sphere_cast calls check("sphere_cast") first.
        distance, point, normal = self.shape.sweep(
            local_start, local_direction, radius / k, length / k
        )
        world_point = [
            linear_combination(row, point) + t for row, t in zip(self.linear, self.translation)
        ]
        world_normal = [linear_combination(row, normal) / k for row in self.linear]
        return distance * k, world_point, world_normal
