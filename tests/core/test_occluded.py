"""occluded: segments against every shape, both backends (tests/core/conftest.py)."""

import numpy as np
import pytest

from core import Cylinder, Heightfield, Placed, Sphere, occluded


def test_sphere_segments_through_short_of_tangent_and_from_the_surface():
    sphere = Sphere((0, 0, 0), 1.0)
    starts = [[-3, 0, 0], [-3, 2, 0], [0, 0, 0], [-3, 0, 0], [1, 0, 0], [-3, 1, 0]]
    ends = [[3, 0, 0], [3, 2, 0], [5, 0, 0], [-1, 0, 0], [3, 0, 0], [3, 1, 0]]
    # through; beside; start inside; end on the surface; start on the surface going out;
    # tangent (a touch blocks)
    assert occluded(sphere, starts, ends).tolist() == [True, False, True, False, False, True]


def test_single_segment_gives_a_bool():
    assert occluded(Sphere((0, 0), 1.0), (-2, 0), (2, 0)) is np.True_


def test_terrain_vertex_targets_are_not_hidden_by_the_terrain():
    heights = np.zeros((3, 3))
    heights[1, 1] = 1.0
    for solid in (True, False):
        terrain = Heightfield(heights, solid=solid)
        starts = [[0, 0, 3], [0, 0, 0.5], [0, 0, 0.5]]
        ends = [[1, 1, 1], [2, 2, 0], [2, 2, 2]]
        assert occluded(terrain, starts, ends).tolist() == [False, True, False]


def test_start_inside_solids_is_occluded_not_inside_surfaces():
    cylinder = Cylinder((0, 0, 0), (0, 0, 2), 1.0)
    tube = Cylinder((0, 0, 0), (0, 0, 2), 1.0, capped=False)
    start, end = [0, 0, 1], [0, 0, 5]
    assert occluded(cylinder, start, end)
    assert not occluded(tube, start, end)
    terrain = Heightfield(np.zeros((4, 4)))
    assert occluded(terrain, [1.5, 1.5, -1], [1.5, 1.5, -0.5])
    assert not occluded(Heightfield(np.zeros((4, 4)), solid=False), [1.5, 1.5, -1], [1, 1, -2])


def test_placed_mirror():
    placed = Placed(Sphere((0, 0, 0), 1.0), np.diag([-2.0, 1.0, 0.5, 1.0]))
    assert occluded(placed, [[-5, 0, 0], [-5, 0, 0.6]], [[5, 0, 0], [5, 0, 0.6]]).tolist() == [
        True,
        False,
    ]


def test_bad_rows_are_named():
    with pytest.raises(ValueError, match="ends row 1 is not finite"):
        occluded(Sphere((0, 0, 0), 1.0), np.zeros((2, 3)), [[1, 0, 0], [np.nan, 0, 0]])
    with pytest.raises(ValueError, match="starts has 2 rows but ends has 1"):
        occluded(Sphere((0, 0, 0), 1.0), np.zeros((2, 3)), [[1, 0, 0]])
