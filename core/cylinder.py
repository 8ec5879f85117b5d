"""Ray vs a finite, capped, solid cylinder from ``p0`` to ``p1``.

Math. Split everything along the unit axis ``w``: a point ``x`` has height
``z = (x - p0).w`` and radial part ``q = (x - p0) - z w``. The solid is the intersection of
two convex sets, the infinite cylinder ``|q| <= r`` and the slab ``0 <= z <= h``. Along the
ray each is an interval of t: the slab's from the two cap planes (all of t when the ray
runs parallel to the caps and starts between them), the infinite cylinder's from the 2D
ray-circle problem of the radial parts (all of t when the ray runs parallel to the axis
and starts within the radius), solved like the sphere with the closest approach first.
The solid's interval is their overlap [max(enters), min(leaves)]; the hit is its first
point at or after 0. Whichever interval set the entry decides the normal: the cap's
``-sign(d.w) w`` or the radial direction. Rays through the rim give enter == leave: a hit.
"""
from __future__ import annotations

import numpy as np

from .shapes import as_point, as_positive
from .sphere import first_entry, line_ball_interval
from .vectors import add_scaled, dot, signed_infinity


class Cylinder:
    """A solid capped cylinder of ``radius`` whose axis runs from ``p0`` to ``p1``."""

    dimension = 3

    def __init__(self, p0, p1, radius):
        self.p0 = as_point("p0", p0, (3,))
        self.p1 = as_point("p1", p1, (3,))
        self.radius = as_positive("radius", radius)
        axis = self.p1 - self.p0
        self.height = float(np.linalg.norm(axis))
        if not self.height > 0:
            raise ValueError(f"p0 and p1 must differ, both are {self.p0.tolist()}")
        self.axis = axis / self.height

    def __repr__(self):
        return f"Cylinder(p0={self.p0.tolist()}, p1={self.p1.tolist()}, radius={self.radius})"

    def _intersect_components(self, origin, direction, max_distance):
        w = self.axis
        relative = [o - p for o, p in zip(origin, self.p0)]
        z0 = dot(relative, w)
        dz = dot(direction, w)
        radial_origin = add_scaled(relative, -z0, w)
        radial_direction = add_scaled(direction, -dz, w)

        # Infinite cylinder: a 2D ray-circle problem in the radial plane. The radial
        # direction has length a < 1, so distances along it are divided by a. A ray
        # parallel to the axis (a = 0) is inside for all t or never: the clamped a keeps
        # the arithmetic finite and the interval is then widened to (-inf, inf).
        a = np.sqrt(dot(radial_direction, radial_direction))
        along_axis = a == 0.0
        any_along_axis = along_axis.any()
        if any_along_axis:
            a = np.maximum(a, 1e-300)
        inverse_a = 1.0 / a
        side_enter, side_leave, side_valid = line_ball_interval(
            radial_origin, [x * inverse_a for x in radial_direction], self.radius)
        side_enter = side_enter * inverse_a
        side_leave = side_leave * inverse_a
        if any_along_axis:
            side_enter = np.minimum(side_enter, signed_infinity(along_axis))
            side_leave = np.maximum(side_leave, -signed_infinity(along_axis))

        # Slab between the caps; a ray parallel to them is inside for all t or never.
        between_caps = (z0 >= 0.0) & (z0 <= self.height)
        parallel_to_caps = dz == 0.0
        any_parallel = parallel_to_caps.any()
        safe_dz = dz + parallel_to_caps if any_parallel else dz
        inverse_dz = 1.0 / safe_dz
        to_bottom = -z0 * inverse_dz
        to_top = to_bottom + self.height * inverse_dz
        slab_enter = np.minimum(to_bottom, to_top)
        slab_leave = np.maximum(to_bottom, to_top)
        valid = side_valid
        if any_parallel:
            slab_enter = np.minimum(slab_enter, signed_infinity(parallel_to_caps))
            slab_leave = np.maximum(slab_leave, -signed_infinity(parallel_to_caps))
            valid = valid & (~parallel_to_caps | between_caps)

        enter = np.maximum(side_enter, slab_enter)
        leave = np.minimum(side_leave, slab_leave)
        inside = (dot(radial_origin, radial_origin) <= self.radius * self.radius) & between_caps
        distance = first_entry(enter, leave, valid & (enter <= leave), inside)

        # Normal: the cap's -sign(d.w) w when the slab set the entry, else radial.
        radial_hit = add_scaled(radial_origin, distance, radial_direction)
        inverse_length = 1.0 / np.maximum(np.sqrt(dot(radial_hit, radial_hit)), 1e-300)
        through_cap = slab_enter >= side_enter
        cap_sign = -np.sign(safe_dz)
        normal = []
        for side, axis in zip(radial_hit, w):
            side = side * inverse_length
            normal.append(side + through_cap * (cap_sign * axis - side))
        return distance, normal
