"""The Cylinder shape: a capped solid or an open tube; the queries' math is in ray.py
(raycast and raycast_all's records) and cast.py (numpy) beside ray_kernel.py and
cast_kernel.py (compiled)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..protocol import RAY_AND_CAST_KERNELS, Unplaced
from ..validate import as_point, as_positive
from ..vectors import plane_basis
from . import ray
from .cast import sphere_cast_cylinder

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


class Cylinder(Unplaced):
    """A cylinder of ``radius`` whose axis runs from ``p0`` to ``p1``: a capped solid, or
    with ``capped=False`` an open tube (the side wall only, hit from either side)."""

    dimension = 3
    kernel_family = "cylinder"  # backend.py's KERNEL_MODULES
    compiled_queries = RAY_AND_CAST_KERNELS

    def __init__(self, p0: ArrayLike, p1: ArrayLike, radius: float, capped: bool = True) -> None:
        self.p0 = as_point("p0", p0, (3,))
        self.p1 = as_point("p1", p1, (3,))
        self.radius = as_positive("radius", radius)
        axis = self.p1 - self.p0
        self.height = float(np.linalg.norm(axis))
        if not self.height > 0:
            raise ValueError(f"p0 and p1 must differ, both are {self.p0.tolist()}")
        self.axis = axis / self.height
        self.frame = frame_around(self.axis)
        if not isinstance(capped, (bool, np.bool_)):
            raise ValueError(f"capped must be True or False, got {capped!r}")
        self.capped = bool(capped)
        self.solid = self.capped  # an open tube is a surface: no inside, no distance-0 rule

    def __repr__(self):
        capped = "" if self.capped else ", capped=False"
        return (
            f"Cylinder(p0={self.p0.tolist()}, p1={self.p1.tolist()}, radius={self.radius}{capped})"
        )

    @property
    def kernel_variant(self):
        return self.capped  # a kernel per kind (backend.py's kind())

    def numpy_seconds(self, query: str, n: int) -> float:
        """The numpy reference's time for ``n`` rays, any query (backend.py's latency rule):
        a cost per call plus a cost per ray, from the benchmarks' timings of the reference."""
        return 3e-4 + 5e-7 * n

    def kernel_arguments(self, query: str):
        frame = np.array(self.frame)  # rows u, v, w
        return (self.p0, frame, self.height, self.radius, self.capped)

    def intersect(self, origin, direction, max_distance):
        return ray.crossings(self, origin, direction, with_exits=False)

    def crossings(self, origin, direction, max_distance, kernel=None):
        """raycast_all's records: the capped solid's entry (raycast's hit) and exit, or
        each crossing of the open tube's wall (numpy only: ``kernel`` is always None)."""
        return ray.crossings(self, origin, direction, with_exits=True)

    def sweep(self, start, direction, radius, length):
        return sphere_cast_cylinder(self, start, direction, radius)

    def fold(self, linear, translation):
        """This cylinder placed by ``x -> linear x + translation`` as a cylinder of its own
        kind, when the placement scales along the axis and uniformly across it (times a
        rotation); ValueError saying why not otherwise."""
        images = [linear @ axis for axis in self.frame]  # across, across, along
        lengths = [float(np.linalg.norm(image)) for image in images]
        first, second, along = (image / length for image, length in zip(images, lengths))
        if abs(lengths[0] - lengths[1]) > 1e-9 * max(lengths[:2]) or abs(first @ second) > 1e-9:
            raise ValueError(
                "sphere_cast needs a placed cylinder scaled uniformly across its axis "
                "(this placement makes its cross-section an ellipse)"
            )
        if max(abs(first @ along), abs(second @ along)) > 1e-9:
            raise ValueError(
                "sphere_cast needs a placed cylinder whose axis stays perpendicular to its "
                "cross-section (this placement shears it)"
            )
        return Cylinder(
            linear @ self.p0 + translation,
            linear @ self.p1 + translation,
            self.radius * lengths[0],
            capped=self.capped,
        )


def frame_around(axis: np.ndarray):
    """An orthonormal frame (u, v, axis); for a coordinate axis, u and v are the other two."""
    if np.count_nonzero(axis) == 1:
        k = int(np.flatnonzero(axis)[0])
        others = [np.eye(3)[i] for i in range(3) if i != k]
        return others[0], others[1], axis
    return (*plane_basis(axis), axis)
