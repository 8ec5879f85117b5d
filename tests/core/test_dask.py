"""geometry_queries.dask.cumulative_viewshed equals core.cumulative_viewshed bit for bit:
uneven chunks, reach windows crossing chunk borders, curvature, a zarr-backed DEM, a
DataArray with descending y, the threaded scheduler and a LocalCluster."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

from geometry_queries import dask as gq_dask  # noqa: E402
from geometry_queries.core import Heightfield, cumulative_viewshed  # noqa: E402

SPACING = (0.7, 0.45)
ORIGIN = (1234.5, -876.25)


def dem(ny=37, nx=41, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(ny, nx)).cumsum(axis=0).cumsum(axis=1) * 0.05


def observers(heights, count, seed=1):
    rng = np.random.default_rng(seed)
    ny, nx = heights.shape
    i = rng.integers(0, nx, count)
    j = rng.integers(0, ny, count)
    x = ORIGIN[0] + i * SPACING[0] + rng.uniform(-0.3, 0.3, count)
    y = ORIGIN[1] + j * SPACING[1]
    return np.stack([x, y, heights[j, i] + rng.uniform(0.5, 3.0, count)], axis=1)


CHUNKS = ((10, 3, 20, 4), (7, 15, 1, 18))  # uneven, a chunk one vertex wide


@pytest.mark.parametrize(
    "options",
    [
        {"observer_height": 1.5},
        {"max_distance": 4.0, "target_height": 0.3},
        {"max_distance": 2.2, "earth_curvature": True, "earth_radius": 500.0},
    ],
)
@pytest.mark.parametrize("solid", [True, False])
def test_equals_core_with_uneven_chunks(options, solid):
    heights = dem()
    points = observers(heights, 7)
    lazy = gq_dask.cumulative_viewshed(
        da.from_array(heights, chunks=CHUNKS), points, spacing=SPACING, origin=ORIGIN,
        solid=solid, observers_per_task=3, split_every=2, **options,
    )  # fmt: skip
    assert lazy.chunks == CHUNKS and lazy.dtype == np.int32
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN, solid=solid)
    expected = cumulative_viewshed(terrain, points, **options)
    np.testing.assert_array_equal(lazy.compute(scheduler="sync"), expected)
    np.testing.assert_array_equal(lazy.compute(scheduler="threads"), expected)
    assert expected.max() >= 1


def test_tasks_read_only_the_chunks_within_reach():
    heights = dem(60, 60)
    chunked = da.from_array(heights, chunks=10)
    point = np.array([[ORIGIN[0] + 5 * SPACING[0], ORIGIN[1] + 5 * SPACING[1], 10.0]])
    lazy = gq_dask.cumulative_viewshed(
        chunked, point, spacing=SPACING, origin=ORIGIN, max_distance=2.0
    )
    from dask.core import flatten
    from dask.optimization import cull

    needed, _ = cull(dict(lazy.__dask_graph__()), list(flatten(lazy.__dask_keys__())))
    read = {key for key in needed if key[0] == chunked.name}
    # 2 m reach: rows 5 +- 4.4 (and a vertex of margin) cross into the second row of
    # chunks, columns 5 +- 2.9 stay in the first.
    assert read == {(chunked.name, 0, 0), (chunked.name, 1, 0)}
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN)
    np.testing.assert_array_equal(
        lazy.compute(scheduler="sync"), cumulative_viewshed(terrain, point, max_distance=2.0)
    )


def group_sizes(lazy):
    """How many observers each counting task of the graph counts, in the groups' order."""
    graph = dict(lazy.__dask_graph__())
    parts = sorted(key for key in graph if key[0].startswith("gq-viewshed-part-"))
    return [len(graph[key][2]) for key in parts]


def test_a_task_holds_no_more_than_its_observers_windows():
    """Observers in one band of rows but far apart along it count in tasks of their own
    (their union would be mostly vertices neither reaches); close ones share a task. The
    last 2 * observers_per_task observers (along the grid) count alone."""
    heights = dem(30, 200)
    columns = [10, 12, 100, 190] + [195] * 8
    x = ORIGIN[0] + SPACING[0] * np.array(columns)
    y = ORIGIN[1] + SPACING[1] * np.array([15, 16, 15, 14] + list(range(10, 18)))
    points = np.stack([x, y, np.full(len(columns), 20.0)], axis=1)
    lazy = gq_dask.cumulative_viewshed(
        da.from_array(heights, chunks=50), points, spacing=SPACING, origin=ORIGIN,
        max_distance=3.0, observers_per_task=4,
    )  # fmt: skip
    # (10, 12) together, 100 and 190 alone (too far apart), then the last 8 one by one.
    assert group_sizes(lazy) == [2, 1, 1] + [1] * 8
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN)
    np.testing.assert_array_equal(
        lazy.compute(scheduler="sync"), cumulative_viewshed(terrain, points, max_distance=3.0)
    )


def test_wide_windows_get_a_task_each(monkeypatch):
    """Close observers whose union window would hold more than GROUP_VERTICES count in
    tasks of their own, with the same counts."""
    heights = dem(30, 200)
    x = ORIGIN[0] + SPACING[0] * np.array([10, 12])
    y = ORIGIN[1] + SPACING[1] * np.array([15, 16])
    points = np.stack([x, y, np.full(2, 20.0)], axis=1)
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN)
    expected = cumulative_viewshed(terrain, points, max_distance=3.0)

    def counted():
        return gq_dask.cumulative_viewshed(
            da.from_array(heights, chunks=50), points, spacing=SPACING, origin=ORIGIN,
            max_distance=3.0, observers_per_task=4,
        )  # fmt: skip

    monkeypatch.setattr("geometry_queries.dask_graph.ALONE_AT_END", 0)  # no tail alone
    assert group_sizes(counted()) == [2]
    # The two windows (17 x 13 vertices each) overlap; their union holds 18 x 15 = 270.
    monkeypatch.setattr("geometry_queries.dask_graph.GROUP_VERTICES", 270)
    assert group_sizes(counted()) == [2]
    monkeypatch.setattr("geometry_queries.dask_graph.GROUP_VERTICES", 269)
    lazy = counted()
    assert group_sizes(lazy) == [1, 1]
    np.testing.assert_array_equal(lazy.compute(scheduler="sync"), expected)


def test_groups_reaching_the_same_window_share_its_terrain():
    """Groups whose observers all reach the whole grid read one task's terrain, built once;
    with curvature (a terrain per observer) or windows of their own, none is shared. The
    counts are core's either way."""
    heights = dem()
    points = observers(heights, 7)
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN)

    def counted(**options):
        lazy = gq_dask.cumulative_viewshed(
            da.from_array(heights, chunks=CHUNKS), points, spacing=SPACING, origin=ORIGIN,
            observers_per_task=2, **options,
        )  # fmt: skip
        graph = dict(lazy.__dask_graph__())
        shared = [key for key in graph if key[0].startswith("gq-viewshed-terrain-")]
        parts = [key for key in graph if key[0].startswith("gq-viewshed-part-")]
        expected = cumulative_viewshed(terrain, points, **options)
        np.testing.assert_array_equal(lazy.compute(scheduler="threads"), expected)
        return len(shared), len(parts)

    # 7 observers: (2, 1) and then the last 4 alone (dask_graph.ALONE_AT_END).
    assert counted() == (1, 6)
    assert counted(earth_curvature=True, earth_radius=500.0) == (0, 6)
    assert counted(max_distance=4.0)[0] == 0


def test_parts_of_one_window_are_summed_whole_and_widened():
    """Parts over the same window are summed as whole windows, split_every at a time, before
    the chunks take their slices; each sum in a type wide enough for its observers: 300
    observers over a flat grid all see every vertex, past uint8's 255."""
    heights = np.zeros((6, 7))
    rng = np.random.default_rng(2)
    points = np.column_stack(
        [rng.uniform(0, 6 * SPACING[0], 300), rng.uniform(0, 5 * SPACING[1], 300),
         np.full(300, 1.0)]
    ) + [ORIGIN[0], ORIGIN[1], 0.0]  # fmt: skip
    lazy = gq_dask.cumulative_viewshed(
        da.from_array(heights, chunks=(4, 3)), points, spacing=SPACING, origin=ORIGIN,
        observers_per_task=50, split_every=3,
    )  # fmt: skip
    graph = dict(lazy.__dask_graph__())
    sums = [key for key in graph if "-window" in key[0]]
    # 4 groups of 50, then 100 alone: 104 parts, 35 sums of 3, then 12, 4, 2.
    assert len(group_sizes(lazy)) == 104
    assert len(sums) == 35 + 12 + 4 + 2
    counts = lazy.compute(scheduler="sync")
    assert (counts == 300).all()
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN)
    np.testing.assert_array_equal(counts, cumulative_viewshed(terrain, points))


def test_zarr_dem_on_a_local_cluster(tmp_path):
    zarr = pytest.importorskip("zarr")
    distributed = pytest.importorskip("distributed")
    heights = dem(48, 52, seed=3).astype(np.float32)
    store = zarr.open_array(
        str(tmp_path / "dem.zarr"), mode="w", shape=heights.shape, chunks=(13, 17),
        dtype=np.float32,
    )  # fmt: skip
    store[:] = heights
    lazy_dem = da.from_zarr(str(tmp_path / "dem.zarr"))
    points = observers(heights.astype(np.float64), 9, seed=4)
    options = {"max_distance": 6.0, "observer_height": 1.0, "earth_curvature": True}
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster, distributed.Client(cluster):  # fmt: skip
        counts = gq_dask.cumulative_viewshed(
            lazy_dem, points, spacing=SPACING, origin=ORIGIN, observers_per_task=2, **options
        ).compute()
    terrain = Heightfield(heights, spacing=SPACING, origin=ORIGIN)
    np.testing.assert_array_equal(counts, cumulative_viewshed(terrain, points, **options))
    assert counts.max() >= 2


def test_dataarray_with_descending_y():
    xr = pytest.importorskip("xarray")
    heights = dem(20, 24, seed=5)
    x = ORIGIN[0] + SPACING[0] * np.arange(24)
    y = 100.0 - 0.5 * np.arange(20)
    data = xr.DataArray(da.from_array(heights, chunks=(7, 9)), coords={"y": y, "x": x},
                        dims=("y", "x"))  # fmt: skip
    points = np.array([[x[5], y[3], heights[3, 5] + 2.0], [x[20], y[15], 50.0]])
    counts = gq_dask.cumulative_viewshed(data, points, max_distance=5.0)
    assert counts.dims == ("y", "x")
    terrain = Heightfield.from_xarray(data.compute())
    expected = cumulative_viewshed(terrain, points, max_distance=5.0)[::-1]
    np.testing.assert_array_equal(counts.compute().values, expected)


def test_bad_arguments():
    chunked = da.zeros((5, 5), chunks=2)
    with pytest.raises(ValueError, match="spacing and origin"):
        gq_dask.cumulative_viewshed(chunked, [(0, 0, 1)])
    with pytest.raises(ValueError, match="observers_per_task"):
        gq_dask.cumulative_viewshed(
            chunked, [(0, 0, 1)], spacing=1, origin=(0, 0), observers_per_task=0
        )
    with pytest.raises(ValueError, match="row 0"):
        gq_dask.cumulative_viewshed(chunked, [(0, np.inf, 1)], spacing=1, origin=(0, 0))
    with pytest.raises(ValueError, match="max_distance"):
        gq_dask.cumulative_viewshed(chunked, [(0, 0, 1)], spacing=1, origin=(0, 0),
                                    max_distance=-1)  # fmt: skip
