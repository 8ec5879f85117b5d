"""Ray patterns: one ray, a fan of rays in a cone, or a grid of parallel rays (numpy only).

SINGLE  one ray from ``origin`` along ``direction``.
FAN     ``fan_count`` rays from ``origin`` filling a cone around ``direction`` whose full
        apex angle is ``fan_angle`` (radians). The rays are spread evenly by solid angle on
        a golden-angle spiral: the first runs along the axis, the last on the cone's rim.
GRID    ``grid_rows`` x ``grid_columns`` parallel rays along ``direction``, their origins
        spread evenly over a ``grid_width`` x ``grid_width`` square centred on ``origin``
        and perpendicular to the direction (one row or column sits on the centre line).

Errors name the operators' properties as the user sees them ("Origin", "Cone Angle").
"""

from __future__ import annotations

import numpy as np

from .messages import format_count

PATTERNS = ("SINGLE", "FAN", "GRID")
GOLDEN_ANGLE = np.pi * (3.0 - np.sqrt(5.0))
# The Cone Angle slider's maximum, pi, as a float property stores it: float32(pi) > pi.
STORED_PI = float(np.float32(np.pi))
# The largest patterns: a fan of a million rays, a grid of 2048 x 2048 (~4 million rays).
FAN_MAX_RAYS = 1_000_000
GRID_MAX_SIDE = 2048


def as_text(vector) -> str:
    """``vector`` as the user would write it: (nan, 0, 1.5)."""
    return "(" + ", ".join(f"{float(value):g}" for value in vector) + ")"


def finite_vector(label: str, vector) -> np.ndarray:
    """``vector`` (a property's value) as float64; ValueError naming the property (its
    ``label``, e.g. "Start") when a component is inf or nan."""
    vector = np.asarray(vector, dtype=np.float64)
    if not np.isfinite(vector).all():
        raise ValueError(f"{label} is not finite {as_text(vector)}")
    return vector


def finite_number(label: str, value) -> float:
    """``value`` (a property's value); ValueError naming the property when inf or nan."""
    if not np.isfinite(value):
        raise ValueError(f"{label} is not finite ({float(value):g})")
    return float(value)


def more_than_zero(label: str, value) -> float:
    """``value`` (a property's value); ValueError naming the property unless it is a number
    above 0 (inf passes)."""
    if np.isnan(value):
        raise ValueError(f"{label} is not a number (nan)")
    if not value > 0.0:
        raise ValueError(f"{label} must be more than 0, got {float(value):g}")
    return float(value)


def unit_direction(direction) -> np.ndarray:
    direction = finite_vector("Direction", direction)
    length = np.linalg.norm(direction)
    if not length > 0.0:
        raise ValueError(f"Direction must not be zero, got {as_text(direction)}")
    return direction / length


def perpendicular_basis(unit: np.ndarray):
    """Two unit vectors (u, v) with (u, v, unit) a right-handed orthonormal basis; u is
    horizontal unless the direction is vertical."""
    helper = np.array([0.0, 0.0, 1.0]) if abs(unit[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    u = np.cross(helper, unit)
    u /= np.linalg.norm(u)
    return u, np.cross(unit, u)


def fan_directions(unit: np.ndarray, count: int, angle: float) -> np.ndarray:
    """(count, 3) unit directions filling the cone of full apex ``angle`` around ``unit``."""
    if count < 1:
        raise ValueError(f"Rays must be at least 1, got {format_count(count)}")
    if count > FAN_MAX_RAYS:
        raise ValueError(
            f"Rays must be at most {format_count(FAN_MAX_RAYS)}, got {format_count(count)}"
        )
    if not 0.0 <= angle <= STORED_PI:
        raise ValueError(f"Cone Angle must be between 0 and 180 degrees, got {np.degrees(angle):g}")
    angle = min(angle, np.pi)
    k = np.arange(count, dtype=np.float64)
    fraction = k / (count - 1) if count > 1 else k
    cos_polar = 1.0 - (1.0 - np.cos(0.5 * angle)) * fraction
    sin_polar = np.sqrt(np.maximum(0.0, 1.0 - cos_polar * cos_polar))
    azimuth = k * GOLDEN_ANGLE
    u, v = perpendicular_basis(unit)
    return (
        np.outer(sin_polar * np.cos(azimuth), u)
        + np.outer(sin_polar * np.sin(azimuth), v)
        + np.outer(cos_polar, unit)
    )


def grid_origins(
    origin: np.ndarray, unit: np.ndarray, rows: int, columns: int, width: float
) -> np.ndarray:
    """(rows * columns, 3) origins over a width x width square around ``origin``, row-major."""
    size = f"{format_count(rows)} x {format_count(columns)}"
    if rows < 1 or columns < 1:
        raise ValueError(f"Rows and Columns must be at least 1, got {size}")
    if rows > GRID_MAX_SIDE or columns > GRID_MAX_SIDE:
        raise ValueError(
            f"Rows and Columns must be at most {format_count(GRID_MAX_SIDE)}, got {size}"
        )
    if not (np.isfinite(width) and width >= 0.0):
        raise ValueError(f"Width must be a number of at least 0, got {width:g}")
    u, v = perpendicular_basis(unit)
    across = np.linspace(-0.5 * width, 0.5 * width, columns) if columns > 1 else np.zeros(1)
    down = np.linspace(-0.5 * width, 0.5 * width, rows) if rows > 1 else np.zeros(1)
    row_offset, column_offset = np.meshgrid(down, across, indexing="ij")
    return origin + np.outer(column_offset.ravel(), u) + np.outer(row_offset.ravel(), v)


def ray_pattern(
    pattern: str,
    origin,
    direction,
    *,
    fan_count=1,
    fan_angle=0.0,
    grid_rows=1,
    grid_columns=1,
    grid_width=0.0,
):
    """(origins, directions), each (N, 3) float64 with unit directions, for ``pattern``."""
    origin = finite_vector("Origin", origin)
    unit = unit_direction(direction)
    if pattern == "SINGLE":
        return origin[np.newaxis, :].copy(), unit[np.newaxis, :].copy()
    if pattern == "FAN":
        directions = fan_directions(unit, fan_count, fan_angle)
        return np.broadcast_to(origin, directions.shape).copy(), directions
    if pattern == "GRID":
        origins = grid_origins(origin, unit, grid_rows, grid_columns, grid_width)
        return origins, np.broadcast_to(unit, origins.shape).copy()
    raise ValueError(f"Pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}")
