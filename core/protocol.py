"""The shape protocol: what queries.py, placed.py and backend.py call on a shape.

Sphere, Cylinder, Heightfield and Placed implement it explicitly (the first three with the
answers they share from Unplaced). Arrays of rays come as component lists (one contiguous
1D array per axis, see vectors.py) with unit directions; a distance is ``np.inf`` or NaN
where there is nothing (any normal there). The queries decide the hit convention
(max_distance, distance 0 on a solid, points, gates); a shape only says where its surface
is.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Protocol, runtime_checkable

import numpy as np

# The queries a shape may support (``Shape.supports``).
QUERIES = frozenset(("raycast", "occluded", "sphere_cast", "raycast_all"))

Components = list[np.ndarray]
# The queries the sphere's and the cylinder's compiled kernels answer (raycast_all: numpy).
RAY_AND_CAST_KERNELS = frozenset(("raycast", "occluded", "sphere_cast"))


@runtime_checkable
class Shape(Protocol):
    """A shape the queries run on (module docstring)."""

    # Read-only properties here, so a plain class attribute implements each.
    @property
    def dimension(self) -> int:
        """2 or 3."""
        ...

    @property
    def solid(self) -> bool:
        """False: a surface (no inside: hit from either side, normal facing the ray)."""
        ...

    @property
    def supports(self) -> frozenset[str]:
        """The QUERIES it answers (check() may still refuse a model or placement)."""
        ...

    @property
    def placed(self) -> bool:
        """A Placed wrapper: its compiled kernels take a placement."""
        ...

    @property
    def chunk_size(self) -> int | None:
        """Rays per numpy call of intersect (None: the queries' default)."""
        ...

    @property
    def all_hits_chunk(self) -> int | None:
        """Rays per call of crossings (None: the queries' default)."""
        ...

    @property
    def first_record_from_raycast(self) -> bool:
        """raycast_all's first record of a ray is raycast's hit itself."""
        ...

    @property
    def kernel_family(self) -> str | None:
        """backend.py's KERNEL_MODULES family; None: numpy only."""
        ...

    @property
    def compiled_queries(self) -> frozenset[str]:
        """The QUERIES its family's compiled kernels answer for this shape's model; numpy
        answers the others."""
        ...

    @property
    def kernel_cells(self) -> bool:
        """The ray kernel also writes each hit's (i, j) cell."""
        ...

    @property
    def kernel_variant(self) -> Hashable:
        """The shape's model: a compiled kernel per model (backend.py's kind())."""
        ...

    def check(self, query: str) -> None:
        """ValueError saying why this shape (its model or placement) cannot answer
        ``query``; nothing where it can."""

    def numpy_seconds(self, query: str, n: int) -> float:
        """The numpy reference's expected time for ``n`` rays (backend.py's latency rule)."""
        ...

    def kernel_arguments(self, query: str) -> tuple[Any, ...]:
        """The shape's parameters as its compiled kernel of ``query`` takes them first."""
        ...

    def kernel_placement(self) -> tuple[Any, ...] | None:
        """The compiled kernels' placement (kernel_common.placement), None when not placed."""
        ...

    def intersect(
        self, origin: Components, direction: Components, max_distance: np.ndarray
    ) -> tuple[Any, ...]:
        """raycast's (distance, normal components[, cell (n, 2) int])."""
        ...

    def crossings(
        self,
        origin: Components,
        direction: Components,
        max_distance: np.ndarray,
        kernel: Callable[..., Any] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, Components]:
        """raycast_all's records: ray rows, distances, normal components (in order per ray;
        entries and exits of a solid, every crossing or touch of a surface). ``kernel``:
        the compiled records queries.py chose (backend.kernel; only where
        "raycast_all" is in compiled_queries), None for the numpy reference."""
        ...

    def cast_target(self) -> Shape:
        """What a sphere cast runs against: the shape itself, or a Placed shape with its
        placement folded in where it can be (after check("sphere_cast"))."""
        ...

    def fold(self, linear: np.ndarray, translation: np.ndarray) -> Shape | None:
        """This shape placed by ``x -> linear x + translation`` as a shape of its own kind
        (ValueError saying why not), or None where the shape does not fold placements."""
        ...

    def sweep(
        self, start: Components, direction: Components, radius: np.ndarray, length: np.ndarray
    ) -> tuple[np.ndarray, Components, Components]:
        """A sphere cast: the centre's travel to the first contact (inf or NaN where none; a
        contact beyond ``length`` may be reported, the query gates it), the contact point
        on the shape and the shape's normal there. ``direction`` unit, or zero for a
        zero-length cast."""
        ...


class Unplaced:
    """What the shapes in their own space (Sphere, Cylinder, Heightfield) answer alike,
    unless a shape says otherwise: every query, not placed, the queries' default chunks,
    raycast_all's records their own, no cells in the kernels' results."""

    supports: frozenset[str] = QUERIES
    placed = False
    chunk_size: int | None = None  # the queries' default chunk
    all_hits_chunk: int | None = None
    first_record_from_raycast = False
    kernel_cells = False

    def check(self, query: str) -> None:
        """Every query is supported as it is."""

    def kernel_placement(self) -> None:
        return None

    def cast_target(self):
        return self
