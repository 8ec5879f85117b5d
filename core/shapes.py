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
