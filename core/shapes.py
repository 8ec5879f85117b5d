"""Validation of shape parameters, shared by every shape's constructor."""

from __future__ import annotations

import numpy as np


def as_point(name: str, value, dimensions=(2, 3)) -> np.ndarray:
    """A finite float64 vector of one of the allowed lengths."""
    try:
        point = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a vector of numbers: {error}") from None
    if point.ndim != 1 or point.shape[0] not in dimensions:
        allowed = " or ".join(str(d) for d in dimensions)
        raise ValueError(f"{name} must be a vector of length {allowed}, got shape {point.shape}")
    if not np.isfinite(point).all():
        raise ValueError(f"{name} must be finite, got {point.tolist()}")
    point.setflags(write=False)
    return point


def as_positive(name: str, value) -> float:
    """A finite number > 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not (np.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {number}")
    return number


def as_choice(name: str, value, allowed) -> str:
    """One of the ``allowed`` upper-case names (any case accepted)."""
    if not isinstance(value, str) or value.upper() not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value.upper()


def as_pair(name: str, value, positive: bool):
    """Two finite floats (a scalar is used for both); > 0 when ``positive``."""
    try:
        pair = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be two numbers: {error}") from None
    if pair.ndim == 0:
        pair = np.array([pair, pair])
    if pair.shape != (2,):
        raise ValueError(f"{name} must be two numbers (x, y), got shape {pair.shape}")
    if positive:
        return tuple(as_positive(f"{name}[{axis}]", number) for axis, number in enumerate(pair))
    if not np.isfinite(pair).all():
        raise ValueError(f"{name} must be finite, got {pair.tolist()}")
    return float(pair[0]), float(pair[1])
