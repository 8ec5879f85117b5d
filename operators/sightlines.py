"""Lines of sight from one observer to many points past several occluders (numpy + core;
the occluders are ``mapping.Recognized``).

A point is visible when no occluder meets the segment from the observer to it before its
end (``core.occluded``: an any-hit query, and a point lying on a surface is not hidden by
that surface, so terrain vertices can be seen). Each occluder is asked only about the
segments still visible, spheres and cylinders first: they are cheap and leave fewer
segments for the terrains' walks."""

from __future__ import annotations

import numpy as np

from .. import core
from .mapping import mesh_positions, world_matrix

QUERY_ORDER = {"SPHERE": 0, "CYLINDER": 1, "TERRAIN": 2}


def world_vertices(evaluated_object) -> np.ndarray:
    """(N, 3) float64 world positions of the evaluated object's vertices."""
    matrix = world_matrix(evaluated_object)
    positions = mesh_positions(evaluated_object.data).astype(np.float64)
    return positions @ matrix[:3, :3].T + matrix[:3, 3]


def visible_from(observer: np.ndarray, points: np.ndarray, occluders) -> np.ndarray:
    """(N,) bool: True where no occluder meets the segment from ``observer`` (3,) to the
    point (``points`` (N, 3)) before the point. A point at the observer itself sees itself
    (a segment of length 0 crosses nothing)."""
    visible = np.ones(len(points), dtype=bool)
    # A zero-length segment has no direction to walk along: nothing can hide it.
    asked = np.flatnonzero((points != observer).any(axis=1))
    for occluder in sorted(occluders, key=lambda target: QUERY_ORDER.get(target.kind, 3)):
        if not len(asked):
            break
        ends = points[asked]
        starts = np.empty_like(ends)
        starts[:] = observer
        try:
            hidden = core.occluded(occluder.shape, starts, ends)
        except ValueError as error:
            raise ValueError(f"{occluder.name}: {error}") from None
        visible[asked[hidden]] = False
        asked = asked[~hidden]
    return visible
