"""Ray vs sphere (3D) or circle (2D): the numpy reference (ray_kernel.py compiles it).

Math. With the ray ``x(t) = o + t d`` (|d| = 1) and the sphere ``|x - c| = r``, let
``m = o - c``. The closest approach of the line to the centre is at ``t_c = -m.d``; the
vector from the centre to that point is ``p = m + t_c d``, and the line meets the sphere at
``t_c -/+ h`` with the half chord ``h^2 = r^2 - |p|^2``. Taking |p|^2 from the vector p
itself, not as ``|m|^2 - (m.d)^2``, avoids the catastrophic cancellation for far origins
(Haines & Guenther, Ray Tracing Gems ch. 7).
The ray is inside the solid on the interval [t_c - h, t_c + h]; the first point of that
interval at or after 0 is the hit (0 when the origin is inside or on the sphere).

"""

from __future__ import annotations

import numpy as np

from ..vectors import add_scaled, dot


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


def intersect(center, radius, origin, direction):
    """Distance and outward normal of rays (component lists, unit directions) against the
    ball; inf or NaN where none."""
    offset = [o - c for o, c in zip(origin, center)]
    distance = ball_entry(offset, direction, radius)
    return distance, normal_at(radius, offset, direction, distance)


def normal_at(radius, offset, direction, t):
    """The outward normal at ``offset + t direction`` on the ball."""
    return [x * (1.0 / radius) for x in add_scaled(offset, t, direction)]
