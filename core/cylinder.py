"""Ray vs a finite cylinder from ``p0`` to ``p1``: a capped solid, or an open tube (a surface).

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

Open tube (``capped=False``): only the side wall between the cap planes, a surface with no
inside. The line meets the infinite cylinder's wall at the two ends of the same interval,
``side_enter`` and ``side_leave``; each is a hit when it lies at or after 0 and between the
cap planes, and the first such is the answer. The radial normal is turned to face the ray
(``n.d <= 0``: from inside the tube it points inward). A ray parallel to the axis never
crosses the wall (it passes through, or runs along the wall, a zero-measure graze counted
as a miss). An origin on the wall (``| |q| - r | <= 2^-40 r``) is a hit at 0 because the
wall is there, not because anything is inside: its normal still faces the ray.

The work happens in the cylinder's frame (u, v, w), where the radial problem is 2D. For an
axis-aligned cylinder (what Blender's cylinders map to) the frame only picks components.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .cylinder_cast import sphere_cast_cylinder
from .shapes import as_point, as_positive
from .sphere import first_entry, interval_records_with_normals, line_ball_interval
from .vectors import at_least, from_frame, linear_combination, plane_basis, signed_infinity

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

# An origin within this fraction of the radius from an open tube's wall is on the wall.
ON_WALL = 2.0**-40


class Cylinder:
    """A cylinder of ``radius`` whose axis runs from ``p0`` to ``p1``: a capped solid, or
    with ``capped=False`` an open tube (the side wall only, hit from either side)."""

    dimension = 3

    def __init__(self, p0: ArrayLike, p1: ArrayLike, radius: float, capped: bool = True) -> None:
        self.p0 = as_point("p0", p0, (3,))
        self.p1 = as_point("p1", p1, (3,))
        self.radius = as_positive("radius", radius)
        axis = self.p1 - self.p0
        self.height = float(np.linalg.norm(axis))
        if not self.height > 0:
            raise ValueError(f"p0 and p1 must differ, both are {self.p0.tolist()}")
        self.axis = axis / self.height
        self.frame = frame_around(self.axis)
        if not isinstance(capped, (bool, np.bool_)):
            raise ValueError(f"capped must be True or False, got {capped!r}")
        self.capped = bool(capped)
        self.solid = self.capped  # an open tube is a surface: no inside, no distance-0 rule

    kernel_module = "cylinder"  # core/kernels/cylinder.py (see core/backend.py)

    @property
    def kernel_variant(self):
        return self.capped  # a kernel per kind (core/backend.py's kind())

    def _numpy_seconds(self, query: str, n: int) -> float:
        """The numpy reference's time for ``n`` rays, any query (core/backend.py's latency
        rule): ~0.3 ms a call and 100-850 ns a ray, measured."""
        return 3e-4 + 5e-7 * n

    def _kernel_arguments(self):
        frame = np.array(self.frame)  # rows u, v, w
        return (self.p0, frame, self.height, self.radius, self.capped)

    def __repr__(self):
        capped = "" if self.capped else ", capped=False"
        return (
            f"Cylinder(p0={self.p0.tolist()}, p1={self.p1.tolist()}, radius={self.radius}{capped})"
        )

    def _intersect_components(self, origin, direction, max_distance):
        return self._crossings(origin, direction, with_exits=False)

    def _all_hits_components(self, origin, direction, max_distance):
        """Records for raycast_all: the capped solid's entry (raycast's hit) and exit, or
        each crossing of the open tube's wall."""
        return self._crossings(origin, direction, with_exits=True)

    def _crossings(self, origin, direction, with_exits):
        """raycast's (distance, normal), or with ``with_exits`` raycast_all's records."""
        relative = [o - p for o, p in zip(origin, self.p0)]
        x0, y0, z0 = (linear_combination(axis, relative) for axis in self.frame)
        dx, dy, dz = (linear_combination(axis, direction) for axis in self.frame)

        # Infinite cylinder: a 2D ray-circle problem in the (u, v) plane. The radial
        # direction has length a < 1, so distances along it are divided by a. A ray
        # parallel to the axis (a = 0) is inside for all t or never: the clamped a keeps
        # the arithmetic finite and the interval is then widened to (-inf, inf).
        a = np.sqrt(dx * dx + dy * dy)
        along_axis = a == 0.0
        any_along_axis = along_axis.any()
        if any_along_axis:
            a = at_least(a, 1e-300)
        inverse_a = 1.0 / a
        side_enter, side_leave = line_ball_interval(
            [x0, y0], [dx * inverse_a, dy * inverse_a], self.radius
        )
        side_enter = side_enter * inverse_a
        side_leave = side_leave * inverse_a
        if not self.capped:
            return self._tube(
                x0, y0, z0, dx, dy, dz, side_enter, side_leave, along_axis, with_exits
            )
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
        valid = True
        if any_parallel:
            slab_enter = np.minimum(slab_enter, signed_infinity(parallel_to_caps))
            slab_leave = np.maximum(slab_leave, -signed_infinity(parallel_to_caps))
            valid = ~parallel_to_caps | between_caps

        enter = np.maximum(side_enter, slab_enter)
        leave = np.minimum(side_leave, slab_leave)
        inside = (x0 * x0 + y0 * y0 <= self.radius * self.radius) & between_caps
        distance = first_entry(enter, leave, inside, valid & (enter <= leave))

        def normal_at(t, through_cap, cap_sign):
            """The cap's cap_sign * w where the slab set the crossing, else radial."""
            hit_x = x0 + t * dx
            hit_y = y0 + t * dy
            radial_scale = ~through_cap / at_least(np.sqrt(hit_x * hit_x + hit_y * hit_y), 1e-300)
            return from_frame(
                [hit_x * radial_scale, hit_y * radial_scale, through_cap * cap_sign], self.frame
            )

        # Entry normal: the cap's -sign(dz) w when the slab set the entry, else radial.
        down = (dz < 0.0) * 2.0 - 1.0
        entry_normal = normal_at(distance, slab_enter >= side_enter, down)
        if not with_exits:
            return distance, entry_normal
        # The exit, where the interval has length: the cap's +sign(dz) w when the slab set
        # it, else radial (both outward, along the ray).
        exit_ = np.where(leave > distance, leave, np.inf)
        exit_normal = normal_at(exit_, slab_leave <= side_leave, -down)
        return interval_records_with_normals(distance, entry_normal, exit_, exit_normal)

    def _tube(self, x0, y0, z0, dx, dy, dz, side_enter, side_leave, along_axis, with_exits):
        """Wall crossings of the open tube (frame coordinates; see the module docstring):
        side_enter and side_leave where at or after 0 and between the cap planes; the
        first of them (raycast's hit), or with ``with_exits`` both (raycast_all)."""
        r = self.radius
        on_wall = (np.abs(np.sqrt(x0 * x0 + y0 * y0) - r) <= ON_WALL * r) & (z0 >= 0.0)
        on_wall &= z0 <= self.height
        crossings = []
        for root in (side_enter, side_leave):
            z = z0 + root * dz
            wall = (root >= 0.0) & (z >= 0.0) & (z <= self.height) & ~along_axis
            crossings.append(np.where(wall, root, np.inf))
        first, second = crossings
        distance = np.where(first < np.inf, first, second)
        distance = np.where(on_wall, 0.0, distance)

        def normal_at(t):
            """Radial normal, turned to face the ray: -sign(q.d) q / |q|."""
            hit_x = x0 + t * dx
            hit_y = y0 + t * dy
            facing = np.where(hit_x * dx + hit_y * dy > 0.0, -1.0, 1.0)
            scale = facing / at_least(np.sqrt(hit_x * hit_x + hit_y * hit_y), 1e-300)
            return from_frame([hit_x * scale, hit_y * scale, np.zeros_like(hit_x)], self.frame)

        if not with_exits:
            return distance, normal_at(distance)
        # The other crossing: the far root where the first record is the near one (or
        # the origin on the wall, which stands for the root nearest to 0), none where the
        # two roots coincide (a tangent touch).
        near_is_origin = on_wall & (np.abs(side_leave) <= np.abs(side_enter))
        other = np.where(near_is_origin, first, second)
        other = np.where(other > distance, other, np.inf)
        return interval_records_with_normals(distance, normal_at(distance), other, normal_at(other))

    def _sphere_cast_components(self, start, direction, radius, length):
        return sphere_cast_cylinder(self, start, direction, radius)

    def _fold(self, linear, translation):
        """This cylinder placed by ``x -> linear x + translation`` as a cylinder of its own
        kind, when the placement scales along the axis and uniformly across it (times a
        rotation); ValueError saying why not otherwise."""
        images = [linear @ axis for axis in self.frame]  # across, across, along
        lengths = [float(np.linalg.norm(image)) for image in images]
        first, second, along = (image / length for image, length in zip(images, lengths))
        if abs(lengths[0] - lengths[1]) > 1e-9 * max(lengths[:2]) or abs(first @ second) > 1e-9:
            raise ValueError(
                "sphere_cast needs a placed cylinder scaled uniformly across its axis "
                "(this placement makes its cross-section an ellipse)"
            )
        if max(abs(first @ along), abs(second @ along)) > 1e-9:
            raise ValueError(
                "sphere_cast needs a placed cylinder whose axis stays perpendicular to its "
                "cross-section (this placement shears it)"
            )
        return Cylinder(
            linear @ self.p0 + translation,
            linear @ self.p1 + translation,
            self.radius * lengths[0],
            capped=self.capped,
        )


def frame_around(axis: np.ndarray):
    """An orthonormal frame (u, v, axis); for a coordinate axis, u and v are the other two."""
    if np.count_nonzero(axis) == 1:
        k = int(np.flatnonzero(axis)[0])
        others = [np.eye(3)[i] for i in range(3) if i != k]
        return others[0], others[1], axis
    return (*plane_basis(axis), axis)
