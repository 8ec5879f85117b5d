"""The nearest hit of each ray over several targets, and the first contact of a sphere cast
over several targets: core.targets on the targets' shapes (``mapping.Recognized``), with a
refused target named after its object."""

from __future__ import annotations

from ..core.targets import NearestCasts, NearestHits, TargetError, first_contacts, nearest_hits
from .feedback import kernel_waits_shown

__all__ = ["NearestCasts", "NearestHits", "nearest_cast_contacts", "nearest_ray_hits"]


def nearest_ray_hits(targets, origins, directions, max_distance) -> NearestHits:
    """Cast every ray at every target; each ray keeps its nearest hit (first target on ties)."""
    try:
        with kernel_waits_shown():
            return nearest_hits(
                [target.shape for target in targets], origins, directions, max_distance
            )
    except TargetError as error:
        raise ValueError(f"{targets[error.index].name}: {error.reason}") from None


def nearest_cast_contacts(targets, starts, ends, radius) -> NearestCasts:
    """Cast a sphere of ``radius`` from each start to its end against every target; each
    cast keeps its first contact (first target on ties)."""
    try:
        with kernel_waits_shown():
            return first_contacts([target.shape for target in targets], starts, ends, radius)
    except TargetError as error:  # core's reason, named after the operator and object
        reason = error.reason.replace("sphere_cast", "Sphere Cast")
        raise ValueError(f"{targets[error.index].name}: {reason}") from None
