"""Line of sight: does a shape block the segment from each start to its end (any-hit)?

Math. With ``L = |end - start|``, ``u = (end - start) / L`` and the tolerance ``e = 1e-9 L``
(``ON_SEGMENT_END``), the segment is blocked when the shape meets the ray
``start + t u`` for some ``t`` in ``[e, L - e]``: the ray query from ``start + e u`` with
``max_distance = L - 2 e`` answers it. Trimming both ends by ``e`` is what makes a point
lying on the surface (a target on a terrain vertex, an observer standing on the ground)
not hidden by that surface, while a start inside a solid is still blocked (the trimmed
segment starts inside too: a hit at distance 0). A touch (tangent, grazing a ridge)
counts as blocking, as it counts as a hit for :func:`raycast`. A zero-length segment is
blocked only when its point is inside (or on) a solid.

Any-hit: a shape's ray query stops at its first blocker (the terrain walk visits cells in
order and ends a segment at the first cell that meets it); nothing is sorted or collected.
On the numba backend a shape with an ``occluded`` kernel (core/backend.py) answers
instead, on the whole batch, without computing where the blocker is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .backend import kernel
from .rays import (
    _in_3d,
    _placement,
    _raise_first_bad_segment,
    as_rows,
    check_same_length,
    chunks,
    component_kernel,
    require_finite,
)
from .vectors import components

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .rays import Shape

# The fraction of a segment's length trimmed at each end (see the module docstring).
ON_SEGMENT_END = 1e-9


def occluded(shape: Shape, starts: ArrayLike, ends: ArrayLike) -> np.ndarray:
    """(N,) bool: True where ``shape`` meets the segment from ``starts`` to ``ends``
    before its end (a bool for a single segment).

    starts, ends: (N, D) or (D,). A point within ``1e-9`` of the segment's length of a
    surface, at either end, is not hidden by that surface (a target lying on a terrain is
    visible); a start inside a solid is occluded; a touch blocks.
    """
    dimension = shape.dimension
    raw_starts, raw_ends = starts, ends
    starts, single = as_rows("starts", starts, dimension, check_finite=False)
    ends, single_end = as_rows("ends", ends, dimension, check_finite=False)
    check_same_length("starts", starts, "ends", ends)
    n = len(starts)
    blocked = np.empty(n, dtype=bool)
    compiled = kernel(shape, "occluded", n)
    if compiled is None:  # a compiled kernel checks finiteness itself
        require_finite("starts", starts)
        require_finite("ends", ends)
    if compiled is not None:
        bad = compiled(
            shape._kernel_arguments(),
            _placement(shape),
            _in_3d(starts),
            _in_3d(ends),
            np.array([ON_SEGMENT_END]),  # (1,) float64, as a scalar max_distance
            (blocked,),
        )
        if bad:
            _raise_first_bad_segment(raw_starts, raw_ends, dimension)
    else:
        query = component_kernel(shape)
        solid = getattr(shape, "solid", True)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            for part in chunks(n, getattr(shape, "chunk_size", None)):
                blocked[part] = _occluded_part(query, solid, starts[part], ends[part])
    return blocked[0] if single and single_end else blocked


def segment_rays(starts, ends):
    """Unit directions and lengths of the segments, the length scaled by the largest
    component first (no under- or overflow), written out per component so that the
    compiled kernels repeat it bit for bit; a zero-length segment gets direction +z (+y
    in 2D)."""
    vector = ends - starts
    scale = np.abs(vector).max(axis=1)
    scaled = vector / np.where(scale > 0, scale, 1.0)[:, None]
    columns = list(scaled.T)
    squared = columns[0] * columns[0]
    for column in columns[1:]:
        squared = squared + column * column
    scaled_length = np.sqrt(squared)
    unit = scaled / np.where(scaled_length > 0, scaled_length, 1.0)[:, None]
    length = scaled_length * scale
    zero = length == 0.0
    if zero.any():
        unit[zero] = 0.0
        unit[zero, -1] = 1.0
    return unit, length


def _occluded_part(query, solid, starts, ends):
    unit, length = segment_rays(starts, ends)
    trim = ON_SEGMENT_END * length
    origin = components(starts + trim[:, None] * unit)
    limit = length - 2.0 * trim
    distance = query(origin, components(unit), limit)[0]
    hit = (distance <= limit) & (distance < np.inf)
    zero = length == 0.0
    if zero.any():  # only a point inside (or on) a solid blocks
        hit &= ~zero | (solid & (distance == 0.0))
    return hit
