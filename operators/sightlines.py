"""Lines of sight from one observer to many points past several occluders
(``mapping.Recognized``): a terrain's vertices as core sees them, and core.targets'
visible_from on the occluders' shapes.

A point is visible when no occluder meets the segment from the observer to it before its
end (``core.occluded``: an any-hit query, and a point lying on a surface is not hidden by
that surface, so terrain vertices can be seen)."""

from __future__ import annotations

import numpy as np

from ..core import targets
from .feedback import kernel_waits_shown
from .mapping import mesh_positions


def terrain_vertices(evaluated_object, terrain) -> np.ndarray:
    """(N, 3) float64 world positions of a recognised terrain's vertices (``terrain``: its
    mapping.Recognized) as core sees them, in the mesh's vertex order.

    mapping.py fits one regular lattice to the float32 vertices, which sit up to a few
    float32 ulps off it; core's terrain has its vertices on the lattice points. A vertex
    taken as it is would lie that far (~1e-8) beside the surface core walks, on a slope
    below it, hidden by its own terrain. So each vertex moves onto its lattice point
    (x0 + i dx, y0 + j dy), keeping its height, and is placed by the terrain's matrix."""
    field, matrix = terrain.shape.shape, terrain.shape.matrix
    local = mesh_positions(evaluated_object.data).astype(np.float64)
    for axis in (0, 1):
        steps = np.rint((local[:, axis] - field.origin[axis]) / field.spacing[axis])
        local[:, axis] = field.origin[axis] + steps * field.spacing[axis]
    return local @ matrix[:3, :3].T + matrix[:3, 3]


def visible_from(observer: np.ndarray, points: np.ndarray, occluders) -> np.ndarray:
    """(N,) bool: True where no occluder (``mapping.Recognized``) meets the segment from
    ``observer`` (3,) to the point (``points`` (N, 3)) before the point
    (core.targets.visible_from); a refused occluder is named after its object."""
    occluders = list(occluders)
    try:
        with kernel_waits_shown():
            return targets.visible_from(
                observer, points, [occluder.shape for occluder in occluders]
            )
    except targets.TargetError as error:
        raise ValueError(f"{occluders[error.index].name}: {error.reason}") from None
