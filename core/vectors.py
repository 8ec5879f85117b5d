"""Vectors as lists of per-axis 1D arrays (structure of arrays).

numpy is several times faster on contiguous 1D arrays than on the rows of an (N, 3) array
(a row-wise einsum against a 1D multiply-add), so the kernels of the analytic shapes split
rays into components once and work on those.
"""

import numpy as np


def components(rows: np.ndarray):
    """The columns of an (N, D) array as a list of D contiguous 1D arrays."""
    return [np.ascontiguousarray(column) for column in rows.T]


def dot(a, b):
    """Row-wise dot product of two component lists (either may hold scalars)."""
    total = a[0] * b[0]
    for x, y in zip(a[1:], b[1:]):
        total += x * y
    return total


def linear_combination(weights, parts):
    """``sum_j weights[j] * parts[j]`` for constant weights and component arrays. Zero
    weights are skipped and +-1 costs no multiply, so a coordinate axis just picks a
    component and an axis-aligned frame or matrix costs only what it really mixes. (The
    result may be one of ``parts`` itself: callers do not write into it.)"""
    total = None
    for weight, part in zip(weights, parts):
        if weight == 0.0:
            continue
        term = part if weight == 1.0 else (-part if weight == -1.0 else weight * part)
        total = term if total is None else total + term
    return np.zeros_like(parts[0]) if total is None else total


def from_frame(coordinates, frame):
    """World components of ``sum_k coordinates[k] * frame[k]`` (frame: D constant vectors)."""
    return [linear_combination(column, coordinates) for column in zip(*frame)]


def plane_basis(normal: np.ndarray):
    """Two unit vectors completing ``normal`` to an orthonormal basis."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    first = np.cross(normal, helper)
    first /= np.linalg.norm(first)
    return first, np.cross(normal, first)


def add_scaled(a, scale, b):
    """a + scale * b, component-wise (scale is a 1D array or a scalar)."""
    return [x + scale * y for x, y in zip(a, b)]


def to_rows(parts, out=None):
    """Stack component arrays back into an (N, D) array (into ``out`` when given)."""
    if out is None:
        out = np.empty((len(parts[0]), len(parts)))
    for axis, part in enumerate(parts):
        out[:, axis] = part
    return out


def at_least(x, floor):
    """np.maximum(x, floor) for a scalar floor. numpy 1.26 vectorizes maximum and minimum only
    between two arrays: against a scalar they run slower than filling an array first."""
    return np.maximum(x, np.full(x.shape, floor))


def at_most(x, ceiling):
    """np.minimum(x, ceiling) for a scalar ceiling (see at_least)."""
    return np.minimum(x, np.full(x.shape, ceiling))


def signed_infinity(mask):
    """-inf where ``mask`` holds, +inf elsewhere: with np.maximum / np.minimum this selects
    between a value and infinity without masked assignment (far slower here)."""
    return (0.5 - mask.astype(np.float64)) * np.inf
