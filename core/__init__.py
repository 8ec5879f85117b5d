"""Exact, vectorized geometry queries in float64 numpy. Never imports bpy.

from core import Sphere, Cylinder, Heightfield, Placed, raycast, sphere_cast
hits = raycast(Sphere((0, 0, 0), 1.0), origins, directions, max_distance=10.0)

backend() names the implementation answering: "numba" (compiled kernels, when numba imports)
or "numpy" (the reference); GEOMETRY_QUERIES_BACKEND=numpy|numba forces one.
"""

from .all_hits import raycast_all
from .backend import backend
from .cylinder import Cylinder
from .heightfield import Heightfield
from .occlusion import occluded
from .placed import Placed
from .rays import AllHits, CastHits, RayHits, raycast, sphere_cast
from .sphere import Sphere
from .visibility import cumulative_viewshed, from_xarray, viewshed

# Heightfield.from_xarray(da, **kwargs): a terrain from a 2D DataArray (core/visibility.py).
Heightfield.from_xarray = classmethod(from_xarray)  # type: ignore[attr-defined]

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
