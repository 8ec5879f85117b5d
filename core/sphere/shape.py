"""The Sphere shape: a solid ball (3D) or disc (2D); the queries' math is in ray.py, cast.py
and crossings.py (numpy) beside ray_kernel.py and cast_kernel.py (compiled)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..protocol import RAY_AND_CAST_KERNELS, Unplaced
from ..validate import as_point, as_positive
from . import cast, crossings, ray

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


class Sphere(Unplaced):
    """A solid ball (3D) or disc (2D) of ``radius`` around ``center``."""

    solid = True
    kernel_family = "sphere"  # backend.py's KERNEL_MODULES
    compiled_queries = RAY_AND_CAST_KERNELS
    kernel_variant = None

    def __init__(self, center: ArrayLike, radius: float) -> None:
        self.center = as_point("center", center)
        self.radius = as_positive("radius", radius)
        self.dimension = self.center.shape[0]

    def __repr__(self):
        return f"Sphere(center={self.center.tolist()}, radius={self.radius})"

    def numpy_seconds(self, query: str, n: int) -> float:
        """The numpy reference's time for ``n`` rays, any query (backend.py's latency rule):
        a cost per call plus a cost per ray, from the benchmarks' timings of the reference."""
        return 3e-4 + 3e-7 * n

    def kernel_arguments(self, query: str):
        center = np.zeros(3)
        center[: self.dimension] = self.center
        return (center, self.radius, self.dimension)

    def intersect(self, origin, direction, max_distance):
        return ray.intersect(self.center, self.radius, origin, direction)

    def crossings(self, origin, direction, max_distance, kernel=None):
        """raycast_all's records (numpy only: ``kernel`` is always None)."""
        return crossings.crossings(self.center, self.radius, origin, direction)

    def fold(self, linear, translation):
        """None: a placed sphere is cast against through its (similarity) placement."""
        return None

    def sweep(self, start, direction, radius, length):
        return cast.sphere_cast(self.center, self.radius, start, direction, radius)
