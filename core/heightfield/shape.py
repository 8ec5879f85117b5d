"""The Heightfield shape: its parameters and the two terrain models; the queries' math is
in ray.py (with walk.py, surfaces.py, grid.py), cast.py (with cast_walk.py, cast_cells.py)
and crossings.py (numpy) beside ray_kernel.py (its pieces in ray_walk.py, ray_cells.py and
ray_order.py, its arguments in ray_arguments.py), cast_kernel.py (with its _kernel modules)
and crossings_kernel.py (compiled).

Two models. ``solid=True``: the solid is everything at or below the surface inside the
footprint ``[0, nx-1] x [0, ny-1]``, down to -inf; a ray's hit is its first point in it (an
origin inside hits at 0; a ray entering through the side below the edge hits a wall).
``solid=False``: only the surface as drawn, hit from either side, no walls, nothing inside;
the normal faces the ray. A ray below the surface is a ray above the mirrored terrain
(z -> -z, heights -> -heights): the same walk serves both sides, each side with its own
hierarchy (the mirror's max is minus the min). Which side a ray starts on is fixed once,
where it enters the footprint's height range: through its top (above), its bottom
(below), or elsewhere by the sign of z - h there; the walk keeps it, as a ray cannot
change sides without crossing the surface, which is a hit.

Footprint edges. A ray exactly parallel to a grid axis is inside the footprint's extent
on that axis when its (rounded) grid coordinate is within ``2^-50 (|x0| / dx + |x1| / dx +
nx)`` of ``[0, nx-1]`` (x1 the last grid line): a vertical ray aimed at the last grid line
``x0 + (nx-1) dx``, computed in float64, may land a few ulps outside.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

from ..backend import kernels
from ..protocol import Unplaced
from ..validate import as_choice, as_pair
from . import crossings, ray
from .cast import sphere_cast_terrain
from .grid import BLOCK, Terrain, _block_reduce, as_diagonals, as_heights, tolerances
from .ray_arguments import arguments as ray_arguments
from .surfaces import surface_at, test_bilinear, test_triangles

SURFACES = ("TRIANGLES", "BILINEAR")


def distinct_nbytes(arrays) -> int:
    """Bytes of the buffers behind ``arrays``, each counted once (views share their base's)."""
    owners = {}
    for array in arrays:
        owner = array
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        owners[id(owner)] = owner.nbytes
    return sum(owners.values())


class Heightfield(Unplaced):
    """A terrain over a displaced regular grid (see the module docstring): the solid
    column under the surface, or with ``solid=False`` the surface alone.

    heights: (ny, nx), both >= 2; heights[j, i] is z at (x0 + i dx, y0 + j dy).
    spacing: (dx, dy) > 0 (a scalar for both); origin: (x0, y0).
    surface: "TRIANGLES" (two planar triangles per cell, as Blender draws the mesh) or
    "BILINEAR" (the bilinear patch through the cell's corners).
    diagonals: optional bool (ny-1, nx-1) for TRIANGLES: False splits a cell along
    (i, j)-(i+1, j+1), True along (i+1, j)-(i, j+1) (default: all False).
    solid: True (the solid column under the surface in the footprint, down to -inf) or
    False (the surface as drawn: hit from either side, no walls, normal facing the ray).
    Hits report the cell (i, j) they lie in (RayHits.cell).
    """

    dimension = 3
    kernel_family = "heightfield"  # backend.py's KERNEL_MODULES
    kernel_cells = True  # its results carry the cell of each hit
    # raycast_all's first record is raycast's hit itself (queries.py): on a tie (a vertex,
    # an edge, a split line, a graze within the tolerance) the walk's choice depends on
    # where its hierarchy skips start a cell's stretch, which the crossings' breakpoints
    # cannot reproduce bit for bit.
    first_record_from_raycast = True
    all_hits_chunk = 4096  # rays per raycast_all call (crossings.py groups them further)
    # Rays per kernel call: the walk loops over steps (with all active rays vectorized), so
    # larger chunks amortize the per-call numpy overhead and the last few steps of few rays.
    chunk_size = 1 << 17

    def __init__(
        self,
        heights: ArrayLike,
        spacing: ArrayLike = (1.0, 1.0),
        origin: ArrayLike = (0.0, 0.0),
        surface: str = "TRIANGLES",
        diagonals: ArrayLike | None = None,
        solid: bool = True,
    ) -> None:
        self.heights = as_heights(heights)
        self.spacing = as_pair("spacing", spacing, positive=True)
        self.origin = as_pair("origin", origin, positive=False)
        self.surface = as_choice("surface", surface, SURFACES)
        ny, nx = self.heights.shape
        self.diagonals = as_diagonals(diagonals, (ny - 1, nx - 1))
        if not isinstance(solid, (bool, np.bool_)):
            raise ValueError(f"solid must be True or False, got {solid!r}")
        self.solid = bool(solid)
        # raycast_all's records are compiled for triangles (crossings_kernel.py)
        triangles = self.surface == "TRIANGLES"
        self.compiled_queries = self.supports if triangles else self.supports - {"raycast_all"}
        self.zmin = float(self.heights.min())
        self.zmax = float(self.heights.max())
        self._anti = (
            None
            if self.diagonals is None or not self.diagonals.any()
            else self.diagonals.ravel().astype(np.float64)
        )
        # Each cell's own touching tolerance (grid.py), shared by both sides.
        self._above = Terrain(self.heights, tolerances(self.heights, self.spacing), self._anti)
        self._below = None  # the mirror image, for rays below a surface (built on first use)
        self._kernel_data = None  # the compiled kernel's arguments (built on first use)
        self._kernel_cast_data = None  # the compiled sphere cast's (built on first use)
        self._cast_arrays: dict | None = None  # the sphere cast's cell and block extremes
        self._last_fold: tuple | None = None  # (placement's bytes, _fold's answer for it)
        self._test = test_bilinear if self.surface == "BILINEAR" else test_triangles
        # A ray exactly parallel to a grid axis may sit a few ulps outside the footprint
        # when aimed at its first or last grid line (module docstring).
        self._edge_slack = tuple(
            2.0**-50 * ((abs(x0) + abs(x0 + (n - 1) * d)) / d + n)
            for x0, d, n in zip(self.origin, self.spacing, (nx, ny))
        )

    @property
    def kernel_variant(self):
        return (self.surface, self.solid)  # a kernel per model (backend.py's kind())

    def numpy_seconds(self, query: str, n: int) -> float:
        """The numpy reference's time for ``n`` rays (backend.py's latency rule), from the
        benchmarks' timings: a cost per call plus a cost per ray for a ray or a line of sight
        (the walk's steps are vectorized over the rays), twice that on bilinear patches; a
        sphere cast's and raycast_all's records' grow with the cells a ray may cross."""
        side = max(self.heights.shape)
        if query == "sphere_cast":
            return 1e-3 + 2.5e-6 * side * n
        if query == "raycast_all":
            return 1e-3 + 4e-7 * side * n
        bilinear = self.surface == "BILINEAR"
        return (1.5e-2 + 4e-6 * n) * (2.0 if bilinear else 1.0)

    def kernel_arguments(self, query: str):
        """The compiled kernels' arguments, built on first use: the ray kernel's
        (ray_arguments.RayArguments); a sphere cast's (cast_kernel.cast_arguments) add the
        cast's extremes, views of arrays held already; raycast_all's
        (crossings.kernel_arguments) are views too, made on each call."""
        if query == "raycast_all":
            return crossings.kernel_arguments(self)
        if self._kernel_data is None:
            self._kernel_data = ray_arguments(self)
        if query != "sphere_cast":
            return self._kernel_data
        if self._kernel_cast_data is None:
            self._kernel_cast_data = kernels("heightfield.cast_kernel").cast_arguments(self)
        return self._kernel_cast_data

    def check(self, query: str) -> None:
        """ValueError where this terrain cannot answer ``query``."""
        if query == "sphere_cast" and self.surface != "TRIANGLES":
            raise ValueError(
                "sphere casts support TRIANGLES terrains: the offset of a bilinear patch has "
                "no closed form (use surface='TRIANGLES')"
            )

    def intersect(self, origin, direction, max_distance):
        return ray.intersect(self, origin, direction, max_distance)

    def crossings(self, origin, direction, max_distance, kernel=None):
        return crossings.records(self, origin, direction, max_distance, kernel)

    def sweep(self, start, direction, radius, length):
        return sphere_cast_terrain(self, start, direction, radius, length)

    def __repr__(self):
        ny, nx = self.heights.shape
        return (
            f"Heightfield({ny}x{nx} heights, spacing={self.spacing}, origin={self.origin}, "
            f"surface={self.surface!r}, solid={self.solid})"
        )

    # -- hierarchy -------------------------------------------------------------------------

    @property
    def hierarchy(self):
        """The max hierarchy of the terrain seen from above (see grid.Terrain.hierarchy)."""
        return self._above.hierarchy

    def held_arrays(self) -> list:
        """Every numpy array this terrain holds now: heights, diagonals and their float
        copy, and the terrain seen from above and (once a surface was queried) from below,
        each with its tolerances and its max hierarchy once built, and the compiled kernel's
        arguments once a query ran on the numba backend (for a surface they join both
        terrains' arrays into copies). Some are views of others or shared: count memory by
        distinct bases (what keeping it around costs)."""
        arrays = [self.heights, self.diagonals, self._anti]
        arrays += self._above.held_arrays()
        if self._below is not None:
            arrays += self._below.held_arrays()
        if self._kernel_data is not None:
            arrays += [value for value in self._kernel_data if isinstance(value, np.ndarray)]
        if self._cast_arrays is not None:
            arrays += list(self._cast_arrays.values())
        if self._last_fold is not None:
            folded = self._last_fold[1]
            arrays += getattr(folded, "shape", folded).held_arrays()
        return [array for array in arrays if isinstance(array, np.ndarray)]

    def __sizeof__(self) -> int:
        """Bytes held, its arrays' included (what sys.getsizeof and dask's memory accounting
        read)."""
        return object.__sizeof__(self) + distinct_nbytes(self.held_arrays())

    @property
    def _mirror(self):
        """The terrain seen from below: heights negated, with their own max hierarchy."""
        if self._below is None:
            self._below = self._above.mirrored()
        return self._below

    def height_at(self, x: ArrayLike, y: ArrayLike) -> np.ndarray:
        """Surface height at world (x, y) (arrays broadcast), NaN outside the footprint."""
        ny, nx = self.heights.shape
        U = (np.asarray(x, dtype=np.float64) - self.origin[0]) / self.spacing[0]
        V = (np.asarray(y, dtype=np.float64) - self.origin[1]) / self.spacing[1]
        U, V = np.broadcast_arrays(U, V)
        height = surface_at(self._above, self.surface, U.ravel(), V.ravel())[0].reshape(U.shape)
        return np.where((U >= 0) & (U <= nx - 1) & (V >= 0) & (V <= ny - 1), height, np.nan)

    def _normal(self, grad_u, grad_v):
        nx_, ny_ = -grad_u / self.spacing[0], -grad_v / self.spacing[1]
        length = np.sqrt(nx_ * nx_ + ny_ * ny_ + 1.0)
        return [nx_ / length, ny_ / length, 1.0 / length]

    # -- sphere casts (cast.py) -------------------------------------------------------------

    def _cast_data(self):
        """Per cell (flat, row-major over the (ny-1, nx-1) cells) and per block of BLOCK x
        BLOCK cells (as the walk's block max) the largest corner height plus the cell's
        tolerance and the least minus it; for the solid the least is -inf on the
        footprint's border, where the walls reach down."""
        if self._cast_arrays is None:
            h = self.heights
            tol = self._above.tol.reshape(h.shape)[:-1, :-1]
            corner_min = np.minimum(
                np.minimum(h[:-1, :-1], h[:-1, 1:]), np.minimum(h[1:, :-1], h[1:, 1:])
            )
            cell_min = corner_min - tol
            block_min = _block_reduce(cell_min, BLOCK, np.minimum)
            if self.solid:
                for extremes in (cell_min, block_min):
                    extremes[0] = extremes[-1] = extremes[:, 0] = extremes[:, -1] = -np.inf
            self._cast_arrays = {
                "cell_max": self._above._cell_tops().ravel(),
                "block_max": self.hierarchy[0],
                "cell_min": cell_min.ravel(),
                "block_min": block_min.ravel(),
            }
        return self._cast_arrays

    def fold(self, linear, translation):
        """This terrain placed by ``x -> linear x + translation`` as a terrain of its own kind
        (a per-axis scale of its local axes folded into spacing, origin and heights; a
        mirror folded into a flip of the grid's x axis, so the solid stays below) under
        the remaining rigid placement: a Placed of it, or itself moved when that placement
        is a translation. ValueError when the placement shears the terrain.

        The answer for the last placement is kept (it is a copy of the terrain with every
        array its casts build, rebuilt for each new Placed otherwise): the same placement,
        bit for bit, returns the same object; an identity placement returns this terrain."""
        linear = np.asarray(linear, dtype=np.float64)
        translation = np.asarray(translation, dtype=np.float64)
        key = linear.tobytes() + translation.tobytes()
        if self._last_fold is None or self._last_fold[0] != key:
            self._last_fold = None  # the old copy goes before the new one is made
            if np.array_equal(linear, np.eye(3)) and not translation.any():
                return self  # nothing to fold, nothing to keep
            self._last_fold = (key, self._fold_anew(linear, translation))
        return self._last_fold[1]

    def _fold_anew(self, linear, translation):
        from ..placed import Placed

        scales = np.linalg.norm(linear, axis=0)
        axes = linear / scales
        gram = axes.T @ axes
        if np.abs(gram - np.eye(3)).max() > 1e-9:
            raise ValueError(
                "a sheared terrain is not a terrain: sphere casts need a placement that "
                "scales the terrain along its own x, y and z axes (times a rotation); this "
                "one scales it along other axes or shears it"
            )
        heights = self.heights * scales[2]
        (x0, y0), (dx, dy) = self.origin, self.spacing
        dx, dy, x0, y0 = dx * scales[0], dy * scales[1], x0 * scales[0], y0 * scales[1]
        diagonals = self.diagonals
        rotation = axes
        if np.linalg.det(axes) < 0.0:
            # x -> -x: columns reversed, the grid starting at minus its last line; a cell's
            # split mirrors (along u = v becomes along u + v = 1 and back).
            nx = heights.shape[1]
            heights = heights[:, ::-1]
            x0 = -(x0 + (nx - 1) * dx)
            ny = heights.shape[0]
            old = np.zeros((ny - 1, nx - 1), dtype=bool) if diagonals is None else diagonals
            diagonals = ~old[:, ::-1]
            rotation = axes @ np.diag([-1.0, 1.0, 1.0])
        folded = Heightfield(
            heights,
            spacing=(dx, dy),
            origin=(x0, y0),
            surface=self.surface,
            diagonals=diagonals,
            solid=self.solid,
        )
        if np.array_equal(rotation, np.eye(3)):
            return Heightfield(
                heights + translation[2],
                spacing=(dx, dy),
                origin=(x0 + translation[0], y0 + translation[1]),
                surface=self.surface,
                diagonals=diagonals,
                solid=self.solid,
            )
        matrix = np.eye(4)
        matrix[:3, :3] = rotation
        matrix[:3, 3] = translation
        placed = Placed(folded, matrix)
        placed._folded_shape = None  # rigid: cast in its local space, nothing more to fold
        return placed
