"""Sphere cast vs sphere or circle: the numpy reference (cast_kernel.py compiles it).

Math. A sphere of radius ``s`` swept along a segment first touches a sphere of radius ``r``
when its centre reaches the sphere of radius ``r + s`` around ``c``: ray.py's line interval
with ``r + s``. The contact point lies on the target along the centre line.
"""

from __future__ import annotations

import numpy as np

from ..vectors import add_scaled, dot
from .ray import ball_entry


def sphere_cast(center, target_radius, start, direction, radius):
    """Centre travel, contact point and target normal of balls of ``radius`` moving from
    ``start`` along ``direction`` (component lists; unit, or zero for a zero-length cast)."""
    offset = [s - c for s, c in zip(start, center)]
    distance = ball_entry(offset, direction, target_radius + radius)
    # The normal points from the target toward the moving centre at contact.
    toward = add_scaled(offset, distance, direction)
    length = np.sqrt(dot(toward, toward))
    normal = [x / length for x in toward]
    at_center = length == 0.0
    if at_center.any():
        # The cast starts at the target's centre: face back along the cast (or up).
        fallback = [-x[at_center] for x in direction]
        still = ~np.any(np.stack(fallback) != 0.0, axis=0)
        fallback[-1][still] = 1.0
        for axis, part in enumerate(fallback):
            normal[axis][at_center] = part
    point = [c + target_radius * n for c, n in zip(center, normal)]
    return distance, point, normal
