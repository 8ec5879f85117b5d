"""Heightfield: every result against brute-force references written independently here.

TRIANGLES: the grid as an explicit triangle list, each triangle intersected by
Moller-Trumbore in float64, plus the four side walls (vertical faces under the edge
profile) and an origin-inside test; the first of all of these wins. BILINEAR: each patch's
height sampled densely along the part of the ray over its cell, the first sign change
refined by bisection. A reference runs twice, with the solid grown and shrunk by 1e-9, so a
ray whose answer hangs on round-off is known as ambiguous (random rays) while the named edge
cases use the closed solid (grown) and must hit.
"""

import sys
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geometry_queries.core import Heightfield, Placed, backend, raycast

MARGIN = 1e-9


def grid_vertices(heights, spacing, origin):
    ny, nx = heights.shape
    x = origin[0] + spacing[0] * np.arange(nx)
    y = origin[1] + spacing[1] * np.arange(ny)
    X, Y = np.meshgrid(x, y)
    return np.stack([X.ravel(), Y.ravel(), np.asarray(heights, float).ravel()], axis=1)


def grid_triangles(shape, diagonals=None):
    """Triangles (T, 3) as vertex indices, and the cell (i, j) of each."""
    ny, nx = shape
    tris, cells = [], []
    for j in range(ny - 1):
        for i in range(nx - 1):
            a, b = j * nx + i, j * nx + i + 1  # (i, j), (i+1, j)
            c, d = (j + 1) * nx + i, (j + 1) * nx + i + 1  # (i, j+1), (i+1, j+1)
            if diagonals is not None and diagonals[j][i]:
                tris += [(a, b, c), (b, d, c)]
            else:
                tris += [(a, b, d), (a, d, c)]
            cells += [(i, j), (i, j)]
    return np.array(tris), np.array(cells)


def moller_trumbore(origin, direction, v0, v1, v2, grow):
    """Distance to each triangle (inf where missed); barycentric limits widened by grow."""
    e1, e2 = v1 - v0, v2 - v0
    p = np.cross(direction, e2)
    det = e1 @ p if e1.ndim == 1 else np.einsum("ij,ij->i", e1, p)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        s = origin - v0
        u = np.einsum("ij,ij->i", s, p) * inv
        q = np.cross(s, e1)
        v = (q @ direction) * inv
        t = np.einsum("ij,ij->i", e2, q) * inv
        # A ray (unit direction) in the triangle's plane is parallel to it: det vanishes
        # but for rounding, and u, v, t are 0/0 (here or elsewhere it may round to a "hit").
        scale = np.linalg.norm(e1, axis=-1) * np.linalg.norm(e2, axis=-1)
        ok = (
            (np.abs(det) > 1e-12 * scale)
            & (u >= -grow)
            & (v >= -grow)
            & (u + v <= 1 + grow)
            & (t >= -grow)
        )
    return np.where(ok, np.maximum(t, 0.0), np.inf)


def _edge_profile(xs, hs, x):
    return np.interp(x, xs, hs)


def _point_height_triangles(vertices, triangles, x, y):
    """Surface height under (x, y) by a vertical Moller-Trumbore from far above."""
    top = vertices[:, 2].max() + 10.0
    t = moller_trumbore(
        np.array([x, y, top]),
        np.array([0.0, 0.0, -1.0]),
        *(vertices[triangles[:, k]] for k in range(3)),
        grow=1e-12,
    )
    return top - t.min()


def walls(origin, direction, heights, spacing, origin_xy, grow):
    """First side-wall entry: (t, outward normal) or (inf, None). A wall is the vertical
    face x = const (or y = const) under the edge's height profile (linear between
    vertices for both surfaces)."""
    ny, nx = heights.shape
    x = origin_xy[0] + spacing[0] * np.arange(nx)
    y = origin_xy[1] + spacing[1] * np.arange(ny)
    best = (np.inf, None)
    for axis, coords, along, profile_rows in (
        (0, x, y, (heights[:, 0], heights[:, -1])),
        (1, y, x, (heights[0, :], heights[-1, :])),
    ):
        for side, (plane, profile) in enumerate(zip((coords[0], coords[-1]), profile_rows)):
            outward = -1.0 if side == 0 else 1.0
            if direction[axis] * outward >= 0:
                continue  # not entering through this wall
            t = (plane - origin[axis]) / direction[axis]
            if t < -grow:
                continue
            t = max(t, 0.0)
            p = origin + t * direction
            other = p[1 - axis]
            if other < along[0] - grow or other > along[-1] + grow:
                continue
            if p[2] <= _edge_profile(along, profile, other) + grow and t < best[0]:
                normal = np.zeros(3)
                normal[axis] = outward
                best = (t, normal)
    return best


def reference_triangles(field_args, origin, direction, grow):
    """(t, normal or None) of the first point of the solid, or None; normal None when
    several triangles with different normals are hit first (an edge)."""
    heights, spacing, origin_xy, diagonals = field_args
    heights = np.asarray(heights, float)
    origin = np.asarray(origin, float)
    direction = np.asarray(direction, float)
    direction = direction / np.linalg.norm(direction)
    vertices = grid_vertices(heights, spacing, origin_xy)
    triangles, _ = grid_triangles(heights.shape, diagonals)
    ny, nx = heights.shape
    x1 = origin_xy[0] + spacing[0] * (nx - 1)
    y1 = origin_xy[1] + spacing[1] * (ny - 1)
    if (
        origin_xy[0] - grow <= origin[0] <= x1 + grow
        and origin_xy[1] - grow <= origin[1] <= y1 + grow
    ):
        cx = min(max(origin[0], origin_xy[0]), x1)
        cy = min(max(origin[1], origin_xy[1]), y1)
        if origin[2] <= _point_height_triangles(vertices, triangles, cx, cy) + grow:
            return 0.0, None
    v0, v1, v2 = (vertices[triangles[:, k]] for k in range(3))
    t = moller_trumbore(origin, direction, v0, v1, v2, grow)
    wall_t, wall_normal = walls(origin, direction, heights, spacing, origin_xy, grow)
    best = min(t.min(), wall_t)
    if not np.isfinite(best):
        return None
    if wall_t <= t.min():
        return wall_t, wall_normal
    first = np.flatnonzero(t <= best + 1e-9 * max(1.0, best))
    normals = np.cross(v1[first] - v0[first], v2[first] - v0[first])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    normals *= np.sign(normals[:, 2:3])
    normal = normals[0] if np.allclose(normals, normals[0], atol=1e-9) else None
    return best, normal


def _bilinear_height(heights, spacing, origin_xy, x, y):
    ny, nx = heights.shape
    U = (x - origin_xy[0]) / spacing[0]
    V = (y - origin_xy[1]) / spacing[1]
    i = np.clip(np.floor(U).astype(int), 0, nx - 2)
    j = np.clip(np.floor(V).astype(int), 0, ny - 2)
    u, v = U - i, V - j
    return (
        (1 - u) * (1 - v) * heights[j, i]
        + u * (1 - v) * heights[j, i + 1]
        + (1 - u) * v * heights[j + 1, i]
        + u * v * heights[j + 1, i + 1]
    )


def reference_bilinear(field_args, origin, direction, grow, samples=257):
    """(t, normal) of the first point of the solid under the bilinear surface, or None."""
    heights, spacing, origin_xy, _ = field_args
    heights = np.asarray(heights, float)
    origin = np.asarray(origin, float)
    direction = np.asarray(direction, float)
    direction = direction / np.linalg.norm(direction)
    ny, nx = heights.shape
    x1 = origin_xy[0] + spacing[0] * (nx - 1)
    y1 = origin_xy[1] + spacing[1] * (ny - 1)
    if (
        origin_xy[0] - grow <= origin[0] <= x1 + grow
        and origin_xy[1] - grow <= origin[1] <= y1 + grow
    ):
        cx = min(max(origin[0], origin_xy[0]), x1)
        cy = min(max(origin[1], origin_xy[1]), y1)
        if origin[2] <= _bilinear_height(heights, spacing, origin_xy, cx, cy) + grow:
            return 0.0, None
    wall_t, wall_normal = walls(origin, direction, heights, spacing, origin_xy, grow)
    best = (wall_t, wall_normal)

    def g(t, i, j):
        p = origin[None, :] + np.multiply.outer(t, direction)
        xc = np.clip(p[..., 0], origin_xy[0] + spacing[0] * i, origin_xy[0] + spacing[0] * (i + 1))
        yc = np.clip(p[..., 1], origin_xy[1] + spacing[1] * j, origin_xy[1] + spacing[1] * (j + 1))
        return p[..., 2] - _bilinear_height(heights, spacing, origin_xy, xc, yc) - grow

    for j in range(ny - 1):
        for i in range(nx - 1):
            lo, hi = 0.0, np.inf
            for axis, k in ((0, i), (1, j)):
                a = origin_xy[axis] + spacing[axis] * k
                b = a + spacing[axis]
                if direction[axis] == 0:
                    if not a <= origin[axis] <= b:
                        lo, hi = 1.0, 0.0
                    continue
                ta, tb = sorted(
                    ((a - origin[axis]) / direction[axis], (b - origin[axis]) / direction[axis])
                )
                lo, hi = max(lo, ta), min(hi, tb)
            if not lo <= hi or lo >= best[0]:
                continue
            if not np.isfinite(hi):  # vertical ray: the surface is a constant there
                hi = lo + (origin[2] - heights.min() + 1.0) / max(-direction[2], 1e-300)
            ts = np.linspace(lo, hi, samples)
            values = g(ts, i, j)
            below = np.flatnonzero(values <= 0)
            if below.size == 0:
                continue
            k = below[0]
            if k == 0:
                t = lo
            else:
                a, b = ts[k - 1], ts[k]
                for _ in range(80):
                    m = 0.5 * (a + b)
                    if g(np.array([m]), i, j)[0] <= 0:
                        b = m
                    else:
                        a = m
                t = b
            if t < best[0] - 1e-12 * max(1.0, t):
                p = origin + t * direction
                U = (p[0] - origin_xy[0]) / spacing[0] - i
                V = (p[1] - origin_xy[1]) / spacing[1] - j
                h00, h10, h01, h11 = (
                    heights[j, i],
                    heights[j, i + 1],
                    heights[j + 1, i],
                    heights[j + 1, i + 1],
                )
                du = ((h10 - h00) * (1 - V) + (h11 - h01) * V) / spacing[0]
                dv = ((h01 - h00) * (1 - U) + (h11 - h10) * U) / spacing[1]
                n = np.array([-du, -dv, 1.0])
                on_cell_edge = min(U, 1 - U, V, 1 - V) < 1e-9  # the gradient may jump there
                best = (t, None if on_cell_edge else n / np.linalg.norm(n))
    if not np.isfinite(best[0]):
        return None
    return best


# -- comparing core with the references ------------------------------------------------------


def field_and_args(
    heights,
    spacing=(1.0, 1.0),
    origin=(0.0, 0.0),
    surface="TRIANGLES",
    diagonals=None,
):
    heights = np.asarray(heights, dtype=float)
    field = Heightfield(heights, spacing, origin, surface=surface, diagonals=diagonals)
    return field, (heights, spacing, origin, diagonals)


def cast(field, origins, directions, max_distance=np.inf):
    """raycast with one direction (or origin) broadcast over the batch."""
    origins, directions = np.broadcast_arrays(
        np.atleast_2d(np.asarray(origins, float)), np.atleast_2d(np.asarray(directions, float))
    )
    return raycast(field, origins, directions, max_distance=max_distance)


def reference(args, surface, origin, direction, grow=MARGIN):
    solve = reference_bilinear if surface == "BILINEAR" else reference_triangles
    return solve(args, origin, direction, grow)


def check_against_reference(
    field, args, origins, directions, max_distance=np.inf, closed=False, tolerance=1e-8
):
    """Every ray agrees with the brute-force reference: hit or miss, distance, normal, cell.
    ``closed``: compare with the closed solid only (named edge cases); otherwise rays whose
    answer changes when the solid grows or shrinks by 1e-9 are skipped as ambiguous.
    Returns the number of rays compared."""
    origins = np.atleast_2d(np.asarray(origins, float))
    directions = np.atleast_2d(np.asarray(directions, float))
    limits = np.broadcast_to(max_distance, (len(origins),))
    hits = raycast(field, origins, directions, max_distance=max_distance)
    heights, spacing, origin_xy, _ = args
    compared = 0
    for row, (o, d) in enumerate(zip(origins, directions)):
        expected = reference(args, field.surface, o, d, MARGIN)
        if expected is not None and expected[0] > limits[row] + 1e-9:
            expected = None
        if not closed:
            shrunk = reference(args, field.surface, o, d, -MARGIN)
            if shrunk is not None and shrunk[0] > limits[row] + 1e-9:
                shrunk = None
            if (expected is None) != (shrunk is None) or (
                expected is not None and abs(expected[0] - shrunk[0]) > 1e-6 * max(1, expected[0])
            ):
                continue
        compared += 1
        if expected is None:
            assert not hits.hit[row], f"row {row}: false hit at {hits.distance[row]} ({o}, {d})"
            continue
        # Distances from the solid itself (growing it moves grazing hits by 1e-9 / slope).
        exact = reference(args, field.surface, o, d, 0.0)
        t, normal = exact if exact is not None else expected
        if expected[1] is None:  # on an edge of the grown solid: several normals
            normal = None
        assert hits.hit[row], (
            f"row {row}: missed, reference distance {t} ({o.tolist()}, {d.tolist()})"
        )
        assert abs(hits.distance[row] - t) <= tolerance * max(1.0, t), (row, hits.distance[row], t)
        unit = d / np.linalg.norm(d)
        np.testing.assert_allclose(
            hits.point[row], o + hits.distance[row] * unit, atol=1e-12 * max(1, t)
        )
        assert abs(np.linalg.norm(hits.normal[row]) - 1) < 1e-12
        if t == 0:
            np.testing.assert_allclose(hits.normal[row], -unit, atol=1e-12)
        elif normal is not None:
            np.testing.assert_allclose(hits.normal[row], normal, atol=1e-6, err_msg=f"row {row}")
        # The reported cell holds the hit point.
        i, j = hits.cell[row]
        U = (hits.point[row][0] - origin_xy[0]) / spacing[0]
        V = (hits.point[row][1] - origin_xy[1]) / spacing[1]
        assert i - 1e-7 <= U <= i + 1 + 1e-7 and j - 1e-7 <= V <= j + 1 + 1e-7, (row, i, j, U, V)
    return compared


def random_rays(rng, args, count, spread=3.0):
    heights, spacing, origin, _ = args
    ny, nx = np.shape(heights)
    center = np.array(
        [
            origin[0] + spacing[0] * (nx - 1) / 2,
            origin[1] + spacing[1] * (ny - 1) / 2,
            float(np.mean(heights)),
        ]
    )
    size = max(spacing[0] * (nx - 1), spacing[1] * (ny - 1), np.ptp(heights), 1.0)
    origins = center + rng.normal(0, spread * size / 3, (count, 3))
    targets = center + rng.uniform(-0.6, 0.6, (count, 3)) * [
        spacing[0] * (nx - 1),
        spacing[1] * (ny - 1),
        np.ptp(heights) + 1,
    ]
    directions = np.where(
        rng.random((count, 1)) < 0.7, targets - origins, rng.normal(size=(count, 3))
    )
    return origins, directions


TERRAINS = {
    "random": lambda rng: rng.normal(0, 1, (5, 6)).round(2),
    "spikes": lambda rng: np.where(rng.random((6, 6)) < 0.15, 6.0, 0.0),
    "plateau": lambda rng: np.pad(np.full((3, 4), 2.0), 1),
    "cliff": lambda rng: np.where(np.arange(6)[None, :] < 3, 5.0, -1.0) + np.zeros((5, 1)),
    "negative": lambda rng: -10.0 - rng.random((4, 5)) * 3,
    "flat": lambda rng: np.zeros((3, 3)),
    "tiny": lambda rng: rng.normal(0, 1, (2, 2)),
}


@pytest.mark.parametrize("surface", ["TRIANGLES", "BILINEAR"])
@pytest.mark.parametrize("name", sorted(TERRAINS))
def test_terrains_match_brute_force(name, surface):
    # crc32, not hash(): str hashes change from one process to the next (PYTHONHASHSEED)
    rng = np.random.default_rng(zlib.crc32(f"{name} {surface}".encode()))
    heights = TERRAINS[name](rng)
    spacing = tuple(rng.uniform(0.5, 2.0, 2))
    origin = tuple(rng.uniform(-3, 3, 2))
    diagonals = rng.random((heights.shape[0] - 1, heights.shape[1] - 1)) < 0.5
    for diag in [None, diagonals] if surface == "TRIANGLES" else [None]:
        field, args = field_and_args(heights, spacing, origin, surface, diag)
        origins, directions = random_rays(rng, args, 120 if surface == "TRIANGLES" else 60)
        compared = check_against_reference(field, args, origins, directions)
        assert compared >= 0.95 * len(origins)


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    ny=st.integers(2, 11),
    nx=st.integers(2, 11),
    surface=st.sampled_from(["TRIANGLES", "BILINEAR"]),
    with_diagonals=st.booleans(),
    integer_heights=st.booleans(),
)
def test_random_terrains_match_brute_force(seed, ny, nx, surface, with_diagonals, integer_heights):
    rng = np.random.default_rng(seed)
    heights = rng.normal(0, 2, (ny, nx))
    if integer_heights:
        heights = heights.round()
    diagonals = rng.random((ny - 1, nx - 1)) < 0.5 if with_diagonals else None
    field, args = field_and_args(
        heights, tuple(rng.uniform(0.3, 3, 2)), tuple(rng.uniform(-5, 5, 2)), surface, diagonals
    )
    origins, directions = random_rays(rng, args, 16)
    # Integer grid points and axis-aligned directions, where ties are the rule.
    if integer_heights:
        origins[:4, :2] = origins[:4, :2].round()
        directions[:2, :2] = 0.0
        directions[2:4, rng.integers(2)] = 0.0
    directions[np.all(directions == 0, axis=1)] = [0, 0, -1]
    # Only rays the reference cannot decide (a 1e-9 change of the solid changes their
    # answer) are left out: nearly all must be compared.
    compared = check_against_reference(field, args, origins, directions, closed=False)
    assert compared >= 0.85 * len(origins)


# -- named edge cases (the closed solid: touching counts as a hit) --------------------------

SPIKE = np.zeros((7, 7))
SPIKE[3, 3] = 4.0


def test_vertical_rays_at_every_vertex_and_cell_centre():
    rng = np.random.default_rng(7)
    heights = rng.integers(-3, 4, (5, 6)).astype(float)
    diagonals = rng.random((4, 5)) < 0.5
    for surface, diag in (("TRIANGLES", None), ("TRIANGLES", diagonals), ("BILINEAR", None)):
        field, args = field_and_args(heights, surface=surface, diagonals=diag)
        xs, ys = np.meshgrid(np.arange(0, 5.5, 0.5), np.arange(0, 4.5, 0.5))
        points = np.stack([xs.ravel(), ys.ravel()], axis=1)
        down = np.column_stack([points, np.full(len(points), 10.0)])
        hits = cast(field, down, [0, 0, -1])
        assert hits.hit.all()
        expected = 10.0 - field.height_at(points[:, 0], points[:, 1])
        np.testing.assert_allclose(hits.distance, expected, atol=1e-12)
        # At vertices the height is the vertex's own, exactly.
        at_vertex = (points == points.round()).all(axis=1)
        ij = points[at_vertex].astype(int)
        np.testing.assert_array_equal(hits.point[at_vertex][:, 2], heights[ij[:, 1], ij[:, 0]])
        # The far boundary belongs to the last cell.
        assert hits.cell[:, 0].max() == 4 and hits.cell[:, 1].max() == 3
        check_against_reference(field, args, down[::7], [[0, 0, -1]] * len(down[::7]), closed=True)
        # From below, inside the footprint: inside the solid.
        up = cast(field, np.column_stack([points, np.full(len(points), -10.0)]), [0, 0, 1])
        assert up.hit.all() and (up.distance == 0).all()


@pytest.mark.parametrize("surface", ["TRIANGLES", "BILINEAR"])
def test_rays_along_grid_lines_and_through_vertices(surface):
    rng = np.random.default_rng(3)
    heights = rng.integers(0, 5, (6, 6)).astype(float)
    field, args = field_and_args(heights, surface=surface)
    origins, directions = [], []
    for line in range(6):
        for z in (0.5, 2.0, 3.0, 4.0, 4.5):
            origins += [[-2.0, line, z], [7.0, line, z], [line, -2.0, z], [line, 7.0, z]]
            directions += [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]]
    for start in range(-2, 3):  # diagonals through lattice points, level and descending
        for slope in (0.0, -0.25, -0.5):
            origins += [[start, 0, 5.0], [start + 5, 5, 5.0]]
            directions += [[1, 1, slope], [-1, -1, slope]]
    check_against_reference(field, args, origins, directions, closed=True)


@pytest.mark.parametrize("surface", ["TRIANGLES", "BILINEAR"])
def test_rays_grazing_a_spike_tip_hit_it(surface):
    field, args = field_and_args(SPIKE, surface=surface)
    origins = [[0, 3, 4.0], [3, 0, 4.0], [6, 3, 4.0], [0, 0, 4.0], [0, 3, 4.75], [0, 6, 4.0]]
    directions = [[1, 0, 0], [0, 1, 0], [-1, 0, 0], [1, 1, 0], [1, 0, -0.25], [1, -1, 0]]
    hits = raycast(field, origins, directions)
    assert hits.hit.all()
    np.testing.assert_allclose(hits.point, [[3, 3, 4]] * 6, atol=1e-12)
    # Just above the tip: a miss.
    assert not raycast(field, [0, 3, 4.0 + 1e-6], [1, 0, 0]).hit
    check_against_reference(field, args, origins, directions, closed=True)


@pytest.mark.parametrize("surface", ["TRIANGLES", "BILINEAR"])
def test_side_walls(surface):
    heights = np.array([[1.0, 2.0, 3.0], [2.0, 5.0, 1.0], [0.0, 1.0, 2.0]])
    field, args = field_and_args(heights, spacing=(2.0, 1.0), origin=(10.0, 20.0), surface=surface)
    cases = [  # (origin, direction, outward normal); edge heights are linear along the edge
        ([5.0, 20.5, 1.0], [1, 0, 0], [-1, 0, 0]),  # x = 10 wall, edge height 1.5 there
        ([20.0, 21.0, 0.5], [-1, 0, 0], [1, 0, 0]),  # x = 14 wall, height 1
        ([11.0, 15.0, 1.0], [0, 1, 0], [0, -1, 0]),  # y = 20 wall, height 1.5
        ([13.0, 30.0, 1.4], [0, -1, 0], [0, 1, 0]),  # y = 22 wall, height 1.5
        ([5.0, 21.0, -1e6], [1, 0, 0.001], [-1, 0, 0]),  # far below: still the wall
    ]
    origins = [c[0] for c in cases]
    directions = [c[1] for c in cases]
    hits = raycast(field, origins, directions)
    assert hits.hit.all()
    np.testing.assert_allclose(hits.normal, [c[2] for c in cases], atol=1e-15)
    np.testing.assert_allclose(hits.distance[:4], [5.0, 6.0, 5.0, 8.0])
    check_against_reference(field, args, origins, directions, closed=True)
    # Above the edge: over the wall and onto the surface (or beyond).
    over = [[5.0, 21.0, 5.5], [5.0, 20.5, 1.6]]
    check_against_reference(field, args, over, [[1, 0, -0.1], [1, 0, 0]], closed=True)
    # Beside the footprint: no terrain there.
    assert not cast(field, [[9.0, 21.0, 10.0], [15.0, 21.0, 0.0]], [0, 0, -1]).hit.any()


def test_origin_inside_and_max_distance():
    field, args = field_and_args(SPIKE)
    hits = raycast(
        field, [[3, 3, 3.9], [2.5, 2.5, -100], [3, 3, 4.0]], [[1, 2, 3], [0, 0, -1], [0, 0, 1]]
    )
    assert hits.hit.all() and (hits.distance == 0).all()
    np.testing.assert_allclose(hits.point, [[3, 3, 3.9], [2.5, 2.5, -100], [3, 3, 4]])
    down = cast(field, [[3, 3, 10]] * 3, [0, 0, -1], max_distance=[5.9, 6.0, 6.1])
    np.testing.assert_array_equal(down.hit, [False, True, True])
    assert down.distance[1] == 6.0
    # Up and away, or above everything: misses.
    assert not raycast(field, [[3, 3, 5], [0, 0, 4.5]], [[0, 0, 1], [1, 1, 0]]).hit.any()


def test_negative_heights_and_huge_coordinates():
    heights = -1000.0 - np.arange(12.0).reshape(3, 4)
    field, args = field_and_args(heights, spacing=(0.5, 0.25), origin=(1e6, -2e6))
    rng = np.random.default_rng(5)
    origins = np.column_stack(
        [
            1e6 + rng.uniform(-1, 2.5, 50),
            -2e6 + rng.uniform(-0.5, 1, 50),
            rng.uniform(-1020, -990, 50),
        ]
    )
    directions = rng.normal(size=(50, 3))
    check_against_reference(field, args, origins, directions, tolerance=1e-7)


def test_placed_rotated_and_scaled_terrain():
    rng = np.random.default_rng(11)
    heights = rng.normal(0, 1, (5, 5))
    field, args = field_and_args(heights, spacing=(0.7, 1.3), origin=(-1, 2))
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    matrix = np.eye(4)
    matrix[:3, :3] = q @ np.diag([2.0, 0.5, 1.5])
    matrix[:3, 3] = [3, -2, 1]
    inverse = np.linalg.inv(matrix)
    placed = Placed(field, matrix)
    local_origins, local_directions = random_rays(rng, args, 80)
    origins = local_origins @ matrix[:3, :3].T + matrix[:3, 3]
    directions = local_directions @ matrix[:3, :3].T
    hits = raycast(placed, origins, directions)
    checked = 0
    for row in range(80):
        lo = inverse[:3, :3] @ origins[row] + inverse[:3, 3]
        ld = inverse[:3, :3] @ directions[row]
        a, b = (reference(args, "TRIANGLES", lo, ld, g) for g in (MARGIN, -MARGIN))
        if (a is None) != (b is None):
            continue
        checked += 1
        if a is None:
            assert not hits.hit[row]
            continue
        local_point = lo + a[0] * ld / np.linalg.norm(ld)
        point = matrix[:3, :3] @ local_point + matrix[:3, 3]
        assert hits.hit[row]
        np.testing.assert_allclose(hits.point[row], point, atol=1e-8)
        np.testing.assert_allclose(
            hits.distance[row], np.linalg.norm(point - origins[row]), atol=1e-8
        )
        if a[1] is not None and a[0] > 0:
            normal = inverse[:3, :3].T @ a[1]
            np.testing.assert_allclose(hits.normal[row], normal / np.linalg.norm(normal), atol=1e-6)
    assert checked >= 75 and hits.cell is not None


# -- a thin spike ----------------------------------------------------------------------------


def spike_rays(count, rng):
    """Near-horizontal rays through the spike's upper half, from all around."""
    angle = rng.uniform(0, 2 * np.pi, count)
    offset = rng.uniform(-0.2, 0.2, count)
    height = rng.uniform(3.0, 3.9, count)
    horizontal = np.column_stack([np.cos(angle), np.sin(angle)])
    side = np.column_stack([-horizontal[:, 1], horizontal[:, 0]])
    distance = rng.uniform(2.5, 3.0, count)
    start = 3.0 - distance[:, None] * horizontal + offset[:, None] * side
    origins = np.column_stack([start, height])
    directions = np.column_stack([horizontal, rng.uniform(-0.02, 0.02, count)])
    return origins, directions


def test_the_walk_hits_a_one_vertex_spike():
    # Along y = 3 at z = 3.5 the spike is above the ray for |x - 3| <= 1/8 (a sampling
    # search with half-cell steps, bench/march.py, jumps over it).
    one = [0.2, 3.0, 3.5], [1.0, 0.0, 0.0]
    exact = raycast(Heightfield(SPIKE), *one)
    assert exact.hit and exact.distance == pytest.approx(2.675, abs=1e-12)
    rng = np.random.default_rng(2)
    origins, directions = spike_rays(600, rng)
    exact = raycast(Heightfield(SPIKE), origins, directions)
    field, args = field_and_args(SPIKE)
    check_against_reference(field, args, origins[:150], directions[:150])
    assert exact.hit.sum() > 150


# -- the hierarchy, big grids, many rays -----------------------------------------------------


def test_hierarchy_is_lazy_and_cached():
    """Built on first use, then kept (its build time is measured by bench_heightfield, not
    here: a timed test only measures the machine's load)."""
    rng = np.random.default_rng(0)
    field = Heightfield(rng.random((256, 256)))
    assert field._above._hierarchy is None
    first = field.hierarchy
    assert field.hierarchy is first


def test_held_arrays_follow_what_a_terrain_builds_and_may_be_frozen():
    """What a cache holding the terrain is charged for: its arrays, then its hierarchy once
    built, then its mirror image once a ray came from below (a surface); frozen
    (read-only) they answer the same."""
    rng = np.random.default_rng(3)
    heights = rng.random((70, 90))
    field = Heightfield(heights, spacing=0.5, diagonals=rng.random((69, 89)) < 0.5, solid=False)
    xy = np.column_stack([rng.uniform(0, 44, 500), rng.uniform(0, 34, 500)])
    tilt = rng.normal(size=(500, 2)) * 0.3
    above = (np.column_stack([xy, np.full(500, 3.0)]), np.column_stack([tilt, -np.ones(500)]))
    below = (np.column_stack([xy, np.full(500, -2.0)]), np.column_stack([tilt, np.ones(500)]))

    def held():
        return {id(array) for array in field.held_arrays()}

    built = held()
    assert {id(field.heights), id(field.diagonals)} <= built
    size = sys.getsizeof(field)  # what dask's memory accounting reads
    assert size >= field.heights.nbytes + field.diagonals.nbytes
    from_above = raycast(field, *above)
    block_max, reach, inner_reach = field.hierarchy
    levels = {id(block_max)} | {id(nodes) for _, nodes, _ in (*reach, *inner_reach)}
    assert built < held() and levels <= held()
    assert sys.getsizeof(field) >= size + block_max.nbytes
    assert held() == held()  # only what it holds, nothing built by asking
    queried_from_above = held()
    from_below = raycast(field, *below)
    assert from_above.hit.any() and from_below.hit.any()
    if backend() == "numpy":
        assert queried_from_above < held()  # the mirror image and its hierarchy
    else:  # the kernel's arguments join both terrains at the first query
        assert field._below is not None and queried_from_above == held()
        kernel_arrays = [a for a in field.kernel_arguments("raycast") if isinstance(a, np.ndarray)]
        assert {id(array) for array in kernel_arrays} <= held()

    for array in field.held_arrays():
        array.setflags(write=False)
    for rays, before in ((above, from_above), (below, from_below)):
        after = raycast(field, *rays)
        np.testing.assert_array_equal(after.distance, before.distance)
        np.testing.assert_array_equal(after.normal, before.normal)


def test_many_rays_on_a_larger_grid_match_a_sample_of_the_reference():
    rng = np.random.default_rng(9)
    heights = np.cumsum(rng.normal(0, 1, (40, 50)), axis=1)
    heights[rng.integers(0, 40, 10), rng.integers(0, 50, 10)] += 15  # spikes
    field, args = field_and_args(heights, spacing=(0.5, 0.5))
    n = 20_000  # several chunks
    origins = np.column_stack(
        [
            rng.uniform(-2, 27, n),
            rng.uniform(-2, 22, n),
            rng.uniform(heights.max(), heights.max() + 5, n),
        ]
    )
    directions = np.column_stack([rng.normal(0, 0.6, (n, 2)), -np.ones(n)])
    hits = raycast(field, origins, directions)
    rows = rng.choice(n, 60, replace=False)
    check_against_reference(field, args, origins[rows], directions[rows])
    # No point of any hit ray lies in the solid before its hit (sampled).
    unit = directions / np.linalg.norm(directions, axis=1, keepdims=True)
    ts = hits.distance[hits.hit, None] * np.linspace(0, 1, 50, endpoint=False)[None, 1:]
    points = origins[hits.hit, None, :] + ts[..., None] * unit[hits.hit, None, :]
    heights_under = field.height_at(points[..., 0], points[..., 1])
    assert not (points[..., 2] < heights_under - 1e-9).any()


def multi_block_terrain(rng, ny, nx):
    """Several hierarchy blocks of everything: rolling hills, spikes, a plateau, a cliff."""
    y, x = np.mgrid[0:ny, 0:nx]
    heights = 3 * np.sin(x / 7.0) * np.cos(y / 11.0) + rng.normal(0, 0.3, (ny, nx))
    heights[rng.integers(0, ny, 12), rng.integers(0, nx, 12)] += 12.0  # one-vertex spikes
    heights[5:20, 30:50] = 4.0  # plateau
    heights[:, 60:] -= 6.0  # cliff
    return heights.round(3)


def mixed_rays(rng, heights, spacing, count):
    """Rays from above with tilt, near-horizontal grazing rays, rays from the sides below the
    edges and upward rays, over a footprint of several blocks."""
    ny, nx = heights.shape
    width, depth = spacing[0] * (nx - 1), spacing[1] * (ny - 1)
    lo, hi = heights.min(), heights.max()
    kind = rng.integers(0, 4, count)
    origins = np.column_stack(
        [
            rng.uniform(-0.1 * width, 1.1 * width, count),
            rng.uniform(-0.1 * depth, 1.1 * depth, count),
            rng.uniform(hi, hi + 5, count),
        ]
    )
    directions = np.column_stack([rng.normal(0, 0.5, (count, 2)), -np.ones(count)])
    grazing = kind == 1
    origins[grazing, 2] = rng.uniform(lo, hi, grazing.sum())
    directions[grazing] = np.column_stack(
        [rng.normal(0, 1, (grazing.sum(), 2)), rng.normal(0, 0.03, grazing.sum())]
    )
    side = kind == 2
    origins[side, 0] = -1.0
    origins[side, 2] = rng.uniform(lo - 2, hi, side.sum())
    directions[side] = np.column_stack(
        [np.ones(side.sum()), rng.normal(0, 0.5, side.sum()), rng.normal(0, 0.1, side.sum())]
    )
    up = kind == 3
    origins[up, 2] = rng.uniform(lo - 1, hi, up.sum())
    directions[up, 2] = rng.uniform(0.01, 0.5, up.sum())
    return origins, directions


@pytest.mark.parametrize(
    "surface,diagonal", [("TRIANGLES", False), ("TRIANGLES", True), ("BILINEAR", False)]
)
def test_multi_block_grids_match_brute_force(surface, diagonal):
    """Grids of many blocks and pyramid levels: the skips and block walk never lose a hit."""
    rng = np.random.default_rng(17 + diagonal)
    shape = (37, 70) if surface == "TRIANGLES" else (20, 66)
    heights = multi_block_terrain(rng, *shape)
    diagonals = rng.random((shape[0] - 1, shape[1] - 1)) < 0.5 if diagonal else None
    spacing = (0.75, 1.25)
    field, args = field_and_args(heights, spacing, (-3.0, 4.0), surface, diagonals)
    origins, directions = mixed_rays(rng, heights, spacing, 160 if surface == "TRIANGLES" else 40)
    origins[:, :2] += (-3.0, 4.0)
    compared = check_against_reference(field, args, origins, directions, tolerance=1e-7)
    assert compared >= 0.95 * len(origins)


# -- bad input -------------------------------------------------------------------------------


def test_bad_input_names_the_argument():
    good = np.zeros((3, 3))
    with pytest.raises(ValueError, match=r"heights must be a 2D array"):
        Heightfield(np.zeros(5))
    with pytest.raises(ValueError, match=r"heights must be at least 2x2"):
        Heightfield(np.zeros((1, 5)))
    bad = good.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"heights\[2, 1\] \(row 2\) is nan"):
        Heightfield(bad)
    bad[2, 1] = np.inf
    with pytest.raises(ValueError, match=r"heights\[2, 1\]"):
        Heightfield(bad)
    for spacing in [(0, 1), (1, -2), (np.nan, 1), (1, 2, 3)]:
        with pytest.raises(ValueError, match="spacing"):
            Heightfield(good, spacing=spacing)
    with pytest.raises(ValueError, match="origin"):
        Heightfield(good, origin=(np.inf, 0))
    with pytest.raises(ValueError, match=r"diagonals must have shape \(2, 2\)"):
        Heightfield(good, diagonals=np.zeros((3, 3), bool))
    with pytest.raises(ValueError, match=r"diagonals must be booleans: diagonals\[1, 0\]"):
        Heightfield(good, diagonals=[[0, 1], [2, 0]])
    with pytest.raises(ValueError, match="surface must be one of TRIANGLES, BILINEAR"):
        Heightfield(good, surface="SMOOTH")
    with pytest.raises(TypeError, match="method"):
        Heightfield(good, method="EXACT")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="heights must be a 2D array of numbers"):
        Heightfield([["a", "b"], ["c", "d"]])
