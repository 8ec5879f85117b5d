"""Recognising a sphere, cylinder or terrain from a mesh's vertex and face arrays (no bpy).

Each recogniser takes the vertices (``points`` (N, 3), float32 as Blender stores them, or
float64) and the faces (:class:`Faces`) in the mesh's local space and returns the core
shape in that space, or raises :class:`NotRecognized` with the reason alone ("it is flat").
``recognize_mesh`` tries them in the order below and names the mesh with every reason.
``tolerance`` is fit.recognition_tolerance of the vertices.

terrain   the vertices form a regular XY lattice (nx x ny distinct, evenly spaced x and y
          values, exactly one vertex per lattice point, any z) and the triangles cover
          every lattice cell with two triangles. Becomes a :class:`Terrain`, whose
          Heightfield in either terrain model ('SURFACE': the triangles as drawn, hit from
          either side; 'SOLID': the ground below them) keeps each cell's diagonal as the
          triangles split it. A Grid primitive with Displace (or any modifier that moves
          vertices only in z) is one.
cylinder  its vertices lie on two parallel planes, on two circles of equal radius whose
          centres lie on one axis perpendicular to the planes, at least
          ``MIN_CYLINDER_SEGMENTS`` = 5 vertices per circle (a 4-sided prism is a box, such
          as the default cube; a 3-sided one a wedge); the centre vertices of triangle-fan
          caps are allowed. A closed mesh (every edge has two faces) is the capped solid
          ``Cylinder``; a mesh open exactly at its two rims the open tube
          ``Cylinder(..., capped=False)``.
sphere    the mesh is closed and its vertices are equidistant from one centre (least-squares
          sphere, every vertex within ``tolerance``) AND they do not all lie on two parallel
          planes. Equidistance alone is not enough: the vertices of a cube or a cylinder are
          equidistant from their centre too, but all sit on two parallel circles, while a UV
          sphere (any segments >= 3, rings >= 3: two poles and at least two rings) or an
          icosphere never does.

Radii, centres and cylinder end points snap to round values (fit.snapped); terrain heights
are the vertex z values as they are, the lattice origin and spacing come from the extreme
vertices.
"""

from __future__ import annotations

import numpy as np

from .cylinder import Cylinder
from .fit import (
    fit_sphere,
    float32_noise,
    recognition_tolerance,
    shape_size,
    snapped,
    two_parallel_planes,
)
from .heightfield import Heightfield
from .sphere import Sphere
from .vectors import plane_basis

MIN_CYLINDER_SEGMENTS = 5
TERRAIN_MODELS = ("SURFACE", "SOLID")


class NotRecognized(ValueError):
    """A mesh that is not (yet) a shape core can query; the message says why."""


# ---------------------------------------------------------------------------- faces


class Faces:
    """A mesh's faces as recognition reads them: each face's vertex cycle (``corner_verts``,
    every face's corners in order, and ``sizes``, the corners per face) and the triangles
    drawn (``triangles`` (T, 3) vertex indices; by default each face fanned from its first
    corner). Each is asked for only when a test needs it: a reader of a bigger format
    (Blender's mesh) subclasses this to read each array on first use."""

    def __init__(self, corner_verts, sizes, triangles=None):
        self._corner_verts = np.asarray(corner_verts, dtype=np.int64)
        self._sizes = np.asarray(sizes, dtype=np.int64)
        self._triangles = None if triangles is None else np.asarray(triangles, dtype=np.int64)

    @classmethod
    def from_polygons(cls, polygons, triangles=None) -> Faces:
        """Faces from a sequence of vertex-index cycles, e.g. ``[(0, 1, 2, 3), ...]``."""
        polygons = [list(polygon) for polygon in polygons]
        corner_verts = [vertex for polygon in polygons for vertex in polygon]
        return cls(corner_verts, [len(polygon) for polygon in polygons], triangles)

    @classmethod
    def from_triangles(cls, triangles) -> Faces:
        """A mesh of triangles alone, (T, 3) vertex indices."""
        triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
        return cls(triangles.ravel(), np.full(len(triangles), 3), triangles)

    def corner_verts(self) -> np.ndarray:
        return self._corner_verts

    def sizes(self) -> np.ndarray:
        return self._sizes

    def triangles(self) -> np.ndarray:
        if self._triangles is None:
            sizes = self.sizes()
            first = np.cumsum(sizes) - sizes
            fans = sizes - 2
            start = np.repeat(first, fans)
            step = np.arange(int(fans.sum())) - np.repeat(np.cumsum(fans) - fans, fans)
            corners = np.column_stack([start, start + step + 1, start + step + 2])
            self._triangles = self.corner_verts()[corners].reshape(-1, 3)
        return self._triangles

    def edges(self):
        """(unique edges (E, 2) as sorted vertex pairs, the faces using each)."""
        corner_verts, sizes = self.corner_verts(), self.sizes()
        start = np.repeat(np.cumsum(sizes) - sizes, sizes)
        size = np.repeat(sizes, sizes)
        following = corner_verts[start + (np.arange(len(corner_verts)) - start + 1) % size]
        pairs = np.sort(np.column_stack([corner_verts, following]), axis=1)
        return np.unique(pairs, axis=0, return_counts=True)

    def is_closed(self) -> bool:
        """True when every edge is used by exactly two faces (a closed, manifold surface)."""
        pairs, uses = self.edges()
        return bool(len(pairs)) and bool((uses == 2).all())


def open_at_both_rims(faces: Faces, low: np.ndarray) -> bool:
    """True when ``faces`` leave open exactly the mesh's two rims: every vertex lies on the
    boundary, which has one edge per vertex, each joining two vertices of one circle
    (``low``: the vertices on the first one). So no cap face, no centre vertex, no missing
    side face (its boundary would run from circle to circle)."""
    pairs, uses = faces.edges()
    boundary = pairs[uses == 1]
    vertex_count = len(low)
    return bool(
        (uses <= 2).all()
        and len(boundary) == vertex_count
        and (np.bincount(boundary.ravel(), minlength=vertex_count) == 2).all()
        and (low[boundary[:, 0]] == low[boundary[:, 1]]).all()
    )


def as_faces(faces) -> Faces:
    """``faces`` as Faces: Faces as it is, else (T, 3) triangle vertex indices."""
    return faces if isinstance(faces, Faces) else Faces.from_triangles(faces)


# ---------------------------------------------------------------------------- terrain


def lattice_diagonals(triangles: np.ndarray, i: np.ndarray, j: np.ndarray, nx: int, ny: int):
    """Each lattice cell's diagonal, (ny-1, nx-1) bool (True: split along (i+1, j)-(i, j+1)),
    from the triangles (vertex indices) and the lattice column ``i`` and row ``j`` of every
    vertex; NotRecognized unless every cell holds exactly two triangles.

    A triangle of cell (ci, cj) uses three of its four corners, coded (i - ci) + 2 (j - cj):
    0 (ci, cj), 1 (ci+1, cj), 2 (ci, cj+1), 3 (ci+1, cj+1); the code it leaves out is
    6 - (sum of its codes). A cell split along (ci, cj)-(ci+1, cj+1) has triangles leaving
    out 1 and 2; split along (ci+1, cj)-(ci, cj+1), 0 and 3: either way they sum to 3."""
    cells = (nx - 1) * (ny - 1)
    not_cells = NotRecognized(f"its faces do not cover the {nx}x{ny} vertex lattice cell by cell")
    if len(triangles) != 2 * cells:
        raise not_cells
    # Column-wise arithmetic: numpy reductions along a length-3 axis are slow.
    first, second, third = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    i0, i1, i2 = i[first], i[second], i[third]
    j0, j1, j2 = j[first], j[second], j[third]
    cell_i = np.minimum(np.minimum(i0, i1), i2)
    cell_j = np.minimum(np.minimum(j0, j1), j2)
    c0 = (i0 - cell_i) + 2 * (j0 - cell_j)
    c1 = (i1 - cell_i) + 2 * (j1 - cell_j)
    c2 = (i2 - cell_i) + 2 * (j2 - cell_j)
    within_cell = (np.maximum(np.maximum(i0, i1), i2) - cell_i <= 1) & (
        np.maximum(np.maximum(j0, j1), j2) - cell_j <= 1
    )
    if not (within_cell & (c0 != c1) & (c1 != c2) & (c0 != c2)).all():
        raise not_cells
    left_out = 6 - (c0 + c1 + c2)
    cell = cell_j * (nx - 1) + cell_i
    if (np.bincount(cell, minlength=cells) != 2).any() or (
        np.bincount(cell, weights=left_out, minlength=cells) != 3
    ).any():
        raise not_cells
    anti = np.bincount(cell, weights=(left_out == 0), minlength=cells)
    return (anti == 1).reshape(ny - 1, nx - 1)


class Terrain:
    """A recognised terrain in local space, and its Heightfield in each terrain model, built
    on first use from the same lattice, heights and diagonals (the exact triangles Blender
    draws): 'SURFACE' is those triangles alone, hit from either side (solid=False); 'SOLID'
    the ground below them in the terrain's local axes (solid=True)."""

    def __init__(self, heights, spacing, origin, diagonals):
        self.heights = heights
        self.diagonals = diagonals
        self.lattice = dict(spacing=spacing, origin=origin, surface="TRIANGLES")
        self.fields: dict = {}

    def field(self, terrain_model: str):
        if terrain_model not in TERRAIN_MODELS:
            raise ValueError(
                f"terrain_model must be one of {', '.join(TERRAIN_MODELS)}, got {terrain_model!r}"
            )
        if terrain_model not in self.fields:
            self.fields[terrain_model] = Heightfield(
                self.heights,
                diagonals=self.diagonals,
                solid=terrain_model == "SOLID",
                **self.lattice,
            )
        return self.fields[terrain_model]

    def arrays(self) -> list:
        """The arrays it holds (made read-only when it is cached)."""
        return [array for array in (self.heights, self.diagonals) if array is not None]

    def held_arrays(self) -> list:
        """Every array it holds now, its Heightfields' included (what a cache charges it;
        they grow as models, hierarchies and mirror images are first used)."""
        held = self.arrays()
        for field in self.fields.values():
            held += field.held_arrays()
        return held


def recognize_terrain(points, faces):
    """(Terrain, (nx, ny)) when ``points`` form a regular XY lattice whose cells the
    triangles of ``faces`` (Faces, or (T, 3) vertex indices) cover two by two; the
    triangles are read only once the vertices form a lattice. Else NotRecognized."""
    points = np.asarray(points, dtype=np.float64)
    x, y, z = points[:, 0], points[:, 1], points[:, 2]
    x_min, x_max, y_min, y_max = x.min(), x.max(), y.min(), y.max()
    tolerance = recognition_tolerance(points[:, :2])
    if not (x_max - x_min > tolerance and y_max - y_min > tolerance):
        raise NotRecognized("its vertices have no extent in x or y")
    nx = int(np.count_nonzero(np.abs(y - y_min) <= tolerance))
    if nx < 2 or len(points) % nx:
        raise NotRecognized("its vertices do not form a regular XY lattice")
    ny = len(points) // nx
    if ny < 2:
        raise NotRecognized("its vertices do not form a regular XY lattice")
    dx = (x_max - x_min) / (nx - 1)
    dy = (y_max - y_min) / (ny - 1)
    i = np.rint((x - x_min) / dx).astype(np.int32)
    j = np.rint((y - y_min) / dy).astype(np.int32)
    on_lattice = (np.abs(x - (x_min + i * dx)) <= tolerance) & (
        np.abs(y - (y_min + j * dy)) <= tolerance
    )
    lattice_index = j.astype(np.int64) * nx + i
    if not on_lattice.all() or np.bincount(lattice_index, minlength=nx * ny).max() != 1:
        raise NotRecognized("its vertices do not form a regular XY lattice")
    heights = np.empty(nx * ny)
    heights[lattice_index] = z
    heights = heights.reshape(ny, nx)
    diagonals = lattice_diagonals(as_faces(faces).triangles(), i, j, nx, ny)
    return Terrain(heights, (dx, dy), (x_min, y_min), diagonals), (nx, ny)


# ---------------------------------------------------------------------------- cylinder, sphere


def recognize_cylinder(points, faces):
    """(Cylinder, (radius, height, capped)) when ``points`` lie on two equal circles around
    one axis and ``faces`` close them (capped) or leave open both rims (an open tube);
    else NotRecognized."""
    points = np.asarray(points, dtype=np.float64)
    return _as_cylinder(points, as_faces(faces), _planes(points))


def recognize_sphere(points, faces):
    """(Sphere, radius) when ``points`` are equidistant from a centre, do not lie on two
    parallel planes and ``faces`` close them; else NotRecognized."""
    points = np.asarray(points, dtype=np.float64)
    return _as_sphere(points, as_faces(faces), _planes(points))


def _planes(points: np.ndarray):
    return two_parallel_planes(points, recognition_tolerance(points))


def _as_cylinder(points: np.ndarray, faces: Faces, planes):
    size, noise = shape_size(points), float32_noise(points)
    tolerance = recognition_tolerance(points)
    if planes is None:
        raise NotRecognized("its vertices do not lie on two parallel planes")
    normal, heights = planes
    low = heights <= heights.min() + tolerance
    if low.all():
        raise NotRecognized("it is flat")
    first, second = plane_basis(normal)
    circles = []
    for group in (low, ~low):
        ring = points[group]
        # Triangle-fan caps add a vertex at the circle's centre, which is the mean of a
        # regular ring: leave it out of the circle.
        ring = ring[np.linalg.norm(ring - ring.mean(axis=0), axis=1) > tolerance]
        if len(ring) < 3:
            raise NotRecognized("one of its two parallel planes holds no circle (like a cone)")
        if len(ring) < MIN_CYLINDER_SEGMENTS:
            raise NotRecognized(
                f"it has only {len(ring)} vertices per circle (a box or prism; a cylinder needs "
                f"at least {MIN_CYLINDER_SEGMENTS})"
            )
        flat = np.column_stack([ring @ first, ring @ second])
        centre2d, radius = fit_sphere(flat)
        if np.abs(np.linalg.norm(flat - centre2d, axis=1) - radius).max() > tolerance:
            raise NotRecognized("its vertices on each cap plane do not lie on a circle")
        level = float((ring @ normal).mean())
        circles.append((centre2d[0] * first + centre2d[1] * second + level * normal, radius))
    (p0, r0), (p1, r1) = circles
    if abs(r0 - r1) > tolerance:
        raise NotRecognized(f"its two circles differ in radius ({r0:.4g} and {r1:.4g})")
    axis = p1 - p0
    if np.linalg.norm(axis - (axis @ normal) * normal) > tolerance:
        raise NotRecognized("its two circles are not on one axis (sheared)")
    capped = faces.is_closed()
    if not capped and not open_at_both_rims(faces, low):
        raise NotRecognized(
            "its surface is open, but not just at both ends (a cap or a side face is missing)"
        )
    radius = float(snapped(0.5 * (r0 + r1), size, noise))
    p0, p1 = snapped(p0, size, noise), snapped(p1, size, noise)
    return Cylinder(p0, p1, radius, capped=capped), (
        radius,
        float(np.linalg.norm(p1 - p0)),
        capped,
    )


def _as_sphere(points: np.ndarray, faces: Faces, planes):
    size, noise = shape_size(points), float32_noise(points)
    tolerance = recognition_tolerance(points)
    if len(points) < 5:
        raise NotRecognized(f"it has only {len(points)} vertices")
    centre, radius = fit_sphere(points)
    deviation = np.abs(np.linalg.norm(points - centre, axis=1) - radius).max()
    if not deviation <= tolerance:
        raise NotRecognized(
            f"its vertices are not equidistant from a centre (up to {deviation:.3g} off)"
        )
    if planes is not None:
        raise NotRecognized(
            "its vertices lie on two parallel planes (like a box, prism or cone), "
            "not spread over a sphere"
        )
    if not faces.is_closed():
        raise NotRecognized("its surface is open (not a solid sphere)")
    centre = snapped(centre, size, noise)
    radius = float(snapped(radius, size, noise))
    centre_error = np.abs(np.linalg.norm(points - centre, axis=1) - radius).max()
    if centre_error > tolerance:
        raise NotRecognized("its snapped centre does not fit its vertices")
    return Sphere(centre, radius), radius


# ---------------------------------------------------------------------------- any of them


def check_finite(points: np.ndarray, name: str = "The mesh"):
    """NotRecognized naming ``name`` and its first vertex that is not finite (inf or nan,
    e.g. from a shape key, a Displace modifier or a script): checked before any fit, whose
    linear algebra would fail on it with a message of its own."""
    finite = np.isfinite(points)
    if not finite.all():  # (flat: a reduction along the length-3 axis is far slower)
        index = int(np.argmin(finite.all(axis=1)))
        x, y, z = (float(value) for value in points[index])
        raise NotRecognized(
            f"{name} has a vertex that is not finite: vertex {index} at ({x:g}, {y:g}, {z:g})"
        )


def recognize_mesh(points, faces, name: str = "The mesh"):
    """(kind, local shape, size) of the mesh with vertices ``points`` and ``faces``, kind
    'TERRAIN', 'CYLINDER' or 'SPHERE' tried in that order; size is (nx, ny) for a terrain,
    (radius, height, capped) for a cylinder, the radius for a sphere. NotRecognized naming
    ``name`` with every reason when it is none of them."""
    points = np.asarray(points, dtype=np.float64)
    faces = as_faces(faces)
    reasons = []
    try:
        shape, size = recognize_terrain(points, faces)
        return "TERRAIN", shape, size
    except NotRecognized as reason:
        reasons.append(f"not a terrain: {reason}")
    planes = _planes(points)
    try:
        shape, size = _as_cylinder(points, faces, planes)
        return "CYLINDER", shape, size
    except NotRecognized as reason:
        reasons.append(f"not a cylinder: {reason}")
    try:
        shape, size = _as_sphere(points, faces, planes)
        return "SPHERE", shape, size
    except NotRecognized as reason:
        reasons.append(f"not a sphere: {reason}")
    raise NotRecognized(f"{name} is not a supported shape: " + "; ".join(reversed(reasons)))


def description(kind: str, size, scale) -> str:
    """A recognised shape in a few words, e.g. "Sphere r=1.000"; ``scale`` as from
    fit.scale_description (None: non-uniform)."""
    if kind == "TERRAIN":
        return f"Terrain {size[0]}x{size[1]}"
    if kind == "CYLINDER":
        radius, height, capped = size
        noun = "Cylinder" if capped else "Open tube"
        if scale is None:
            return f"{noun} r={radius:.3f} h={height:.3f} (non-uniform scale)"
        return f"{noun} r={radius * scale:.3f} h={height * scale:.3f}"
    if scale is None:
        return f"Ellipsoid (sphere r={size:.3f}, non-uniform scale)"
    return f"Sphere r={size * scale:.3f}"
