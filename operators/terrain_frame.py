"""A placed terrain as a Heightfield in a frame whose XY distances and Z heights are the
world's, for the GIS options (horizontal max distance, earth curvature, world-up heights).

A terrain object's matrix ``M`` maps its local grid to the world. When its 3x3 part is a
rotation about Z times positive per-axis scales ``(sx, sy, sz)`` (no tilt, no mirror), the
frame ``q = (R^T (p_xy - t_xy), p_z - t_z)`` (``R`` the rotation, ``t`` the translation) is
the world moved and turned about Z: horizontal distances and heights are the world's, and
the terrain in it is ``Heightfield(sz h, spacing (sx dx, sy dy), origin (sx x0, sy y0))``.
With an identity matrix every number is the local terrain's bit for bit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import core

# Off-axis terms allowed relative to the scales: Blender's matrices are float32 products.
TILT_TOLERANCE = 1e-6


@dataclass
class TerrainFrame:
    terrain: core.Heightfield  # in the frame
    rotation: np.ndarray  # (2, 2) R
    translation: np.ndarray  # (3,) t

    def to_frame(self, points: np.ndarray) -> np.ndarray:
        """World points (N, 3) -> frame points."""
        points = np.asarray(points, dtype=np.float64)
        out = np.empty(points.shape)
        out[:, :2] = (points[:, :2] - self.translation[:2]) @ self.rotation
        out[:, 2] = points[:, 2] - self.translation[2]
        return out

    def matrix(self) -> np.ndarray:
        """(4, 4) frame -> world."""
        matrix = np.eye(4)
        matrix[:2, :2] = self.rotation
        matrix[:3, 3] = self.translation
        return matrix


def terrain_frame(recognized) -> TerrainFrame:
    """The frame of a recognised terrain (mapping.Recognized, kind TERRAIN); ValueError
    naming it when its matrix tilts or mirrors it."""
    field = recognized.shape.shape
    matrix = np.asarray(recognized.shape.matrix, dtype=np.float64)
    linear = matrix[:3, :3]
    sx, sy = np.linalg.norm(linear[:2, 0]), np.linalg.norm(linear[:2, 1])
    sz = linear[2, 2]
    scale = max(sx, sy, abs(sz))
    if not (sx > 0 and sy > 0):
        raise ValueError(f"{recognized.name}: its transform has zero scale")
    rotation = linear[:2, :2] / np.array([sx, sy])
    tilted = (
        sz <= 0
        or np.abs(linear[2, :2]).max() > TILT_TOLERANCE * scale
        or np.abs(linear[:2, 2]).max() > TILT_TOLERANCE * scale
        or abs(rotation[:, 0] @ rotation[:, 1]) > TILT_TOLERANCE
        or np.linalg.det(rotation) <= 0
    )
    if tilted:
        raise ValueError(
            f"{recognized.name}: its transform tilts or mirrors it (its local Z is not world "
            "up), so distances along the ground and heights are not the world's: apply its "
            "rotation and scale, or turn it about Z only"
        )
    terrain = core.Heightfield(
        field.heights * sz if sz != 1.0 else field.heights,
        spacing=(field.spacing[0] * sx, field.spacing[1] * sy),
        origin=(field.origin[0] * sx, field.origin[1] * sy),
        surface=field.surface,
        diagonals=field.diagonals,
        solid=field.solid,
    )
    return TerrainFrame(terrain, rotation, matrix[:3, 3].copy())


def vertex_cells(evaluated_object, recognized) -> tuple[np.ndarray, np.ndarray]:
    """Each mesh vertex's grid row and column (j, i), in the mesh's vertex order."""
    from .mapping import mesh_positions

    field = recognized.shape.shape
    local = mesh_positions(evaluated_object.data).astype(np.float64)
    i = np.rint((local[:, 0] - field.origin[0]) / field.spacing[0]).astype(np.int64)
    j = np.rint((local[:, 1] - field.origin[1]) / field.spacing[1]).astype(np.int64)
    return j, i


def scene_earth_radius(scene) -> float:
    """The earth's radius in scene units (a unit is ``scale_length`` metres)."""
    return core.visibility.EARTH_RADIUS / scene.unit_settings.scale_length
