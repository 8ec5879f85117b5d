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

    def _intersect(self, origins, directions, max_distance):
        w = self.axis
        relative = origins - self.p0
        z0 = relative @ w
        dz = directions @ w
        radial_origin = relative - z0[:, None] * w
        radial_direction = directions - dz[:, None] * w

        # Infinite cylinder: a 2D ray-circle problem in the radial plane, with a
        # non-unit radial direction (length a), so distances are divided by a.
        a = np.sqrt(np.einsum("ij,ij->i", radial_direction, radial_direction))
        along_axis = a == 0.0
        scale = np.where(along_axis, 1.0, a)
        side_enter, side_leave, side_valid = line_ball_interval(
            radial_origin, radial_direction / scale[:, None], self.radius)
        side_enter = np.where(along_axis, -np.inf, side_enter / scale)
        side_leave = np.where(along_axis, np.inf, side_leave / scale)
        # Parallel to the axis: inside the infinite cylinder for all t, or never.
        radial_gap = np.sqrt(np.einsum("ij,ij->i", radial_origin, radial_origin))
        side_valid = np.where(along_axis, radial_gap <= self.radius, side_valid)

        # Slab between the caps.
        parallel_to_caps = dz == 0.0
        safe_dz = np.where(parallel_to_caps, 1.0, dz)
        to_bottom = -z0 / safe_dz
        to_top = (self.height - z0) / safe_dz
        slab_enter = np.where(parallel_to_caps, -np.inf, np.minimum(to_bottom, to_top))
        slab_leave = np.where(parallel_to_caps, np.inf, np.maximum(to_bottom, to_top))
        slab_valid = ~parallel_to_caps | ((z0 >= 0.0) & (z0 <= self.height))

        enter = np.maximum(side_enter, slab_enter)
        leave = np.minimum(side_leave, slab_leave)
        inside = (radial_gap <= self.radius) & (z0 >= 0.0) & (z0 <= self.height)
        distance = first_entry(enter, leave, side_valid & slab_valid & (enter <= leave), inside)

        finite = np.where(np.isfinite(distance), distance, 0.0)
        radial_hit = radial_origin + finite[:, None] * radial_direction
        radial_length = np.sqrt(np.einsum("ij,ij->i", radial_hit, radial_hit))
        side_normal = radial_hit / np.where(radial_length > 0, radial_length, 1.0)[:, None]
        cap_normal = -np.sign(safe_dz)[:, None] * w
        through_cap = slab_enter >= side_enter
        normal = np.where(through_cap[:, None], cap_normal, side_normal)
        return distance, normal
