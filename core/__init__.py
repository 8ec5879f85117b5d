"""Exact, vectorized geometry queries in float64 numpy. Never imports bpy.

from geometry_queries.core import Sphere, Cylinder, Heightfield, Placed, raycast, sphere_cast
hits = raycast(Sphere((0, 0, 0), 1.0), origins, directions, max_distance=10.0)

backend() names the implementation answering: "numba" (compiled kernels, when numba imports)
or "numpy" (the reference); GEOMETRY_QUERIES_BACKEND=numpy|numba forces one.
"""

from typing import TYPE_CHECKING

from .backend import backend
from .cylinder import Cylinder
from .heightfield import Heightfield
from .placed import Placed
from .queries import occluded, raycast, raycast_all, sphere_cast
from .results import AllHits, CastHits, RayHits
from .sphere import Sphere
from .visibility import cumulative_viewshed, from_xarray, viewshed

# Heightfield.from_xarray(da, **kwargs): a terrain from a 2D DataArray (core/visibility.py).
Heightfield.from_xarray = classmethod(from_xarray)  # type: ignore[attr-defined]

if TYPE_CHECKING:  # every shape implements the shape protocol (mypy checks it here)
    from .protocol import Shape

    _SHAPES: tuple[type[Shape], ...] = (Sphere, Cylinder, Heightfield, Placed)

__all__ = [
    "backend",
    "Sphere",
    "Cylinder",
    "Heightfield",
    "Placed",
    "raycast",
    "sphere_cast",
    "occluded",
    "raycast_all",
    "viewshed",
    "cumulative_viewshed",
    "AllHits",
    "RayHits",
    "CastHits",
]
