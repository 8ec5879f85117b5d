"""Vectors as lists of per-axis 1D arrays (structure of arrays).

numpy is several times faster on contiguous 1D arrays than on the rows of an (N, 3) array
(a row-wise einsum costs ~6 ns per row here, a 1D multiply-add ~0.7 ns), so the kernels of
the analytic shapes split rays into components once and work on those.
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


def along(parts, vector):
    """``parts . vector`` for a constant unit ``vector``; a coordinate axis (+-e_k) just
    picks component k (negated for -e_k), with no arithmetic."""
    if np.count_nonzero(vector) == 1:
        k = int(np.flatnonzero(vector)[0])
        return parts[k] if vector[k] > 0 else -parts[k]
    return dot(parts, vector)


def from_frame(coordinates, frame):
    """World components of ``sum_k coordinates[k] * frame[k]`` (frame: D constant vectors),
    skipping zero weights, so a frame of coordinate axes only reorders (or negates)."""
    world = []
    for axis in range(len(frame[0])):
        total = None
        for coordinate, vector in zip(coordinates, frame):
            weight = vector[axis]
            if weight == 0.0:
                continue
            term = coordinate if weight == 1.0 else (-coordinate if weight == -1.0
                                                     else weight * coordinate)
            total = term if total is None else total + term
        world.append(np.zeros_like(coordinates[0]) if total is None else total)
    return world


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
    between two arrays: against a scalar they run 3.5x slower than filling an array first."""
    return np.maximum(x, np.full(x.shape, floor))


def at_most(x, ceiling):
    """np.minimum(x, ceiling) for a scalar ceiling (see at_least)."""
    return np.minimum(x, np.full(x.shape, ceiling))


def signed_infinity(mask):
    """-inf where ``mask`` holds, +inf elsewhere: with np.maximum / np.minimum this selects
    between a value and infinity without masked assignment (~10x slower here)."""
    return (0.5 - mask.astype(np.float64)) * np.inf
