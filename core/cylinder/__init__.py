"""A finite cylinder, capped or open: shape.py, then per query the numpy reference beside
its compiled kernel (ray.py + ray_kernel.py, cast.py + cast_kernel.py with torus_kernel.py)."""

from .shape import Cylinder

__all__ = ["Cylinder"]
