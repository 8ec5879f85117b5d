"""Every crossing of rays with a sphere or circle (raycast_all's records): the entry and,
where the chord has length, the exit at the interval's far end, normal outward (along the
ray there). The numpy reference only.
"""

from __future__ import annotations

import numpy as np

from ..vectors import dot
from .ray import first_entry, interval_records_with_normals, line_ball_interval, normal_at


def crossings(center, radius, origin, direction):
    """raycast_all's records (ray rows, distances, normals) for component lists."""
    offset = [o - c for o, c in zip(origin, center)]
    enter, leave = line_ball_interval(offset, direction, radius)
    inside = dot(offset, offset) <= radius * radius
    first = first_entry(enter, leave, inside)
    exit_ = np.where(leave > first, leave, np.inf)
    return interval_records_with_normals(
        first,
        normal_at(radius, offset, direction, first),
        exit_,
        normal_at(radius, offset, direction, exit_),
    )
