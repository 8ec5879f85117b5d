"""core.targets against per-target queries computed independently, on both backends: the
nearest hit over several targets is the minimum of each target's own raycast, the first
contact the minimum of each sphere cast, and visible_from agrees with a loop of
core.occluded over every occluder."""

import numpy as np
import pytest

from geometry_queries.core import (
    Cylinder,
    Heightfield,
    Placed,
    Sphere,
    occluded,
    raycast,
    sphere_cast,
)
from geometry_queries.core.targets import (
    TargetError,
    first_contacts,
    nearest_hits,
    query_cost,
    visible_from,
)


def scene():
    """A sphere, a tilted cylinder and a placed terrain below them."""
    rng = np.random.default_rng(7)
    matrix = np.eye(4)
    matrix[:3, 3] = (-6.0, -6.0, -3.0)
    terrain = Placed(Heightfield(rng.normal(0, 0.4, (13, 13)), spacing=(1.0, 1.0)), matrix)
    return [
        Sphere((1.0, 0.5, 1.0), 1.2),
        Cylinder((-2.0, -1.0, -1.0), (-1.0, 1.0, 2.0), 0.8),
        terrain,
    ]


def random_rays(count, seed):
    rng = np.random.default_rng(seed)
    origins = rng.uniform(-4, 4, (count, 3)) + (0, 0, 6)
    directions = rng.normal(size=(count, 3)) + (0, 0, -2.5)
    return origins, directions


def per_target_minimum(results):
    """(distance, target) of the smallest distance over per-target results, the first
    target on ties; inf and -1 where none hits."""
    distances = np.array([np.where(r.hit, r.distance, np.inf) for r in results])
    target = np.argmin(distances, axis=0)
    best = distances[target, np.arange(distances.shape[1])]
    return best, np.where(np.isfinite(best), target, -1)


@pytest.mark.parametrize("max_distance", [np.inf, 6.0])
def test_nearest_hits_is_each_rays_minimum_over_targets(max_distance):
    shapes = scene()
    origins, directions = random_rays(4000, 1)
    nearest = nearest_hits(shapes, origins, directions, max_distance)
    each = [raycast(shape, origins, directions, max_distance) for shape in shapes]
    distance, target = per_target_minimum(each)
    assert np.array_equal(nearest.target, target)
    assert np.array_equal(nearest.hit, target >= 0)
    assert np.array_equal(nearest.distance, distance)
    for index, hits in enumerate(each):
        mine = nearest.target == index
        assert mine.any()  # every target is the nearest for some rays
        assert np.array_equal(nearest.point[mine], hits.point[mine])
        assert np.array_equal(nearest.normal[mine], hits.normal[mine])
    assert np.isnan(nearest.point[~nearest.hit]).all()


def test_first_contacts_is_each_casts_minimum_over_targets():
    shapes = scene()
    starts, directions = random_rays(3000, 2)
    ends = starts + 3.0 * directions
    casts = first_contacts(shapes, starts, ends, 0.3)
    each = [sphere_cast(shape, starts, ends, 0.3) for shape in shapes]
    distance, target = per_target_minimum(each)
    assert np.array_equal(casts.target, target)
    assert np.array_equal(casts.distance, distance)
    for index, contact in enumerate(each):
        mine = casts.target == index
        assert mine.any()
        for field in ("center", "point", "normal"):
            assert np.array_equal(getattr(casts, field)[mine], getattr(contact, field)[mine])


def test_ties_go_to_the_first_target():
    twice = [Sphere((0, 0, 0), 1.0), Sphere((0, 0, 0), 1.0)]
    hits = nearest_hits(twice, (0, 0, 5.0), (0, 0, -1.0))
    assert hits.target.tolist() == [0] and hits.distance.tolist() == [4.0]


def test_no_targets_no_hits():
    hits = nearest_hits([], np.zeros((3, 3)), np.ones((3, 3)))
    assert not hits.hit.any() and (hits.target == -1).all() and np.isinf(hits.distance).all()


@pytest.mark.parametrize("seed", range(3))
def test_visible_from_agrees_with_occluded_per_occluder(seed):
    shapes = scene()
    rng = np.random.default_rng(seed)
    observer = rng.uniform(-3, 3, 3) + (0, 0, 5)
    points = rng.uniform(-6, 6, (3000, 3)) + (0, 0, -1)
    visible = visible_from(observer, points, shapes)
    starts = np.broadcast_to(observer, points.shape)
    blocked = np.zeros(len(points), dtype=bool)
    for shape in shapes:
        blocked |= occluded(shape, starts, points)
    assert np.array_equal(visible, ~blocked)
    assert visible.any() and not visible.all()
    # The order of the occluders does not matter.
    assert np.array_equal(visible_from(observer, points, shapes[::-1]), visible)


def test_terrains_are_asked_last():
    sphere, cylinder, terrain = scene()
    costs = [query_cost(shape) for shape in (terrain, cylinder, Placed(sphere, np.eye(4)))]
    assert costs == [2, 1, 0]


def test_a_refused_target_is_named_by_its_index():
    shapes = [Sphere((0, 0, 0), 1.0), Placed(Sphere((0, 0, 0), 1.0), np.diag([1, 2, 1, 1]))]
    with pytest.raises(TargetError) as refused:
        first_contacts(shapes, (0, 0, 5.0), (0, 0, -5.0), 0.1)
    assert refused.value.index == 1
    assert "sphere_cast" in refused.value.reason
    with pytest.raises(TargetError) as refused:
        nearest_hits([Sphere((0, 0, 0), 1.0)], (0, 0, 5.0), (0, 0, 0.0))
    assert refused.value.index == 0 and "direction" in refused.value.reason
