"""Ray vs sphere (3D) or circle (2D), and a sphere cast against a sphere.

Math. With the ray ``x(t) = o + t d`` (|d| = 1) and the sphere ``|x - c| = r``, let
``m = o - c``. The closest approach of the line to the centre is at ``t_c = -m.d``; the
vector from the centre to that point is ``p = m + t_c d``, and the line meets the sphere at
``t_c -/+ h`` with the half chord ``h^2 = r^2 - |p|^2``. Taking |p|^2 from the vector p
itself, not as ``|m|^2 - (m.d)^2``, avoids the catastrophic cancellation for far origins
(Haines & Guenther, Ray Tracing Gems ch. 7).
The ray is inside the solid on the interval [t_c - h, t_c + h]; the first point of that
interval at or after 0 is the hit (0 when the origin is inside or on the sphere).

A sphere of radius ``s`` swept along a segment first touches a sphere of radius ``r``
when its centre reaches the sphere of radius ``r + s`` around ``c``: the same line
interval with ``r + s``. The contact point lies on the target along the centre line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .shapes import as_point, as_positive
from .vectors import add_scaled, dot

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def line_ball_interval(offset, direction, radius):
    """Parameter interval [enter, leave] where ``offset + t * direction`` lies within
    ``radius`` of the origin, for component lists with a unit (or zero) ``direction``;
    both NaN where the line misses the ball (the square root of a negative half chord)."""
    closest_t = -dot(offset, direction)
    perpendicular = add_scaled(offset, closest_t, direction)
    half_chord = np.sqrt(radius * radius - dot(perpendicular, perpendicular))
    return closest_t - half_chord, closest_t + half_chord


def first_entry(enter, leave, origin_inside, valid=True):
    """Distance of the first point of [enter, leave] at or after 0; inf or NaN where none
    (NaN end points, or ``valid`` False, mean no interval).

    ``origin_inside`` (the origin tested directly against the solid's inequalities) wins
    over the interval, whose end points carry rounding: an origin on the surface is a hit
    at 0 in every direction, even where rounding lost the interval. (fmax turns a NaN entry
    into 0; dividing by the reached flag turns misses into inf or NaN; no masked
    assignment.)"""
    reached = (valid & (leave >= 0.0)) | origin_inside
    return np.fmax(enter, np.zeros(enter.shape)) * ~origin_inside / reached


def interval_records_with_normals(entry, entry_normal, exit_, exit_normal):
    """raycast_all records of a solid whose ray interval is [entry, exit_] (or of a
    surface's two crossings), inf or NaN where there is none: ray rows, distances and
    normals, entries before exits."""
    rows = np.arange(len(entry))
    ray = np.concatenate((rows, rows))
    distance = np.concatenate((entry, exit_))
    found = distance < np.inf  # also drops NaN
    normal = [np.concatenate((a, b))[found] for a, b in zip(entry_normal, exit_normal)]
    return ray[found], distance[found], normal


def ball_entry(offset, direction, radius):
    """First distance at which ``offset + t * direction`` is within ``radius``."""
    enter, leave = line_ball_interval(offset, direction, radius)
    inside = dot(offset, offset) <= radius * radius
    return first_entry(enter, leave, inside)


class Sphere:
    """A solid ball (3D) or disc (2D) of ``radius`` around ``center``."""

    def __init__(self, center: ArrayLike, radius: float) -> None:
        self.center = as_point("center", center)
        self.radius = as_positive("radius", radius)
        self.dimension = self.center.shape[0]

    kernel_module = "sphere"  # core/kernels/sphere.py (see core/backend.py)

    def _numpy_seconds(self, query: str, n: int) -> float:
        """The numpy reference's time for ``n`` rays, any query (core/backend.py's latency
        rule): ~0.3 ms a call and 100-360 ns a ray, measured."""
        return 3e-4 + 3e-7 * n

    def __repr__(self):
        return f"Sphere(center={self.center.tolist()}, radius={self.radius})"

    def _kernel_arguments(self):
        center = np.zeros(3)
        center[: self.dimension] = self.center
        return (center, self.radius, self.dimension)

    def _intersect_components(self, origin, direction, max_distance):
        offset = [o - c for o, c in zip(origin, self.center)]
        distance = ball_entry(offset, direction, self.radius)
        return distance, [x * (1.0 / self.radius) for x in add_scaled(offset, distance, direction)]

    def _all_hits_components(self, origin, direction, max_distance):
        """Records for raycast_all: the entry (raycast's hit) and, where the chord has
        length, the exit at the interval's far end, normal outward (along the ray)."""
        offset = [o - c for o, c in zip(origin, self.center)]
        enter, leave = line_ball_interval(offset, direction, self.radius)
        inside = dot(offset, offset) <= self.radius * self.radius
        first = first_entry(enter, leave, inside)
        exit_ = np.where(leave > first, leave, np.inf)
        return interval_records_with_normals(
            first,
            self._normal_at(offset, direction, first),
            exit_,
            self._normal_at(offset, direction, exit_),
        )

    def _normal_at(self, offset, direction, t):
        return [x * (1.0 / self.radius) for x in add_scaled(offset, t, direction)]

    def _sphere_cast_components(self, start, direction, radius, length):
        offset = [s - c for s, c in zip(start, self.center)]
        distance = ball_entry(offset, direction, self.radius + radius)
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
        point = [c + self.radius * n for c, n in zip(self.center, normal)]
        return distance, point, normal
