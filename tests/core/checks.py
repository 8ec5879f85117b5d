"""Assertions shared by the core tests: agreement with a reference and brute-force checks."""

import numpy as np
from reference import as_float


def assert_matches_reference(
    hits, origins, directions, reference, tolerance=1e-9, ambiguous=lambda row: False, relative=True
):
    """Every ray agrees with ``reference(origin, direction)`` (a mpmath result or None) on
    hit/miss, distance, point and normal. ``ambiguous(row)`` marks rays so close to
    tangent that float64 input rounding may decide either way. ``tolerance`` is relative
    to max(1, distance) unless ``relative`` is False."""
    for row, (origin, direction) in enumerate(zip(origins, directions)):
        expected = as_float(reference(origin, direction))
        if ambiguous(row):
            continue
        if expected is None:
            assert not hits.hit[row], f"row {row}: false hit at {hits.distance[row]}"
            assert np.isinf(hits.distance[row]) and np.isnan(hits.point[row]).all()
            continue
        t, point, normal = expected
        assert hits.hit[row], f"row {row}: missed, reference distance {t}"
        scale = max(1.0, abs(t)) if relative else 1.0
        assert abs(hits.distance[row] - t) <= tolerance * scale, (row, hits.distance[row], t)
        np.testing.assert_allclose(hits.point[row], point, rtol=0, atol=tolerance * scale)
        np.testing.assert_allclose(hits.normal[row], normal, rtol=0, atol=1e-7)


def assert_no_earlier_hit(hits, origins, directions, inside, samples=400):
    """Dense sampling along each hit ray finds no point of the solid before the hit, and
    every reported point lies on the solid's boundary (``inside`` with a tiny tolerance)."""
    unit = directions / np.linalg.norm(directions, axis=1, keepdims=True)
    for row in np.flatnonzero(hits.hit):
        t = hits.distance[row]
        if t == 0:
            continue
        ts = np.linspace(0.0, t, samples, endpoint=False)[1:]
        points = origins[row] + ts[:, None] * unit[row]
        assert not inside(points, -1e-9).any(), f"row {row}: the ray enters the solid before {t}"
        assert inside(hits.point[row][None, :], 1e-9).all(), f"row {row}: point not on the solid"


def assert_unit_outward(hits, outward):
    """Normals of hits at distance > 0 are unit length and agree with ``outward(points)``."""
    rows = hits.hit & (hits.distance > 0)
    normals = hits.normal[rows]
    np.testing.assert_allclose(np.linalg.norm(normals, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(normals, outward(hits.point[rows]), atol=1e-7)
