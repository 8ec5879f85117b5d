"""Validation: shape parameters (every shape's constructor) and the queries' rays and
per-row values. A bad value raises ValueError naming the argument and the first bad row."""

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


def first_bad_row(bad: np.ndarray) -> int:
    return int(np.flatnonzero(bad)[0])


def as_rows(
    name: str, value, dimension: int | None = None, check_finite: bool = True
) -> tuple[np.ndarray, bool]:
    """``value`` as a float64 (N, D) array; returns (array, was_single_row).

    Raises ValueError for wrong shapes, a dimension other than ``dimension``, and NaN/inf
    (naming the first bad row; a compiled kernel checks that itself: ``check_finite``)."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be an array of numbers: {error}") from None
    single = array.ndim == 1
    if single:
        array = array[np.newaxis, :]
    if array.ndim != 2:
        raise ValueError(f"{name} must have shape (N, D) or (D,), got shape {np.shape(value)}")
    if dimension is None and array.shape[1] not in (2, 3):
        raise ValueError(f"{name} must have 2 or 3 columns, got {array.shape[1]}")
    if dimension is not None and array.shape[1] != dimension:
        raise ValueError(f"{name} has {array.shape[1]} columns but the shape is {dimension}D")
    if check_finite:
        require_finite(name, array)
    return np.ascontiguousarray(array), single


def require_finite(name: str, array: np.ndarray) -> None:
    """ValueError naming the first row of ``array`` (N, D) holding NaN or inf."""
    # A sum is finite when every term is (one fast pass); only a non-finite sum (NaN/inf,
    # or a finite overflow) pays for the row-wise search.
    if not np.isfinite(np.add.reduce(array, axis=None)):
        for start in range(0, len(array), 1 << 20):
            finite = np.isfinite(array[start : start + (1 << 20)]).all(axis=1)
            if not finite.all():
                row = start + first_bad_row(~finite)
                raise ValueError(f"{name} row {row} is not finite: {array[row].tolist()}")


def as_per_row(name: str, value, n: int, allow_inf: bool = False) -> np.ndarray:
    """A scalar or (N,) array of non-negative numbers, broadcast to (N,) float64 (an (N,)
    array is returned as it is: the queries only read it)."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a number or an array of numbers: {error}") from None
    if array.ndim == 0:  # one value for all rows: checked as a float (numpy's ufuncs on a
        # 0-d array cost microseconds, which count on the compiled backend's small batches)
        number = float(array)
        if not (number >= 0.0 and (allow_inf or number < np.inf)):
            raise ValueError(f"{name} must be a non-negative number, got {number}")
        row = np.full(1, number)
        row.flags.writeable = False
        return np.ndarray((n,), np.float64, row, 0, (0,))  # broadcast_to, without its overhead
    if array.ndim > 1 or array.shape[0] != n:
        raise ValueError(f"{name} must be a scalar or have shape ({n},), got shape {array.shape}")
    bad = np.isnan(array) | (array < 0)
    if not allow_inf:
        bad |= np.isinf(array)
    if bad.any():
        first = first_bad_row(bad)
        raise ValueError(f"{name} row {first} must be a non-negative number, got {array[first]}")
    return array if array.ndim == 1 else np.broadcast_to(array, (n,))


def check_same_length(first_name, first, second_name, second):
    if len(first) != len(second):
        raise ValueError(f"{first_name} has {len(first)} rows but {second_name} has {len(second)}")
