"""A solid ball (3D) or disc (2D): shape.py, then per query the numpy reference beside its
compiled kernel (ray.py + ray_kernel.py, cast.py + cast_kernel.py) and crossings.py."""

from .shape import Sphere

__all__ = ["Sphere"]
