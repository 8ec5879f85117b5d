"""Bad input raises ValueError naming the argument (and the first bad row); nothing is
silently turned into a miss."""

import numpy as np
import pytest

from geometry_queries.core import Cylinder, Placed, Sphere, raycast, sphere_cast

SPHERE = Sphere((0, 0, 0), 1.0)
GOOD = np.zeros((4, 3)) + [0, 0, -5]
UP = np.zeros((4, 3)) + [0, 0, 1]


def with_row(array, row, value):
    array = array.copy()
    array[row] = value
    return array


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_origins_and_directions_name_the_row(bad):
    with pytest.raises(ValueError, match=r"origins row 2 is not finite"):
        raycast(SPHERE, with_row(GOOD, 2, [0, bad, 0]), UP)
    with pytest.raises(ValueError, match=r"directions row 3 is not finite"):
        raycast(SPHERE, GOOD, with_row(UP, 3, [bad, 0, 1]))


def test_bad_row_is_found_beyond_the_first_chunk():
    origins = np.zeros((70_000, 3)) + [0, 0, -5]
    origins[69_999, 0] = np.nan
    with pytest.raises(ValueError, match="origins row 69999"):
        raycast(SPHERE, origins, np.zeros((70_000, 3)) + [0, 0, 1])


def test_zero_direction_names_the_row():
    with pytest.raises(ValueError, match="directions row 1 has zero length"):
        raycast(SPHERE, GOOD, with_row(UP, 1, [0, 0, 0]))


def test_mismatched_batches():
    with pytest.raises(ValueError, match="origins has 4 rows but directions has 3"):
        raycast(SPHERE, GOOD, UP[:3])
    with pytest.raises(ValueError, match="starts has 4 rows but ends has 2"):
        sphere_cast(SPHERE, GOOD, UP[:2], 0.1)


def test_wrong_dimensionality():
    with pytest.raises(ValueError, match="origins has 2 columns but the shape is 3D"):
        raycast(SPHERE, [[0, 0]], [[1, 0]])
    with pytest.raises(ValueError, match="directions has 3 columns but the shape is 2D"):
        raycast(Sphere((0, 0), 1), [[0, 0]], [[1, 0, 0]])
    with pytest.raises(ValueError, match=r"origins must have shape \(N, D\)"):
        raycast(SPHERE, np.zeros((2, 2, 3)), UP[:2])
    with pytest.raises(ValueError, match="center must be a vector of length 2 or 3"):
        Sphere((0, 0, 0, 0), 1)
    with pytest.raises(ValueError, match="p0 must be a vector of length 3"):
        Cylinder((0, 0), (0, 1, 0), 1)


@pytest.mark.parametrize("radius", [0.0, -1.0, np.nan, np.inf, "big"])
def test_bad_radius(radius):
    with pytest.raises(ValueError, match="radius must be"):
        Sphere((0, 0, 0), radius)
    with pytest.raises(ValueError, match="radius must be"):
        Cylinder((0, 0, 0), (0, 0, 1), radius)


def test_bad_shape_parameters():
    with pytest.raises(ValueError, match="p0 and p1 must differ"):
        Cylinder((1, 2, 3), (1, 2, 3), 1)
    with pytest.raises(ValueError, match="center must be finite"):
        Sphere((0, np.nan, 0), 1)


def test_bad_max_distance_and_cast_radius():
    with pytest.raises(ValueError, match="max_distance row 1 must be a non-negative number"):
        raycast(SPHERE, GOOD, UP, max_distance=[1, -1, 1, 1])
    with pytest.raises(ValueError, match="max_distance must be a non-negative number"):
        raycast(SPHERE, GOOD, UP, max_distance=np.nan)
    with pytest.raises(ValueError, match=r"max_distance must be a scalar or have shape \(4,\)"):
        raycast(SPHERE, GOOD, UP, max_distance=[1, 2])
    with pytest.raises(ValueError, match="radius row 0 must be a non-negative number"):
        sphere_cast(SPHERE, GOOD, UP, [np.inf, 1, 1, 1])


def test_bad_placement_matrices():
    with pytest.raises(ValueError, match="matrix is singular"):
        Placed(SPHERE, np.diag([1.0, 0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"matrix must have shape \(4, 4\)"):
        Placed(SPHERE, np.eye(3))
    with pytest.raises(ValueError, match="matrix must be affine"):
        Placed(SPHERE, [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]])
    with pytest.raises(ValueError, match="matrix must be finite"):
        Placed(SPHERE, np.diag([1.0, np.nan, 1.0, 1.0]))
    with pytest.raises(ValueError, match="shape must be a core shape"):
        Placed("sphere", np.eye(4))


def test_misses_are_inf_and_nan_never_errors():
    hits = raycast(SPHERE, [[5, 5, 5]], [[1, 0, 0]])
    assert not hits.hit[0] and np.isinf(hits.distance[0])
    assert np.isnan(hits.point[0]).all() and np.isnan(hits.normal[0]).all()
