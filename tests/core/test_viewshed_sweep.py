"""The compiled viewshed sweep (core/heightfield/viewshed_kernel.py) against its definition:
a vertex is visible when ``not occluded(terrain, eye, target)``, here each line of sight
asked of the numpy reference of occluded one by one, on terrains large enough that most
vertices are decided by the sweep's bounds and exact end stretches (checked), with every
option: solid or surface, diagonals, anisotropic spacing, far origins, observers on a vertex,
an edge, inside a cell or below the surface, target heights, max distance and curvature."""

import importlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit

from geometry_queries.core import Heightfield, occluded
from geometry_queries.core.backend import use
from geometry_queries.core.heightfield.viewshed_kernel import float32_down, float32_up
from geometry_queries.core.visibility import Options, sweep_states, viewshed

visibility = importlib.import_module("geometry_queries.core.visibility")


def lowered(terrain, observer, curvature):
    """The terrain with every vertex lowered by curvature * d^2 (d from the observer)."""
    ny, nx = terrain.heights.shape
    x = terrain.origin[0] + np.arange(nx) * terrain.spacing[0]
    y = terrain.origin[1] + np.arange(ny) * terrain.spacing[1]
    squared = (y[:, None] - observer[1]) ** 2 + (x[None, :] - observer[0]) ** 2
    heights = terrain.heights - curvature * squared
    return Heightfield(
        heights,
        spacing=terrain.spacing,
        origin=terrain.origin,
        diagonals=terrain.diagonals,
        solid=terrain.solid,
    ), (x, y, squared)


def defined_viewshed(terrain, observer, oh=0.0, th=0.0, reach=np.inf, curvature=0.0):
    """The definition, one occluded call per vertex on the numpy reference."""
    surface, (x, y, squared) = lowered(terrain, observer, curvature)
    eye = np.array([observer[0], observer[1], observer[2] + oh])
    rows, columns = np.nonzero(squared <= reach * reach)
    targets = np.column_stack([x[columns], y[rows], surface.heights[rows, columns] + th])
    visible = np.zeros(terrain.heights.shape, dtype=bool)
    with use("numpy"):
        visible[rows, columns] = ~occluded(surface, np.broadcast_to(eye, targets.shape), targets)
    return visible


def states(terrain, observer, **options):
    """The sweep's own states (VISIBLE 1, UNDECIDED 2, else hidden) on the whole grid."""
    ny, nx = terrain.heights.shape
    x = terrain.origin[0] + np.arange(nx) * terrain.spacing[0]
    y = terrain.origin[1] + np.arange(ny) * terrain.spacing[1]
    settings_ = Options(**options)
    eye = np.array([observer[0], observer[1], observer[2] + settings_.observer_height])
    with use("numba"):
        return sweep_states(terrain.heights, x, y, eye, settings_, terrain, (0, ny, 0, nx))


def rough_terrain(seed, ny=40, nx=48, **kwargs):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:ny, 0:nx]
    heights = 3.0 * np.sin(x / 5.0) * np.cos(y / 7.0) + rng.uniform(-0.4, 0.4, (ny, nx))
    return Heightfield(heights, **kwargs)


def test_the_sweep_decides_most_vertices_and_agrees():
    terrain = rough_terrain(1, spacing=(0.5, 0.75), origin=(3.0, -2.0))
    observer = np.array([3.0 + 20 * 0.5, -2.0 + 15 * 0.75, terrain.heights[15, 20]])
    state = states(terrain, observer, observer_height=1.5)
    assert state is not None
    decided = state != visibility.UNDECIDED
    assert decided.mean() > 0.9  # the bounds and end stretches answer, not the judge
    assert (state == visibility.VISIBLE).any() and (state == 0).any()
    with use("numba"):
        got = viewshed(terrain, observer, observer_height=1.5)
    np.testing.assert_array_equal(got, defined_viewshed(terrain, observer, oh=1.5))


def test_bilinear_patches_and_an_eye_off_the_grid_keep_to_the_lines_of_sight():
    bilinear = rough_terrain(2, surface="BILINEAR")
    observer = np.array([10.0, 10.0, 5.0])
    assert states(bilinear, observer) is None
    triangles = rough_terrain(2)
    assert states(triangles, np.array([-1.0, 10.0, 5.0])) is None


@pytest.mark.parametrize("solid", [True, False])
def test_flat_terrain_lines_lying_on_it_touch(solid):
    """An eye on a flat terrain: every line of sight lies in the surface (a touch blocks),
    which the sweep cannot tell from rounding: the judge answers."""
    terrain = Heightfield(np.zeros((20, 20)), solid=solid)
    observer = np.array([7.0, 5.0, 0.0])
    with use("numba"):
        got = viewshed(terrain, observer)
    np.testing.assert_array_equal(got, defined_viewshed(terrain, observer))


def test_terraces_graze_plateau_edges():
    """Integer heights: lines of sight run exactly over plateau edges and along flat tops."""
    rng = np.random.default_rng(4)
    heights = np.round(rng.uniform(0, 3, (30, 30)))
    for solid in (True, False):
        terrain = Heightfield(heights, solid=solid)
        for i, j, oh in ((10, 12, 1.0), (0, 0, 2.0), (29, 14, 0.0)):
            observer = np.array([float(i), float(j), heights[j, i]])
            with use("numba"):
                got = viewshed(terrain, observer, observer_height=oh)
            np.testing.assert_array_equal(got, defined_viewshed(terrain, observer, oh=oh))


def test_far_origin_and_large_heights():
    terrain = rough_terrain(5, spacing=(30.0, 25.0), origin=(4.0e6, -2.5e6))
    heights = terrain.heights * 300.0 + 2000.0
    terrain = Heightfield(heights, spacing=terrain.spacing, origin=terrain.origin)
    observer = np.array([4.0e6 + 17 * 30.0, -2.5e6 + 22 * 25.0, heights[22, 17]])
    with use("numba"):
        got = viewshed(terrain, observer, observer_height=10.0)
    np.testing.assert_array_equal(got, defined_viewshed(terrain, observer, oh=10.0))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    size=st.tuples(st.integers(2, 36), st.integers(2, 36)),
    spacing=st.tuples(st.sampled_from([0.5, 1.0, 3.0]), st.sampled_from([0.5, 1.0, 2.0])),
    solid=st.booleans(),
    split=st.booleans(),
    place=st.sampled_from(["vertex", "edge", "cell", "border"]),
    oh=st.sampled_from([0.0, 0.3, 2.0]),
    below=st.booleans(),
    th=st.sampled_from([0.0, 0.5]),
    reach=st.sampled_from([np.inf, 5.0, 12.0]),
    curvature=st.sampled_from([0.0, 0.002]),
)
def test_sweep_matches_the_definition(
    seed, size, spacing, solid, split, place, oh, below, th, reach, curvature
):
    rng = np.random.default_rng(seed)
    ny, nx = size
    amplitude = rng.choice([0.2, 1.0, 4.0])
    heights = np.round(rng.uniform(-amplitude, amplitude, (ny, nx)), int(rng.integers(0, 3)))
    diagonals = rng.random((ny - 1, nx - 1)) < 0.5 if split else None
    origin = (float(rng.uniform(-50, 50)), float(rng.uniform(-50, 50)))
    terrain = Heightfield(heights, spacing=spacing, origin=origin, diagonals=diagonals, solid=solid)
    i, j = int(rng.integers(0, nx)), int(rng.integers(0, ny))
    if place == "border":
        i = 0 if rng.random() < 0.5 else nx - 1
    fx = {"vertex": 0.0, "edge": 0.5, "cell": 0.3, "border": 0.0}[place]
    fy = {"vertex": 0.0, "edge": 0.0, "cell": 0.6, "border": 0.0}[place]
    x = origin[0] + min(i + fx, nx - 1) * spacing[0]
    y = origin[1] + min(j + fy, ny - 1) * spacing[1]
    ground = terrain.height_at(x, y) if place in ("edge", "cell") else heights[j, i]
    observer = np.array([x, y, ground - (0.7 if below else 0.0)])
    earth_radius = (1.0 - 1.0 / 7.0) / (2.0 * curvature) if curvature else 6_371_000.0
    with use("numba"):
        got = viewshed(
            terrain,
            observer,
            observer_height=oh,
            target_height=th,
            max_distance=reach,
            earth_curvature=bool(curvature),
            earth_radius=earth_radius,
        )
    expected = defined_viewshed(terrain, observer, oh=oh, th=th, reach=reach, curvature=curvature)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("solid", [True, False])
def test_eye_below_the_surface(solid):
    terrain = rough_terrain(7, solid=solid)
    observer = np.array([20.0, 17.0, terrain.heights[17, 20] - 0.5])
    with use("numba"):
        got = viewshed(terrain, observer, observer_height=0.2)
    np.testing.assert_array_equal(got, defined_viewshed(terrain, observer, oh=0.2))


@njit
def _rounded_outwards(values):
    """float32_up and float32_down of each value, as the sweep's kernels call them."""
    up = np.empty(values.size, np.float32)
    down = np.empty(values.size, np.float32)
    for k in range(values.size):
        up[k] = float32_up(values[k])
        down[k] = float32_down(values[k])
    return up, down


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=20))
def test_sector_tables_round_outwards_and_stay_tight(values):
    """The tables' float32 bounds (float32_up, float32_down) against float64 comparisons: up
    at or above x and down at or below it, across float32's normal, subnormal and overflowing
    ranges; within 2^-22 of x, or two float32 steps below float32's normal range."""
    values = np.array(values + [0.0, 1e-40, -1e-44, 3.0e38, 1e39, -1e39, 1.0, 100.5])
    up, down = _rounded_outwards(values)
    with np.errstate(over="ignore"):
        for x, u, d in zip(values.tolist(), up, down):
            assert float(u) >= x and float(d) <= x, (x, u, d)
            if abs(x) < 3.0e38:
                slack = max(abs(x) * 2.0**-22, 2 * 2.0**-149)
                assert float(u) - x <= slack and x - float(d) <= slack, (x, u, d)
