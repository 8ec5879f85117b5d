"""Compiled ray vs Heightfield (EXACT): the one-ray form of core/heightfield/ (shape.py,
walk.py, surfaces.py), which stays the reference and documents the math.

Per ray, as the reference does for all rays at once, in four phases:
* set-up and clipping: the ray in grid units, clipped to the footprint box (a solid under
  its top, a surface between the mirror's top and its own; a ray below a surface walks the
  mirror image, z and the heights negated, with the mirror's hierarchy);
* hierarchy skip: one skip per pyramid level, coarsest first, then FINE_SKIPS at the block
  level (ray_walk.pyramid_skip), for a group of GROUP rays together;
* cell walk: blocks, and inside each block the ray comes down into, cells Amanatides-Woo,
  each cell's two triangles (or its bilinear patch) tested on the closed stretch of the ray
  over it against the cell's own tolerance (ray_walk.walk with ray_cells.py's cell test);
* finish: the hit, its normal (a solid's side walls, a surface's side facing the ray) and
  cell in world space, or a segment's blocked flag.
Every expression is the reference's, operand for operand, so both backends give the same
bits (float64, no fastmath: LLVM neither reorders nor fuses), and touching within a
tolerance is decided the same way.

Written like PhysX's traceSegment or MuJoCo's mj_rayHfield: one ray at a time, a few
scalars of state, stopping at the first hit. The phases are helpers, which LLVM inlines into
the one compiled walk per model (``_make_trace``: TRIANGLES or BILINEAR, solid or surface,
ray or segment), each holding only its model's code: the model's choices are made in the
walk, never passed on to a helper. Memory (prefetching, coherent order) is ray_order.py's.

Arguments (Heightfield.kernel_arguments): ray_arguments.RayArguments.
"""

import math

import numpy as np
from numba import njit

from ..kernel_common import (
    INF,
    NAN,
    borrowed,
    clamp,
    finite,
    helper,
    maximum,
    minimum,
    normal_to_world,
    segment_blocked,
    segment_ray,
    slab,
    to_local,
    unit,
)
from .ray_cells import cell_bilinear, cell_triangles, surface_height
from .ray_order import (
    AHEAD,
    PREFETCH_MIN_CELLS,
    _ordered_rays,
    _prefetch_ray,
    _scatter_hits,
    in_coherent_order,
)
from .ray_walk import pyramid_skip, walk
from .walk import FINE_SKIPS

GROUP = 4  # rays moved on by the hierarchy together (see _skip_group)

# A group's state, a record per ray (one array: each array more would be a compile of
# np.empty of its own): the set-up, then the skips.
STATE = np.dtype(
    [
        ("valid", np.bool_),  # set up (finite input, a direction)
        ("ox", np.float64),  # the world origin (a segment's trimmed start)
        ("oy", np.float64),
        ("oz", np.float64),
        ("ux", np.float64),  # the unit world direction
        ("uy", np.float64),
        ("uz", np.float64),
        ("lux", np.float64),  # the unit local direction
        ("luy", np.float64),
        ("luz", np.float64),
        ("limit", np.float64),  # how far to look (world)
        ("segment_length", np.float64),  # a segment's length (1.0 for a ray)
        ("stretch", np.float64),  # local distance per world distance
        ("terrain", np.int64),  # 0 the terrain as given, 1 its mirror image
        ("U0", np.float64),  # the walk's ray: grid units, z negated on the mirror image
        ("V0", np.float64),
        ("du", np.float64),
        ("dv", np.float64),
        ("dz", np.float64),
        ("wz", np.float64),
        ("face", np.int64),  # face entered: 0 origin inside, 1 x wall, 2 y wall, 3 top
        ("t0", np.float64),  # the clipped stretch (local distance)
        ("t1", np.float64),
        ("inv_dz", np.float64),  # the skips': 1 / dz descending, else 0,
        ("inv_chebyshev", np.float64),  # and (1 - 1e-9) / max(|du|, |dv|)
        ("skips", np.int64),  # how many skips the ray takes,
        ("tc", np.float64),  # and where they have brought it
    ]
)


@helper
def _ray_of(ox, oy, oz, ex, ey, ez, limit):
    """A ray's row: (valid, origin, unit direction, limit, segment length 1.0); valid where
    its input is finite and its direction not zero."""
    ux, uy, uz = unit(ex, ey, ez)
    valid = finite(ox, oy, oz) and finite(ex, ey, ez) and (ex != 0 or ey != 0 or ez != 0)
    return valid, ox, oy, oz, ux, uy, uz, limit, 1.0


@helper
def _segment_of(sx, sy, sz, ex, ey, ez, trim):
    """A segment's row as a ray (reference.segment_rays, then the segment trimmed by
    ``trim`` of its length at both ends): (valid, origin, unit direction, trimmed length,
    segment length); valid where its input is finite."""
    if not (finite(sx, sy, sz) and finite(ex, ey, ez)):
        return False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    ox, oy, oz, ux, uy, uz, limit, length = segment_ray(sx, sy, sz, ex, ey, ez, trim, 3)
    return True, ox, oy, oz, ux, uy, uz, limit, length


@helper
def _set_up(ray, arguments, placement, ox, oy, oz, ux, uy, uz, limit, segment_length):
    """Keep a valid row's ray in its state record, and its local form in grid units
    (ray.py's _Rays): (U0, V0, oz, du, dv, dz, limit), local, for the clip."""
    lx, ly, lz, lux, luy, luz, stretch = to_local(placement, ox, oy, oz, ux, uy, uz)
    ray.ox, ray.oy, ray.oz = ox, oy, oz
    ray.ux, ray.uy, ray.uz = ux, uy, uz
    ray.lux, ray.luy, ray.luz = lux, luy, luz
    ray.limit, ray.segment_length, ray.stretch = limit, segment_length, stretch
    ray.U0 = (lx - arguments.x0) / arguments.dx
    ray.V0 = (ly - arguments.y0) / arguments.dy
    ray.du = lux / arguments.dx
    ray.dv = luy / arguments.dy
    return ray.U0, ray.V0, lz, ray.du, ray.dv, luz, limit * stretch


@helper
def _clip_solid(arguments, U0, V0, oz, du, dv, dz, limit):
    """(t0, t1, face, terrain) of ray.py's _clip: the stretch in the footprint box under the
    top, the face entered (0 origin inside, 1 x wall, 2 y wall, 3 top), and the terrain to
    walk: 0, the terrain as given (a solid has no underside)."""
    nx, ny, top = arguments.nx, arguments.ny, arguments.top_above
    enter_x, leave_x = slab(U0, du, 1.0 / du, 0.0, nx - 1.0, arguments.slack_x)
    enter_y, leave_y = slab(V0, dv, 1.0 / dv, 0.0, ny - 1.0, arguments.slack_y)
    to_top = (top - oz) / dz
    below = oz <= top
    if dz < 0:
        enter_z = to_top
    else:
        enter_z = -INF if below else INF
    if dz > 0:
        leave_z = to_top
    else:
        leave_z = INF if (below or dz < 0) else -INF
    t0 = maximum(maximum(enter_x, enter_y), maximum(enter_z, 0.0))
    t1 = minimum(minimum(leave_x, leave_y), minimum(leave_z, limit))
    to_bottom = (arguments.zmin - oz) / dz if dz < 0 else INF
    t1 = minimum(t1, maximum(to_bottom, t0))
    if t0 == 0.0:
        face = 0
    elif t0 == enter_x:
        face = 1
    elif t0 == enter_y:
        face = 2
    else:
        face = 3
    return t0, t1, face, np.int64(0)


@helper
def _clip_surface(arguments, bilinear, U0, V0, oz, du, dv, dz, limit):
    """(t0, t1, face, terrain) of ray.py's _cast_surface: the stretch over the footprint
    between the mirror's top and the terrain's, face 0 (a surface has no walls), and the
    terrain to walk: 1, the mirror image, where the ray starts the stretch below the
    surface, else 0."""
    nx, ny, heights = arguments.nx, arguments.ny, arguments.heights
    enter_x, leave_x = slab(U0, du, 1.0 / du, 0.0, nx - 1.0, arguments.slack_x)
    enter_y, leave_y = slab(V0, dv, 1.0 / dv, 0.0, ny - 1.0, arguments.slack_y)
    enter_z, leave_z = slab(oz, dz, 1.0 / dz, -arguments.top_mirror, arguments.top_above, 0.0)
    t0 = maximum(maximum(enter_x, enter_y), maximum(enter_z, 0.0))
    t1 = minimum(minimum(leave_x, leave_y), minimum(leave_z, limit))
    below = dz > 0
    if t0 <= t1 and not (t0 == enter_z and enter_z > 0):
        U = U0 + t0 * du
        V = V0 + t0 * dv
        i = np.int64(clamp(np.floor(U), 0.0, nx - 2.0))
        j = np.int64(clamp(np.floor(V), 0.0, ny - 2.0))
        k = j * nx + i
        anti = arguments.has_anti and arguments.anti_of[j * (nx - 1) + i] > 0
        h = surface_height(
            heights[k], heights[k + 1], heights[k + nx], heights[k + nx + 1],
            anti, bilinear, U - i, V - j,
        )  # fmt: skip
        below = oz + t0 * dz < h
    return t0, t1, np.int64(0), np.int64(below)


@helper
def _keep_clip(ray, t0, t1, face, terrain, oz, dz):
    """Keep the clip in the ray's state record: the stretch, the face entered, the terrain
    walked (the mirror image, terrain 1, with z and the heights negated), and the
    reciprocals its skips use; the ray is then set up."""
    ray.t0, ray.t1, ray.face, ray.terrain = t0, t1, face, terrain
    ray.wz = -oz if terrain == 1 else oz
    ray.dz = -dz if terrain == 1 else dz
    if t0 <= t1:
        ray.inv_dz = 1.0 / ray.dz if ray.dz < 0 else 0.0
        ray.inv_chebyshev = (1.0 - 1e-9) / maximum(abs(ray.du), abs(ray.dv))
    ray.valid = True


@helper
def _skip_group(arguments, state, group):
    """walk.start_walk for the ``group`` rays of ``state``: their skips, step by step
    together (per ray a chain of dependent reads and roundings; the CPU runs the group's
    chains at once). None for a ray not set up or whose clipped stretch is empty."""
    most = 0
    for member in range(group):
        ray = state[member]
        skips = 0
        if ray.valid and ray.t0 <= ray.t1:
            skips = arguments.reach_levels[ray.terrain] - 1 + FINE_SKIPS
        ray.skips = skips
        ray.tc = ray.t0
        most = skips if skips > most else most
    for skip in range(most):
        for member in range(group):
            ray = state[member]
            if skip < ray.skips:
                ray.tc = pyramid_skip(
                    arguments, skip, ray.terrain, ray.U0, ray.V0, ray.du, ray.dv, ray.dz,
                    ray.wz, ray.t1, ray.inv_dz, ray.inv_chebyshev, ray.tc,
                )  # fmt: skip


@helper
def _write_hit(out, row, ray, placement, solid, dx, dy, t, grad_u, grad_v, cell_i, cell_j):
    """Row ``row`` of ``out`` for the ray's walk (t, local; the gradient and cell where it
    hit): Heightfield._normal, a solid's side walls, a surface's side facing the ray, then
    the result as kernel_common.write_ray_hits writes it: a hit for 0 <= t <= limit; at t =
    0 a solid's normal is -direction, a surface keeps its own."""
    hit, distance, point, normal, cell = out
    normal_u = -grad_u / dx
    normal_v = -grad_v / dy
    length = math.sqrt(normal_u * normal_u + normal_v * normal_v + 1.0)
    nx_, ny_, nz_ = normal_u / length, normal_v / length, 1.0 / length
    face = ray.face
    if solid:
        if t == ray.t0 and (face == 1 or face == 2):
            nx_ = -np.sign(ray.du) if face == 1 else 0.0
            ny_ = -np.sign(ray.dv) if face == 2 else 0.0
            nz_ = 0.0
    elif nx_ * ray.lux + ny_ * ray.luy + nz_ * ray.luz > 0.0:
        nx_, ny_, nz_ = -nx_, -ny_, -nz_
    nx_, ny_, nz_ = normal_to_world(placement, nx_, ny_, nz_)
    t = t / ray.stretch
    found = t <= ray.limit and t < INF
    if found and t == 0.0 and solid:
        nx_, ny_, nz_ = -ray.ux, -ray.uy, -ray.uz
    gate = 1.0 if found else NAN
    t = t if found else INF
    hit[row] = found
    distance[row] = t
    point[row, 0] = ray.ox + (t * gate) * ray.ux
    point[row, 1] = ray.oy + (t * gate) * ray.uy
    point[row, 2] = ray.oz + (t * gate) * ray.uz
    normal[row, 0] = nx_ * gate
    normal[row, 1] = ny_ * gate
    normal[row, 2] = nz_ * gate
    cell[row, 0] = cell_i if found else -1
    cell[row, 1] = cell_j if found else -1


# Divisions by zero give inf or NaN as in numpy (the reference divides freely, e.g. by a
# zero direction component) instead of raising; the helpers are inlined into it.
def _make_trace(bilinear, solid, any_hit):
    """The walk compiled for one model: BILINEAR or TRIANGLES (``bilinear``), solid or surface,
    rays or segments (``any_hit``). The three are constants of the closure, so numba drops
    the branches of the other models before it types the function (its dead-branch pruning)
    and each compiled walk holds only the code its terrain runs."""

    @njit(cache=True, nogil=True, error_model="numpy")
    def trace(arguments, placement, origins, directions, max_distance, out, start, stop):
        """Rays start ... stop - 1, one at a time (ray.py's _intersect for each): returns the
        number of rows with non-finite input or a zero direction.

        ``any_hit``: the rows are segments (``origins`` the starts, ``directions`` the ends,
        ``max_distance[0]`` the fraction trimmed at both ends) and only ``out[0]`` is written,
        True where the segment is blocked (core/reference.py: the ray from the trimmed start
        over the trimmed length, as its numpy reference computes it); the walk is the same,
        it ends at the first cell that meets the segment."""
        # Views of the arrays that count no references, for the helpers (kernel_common.borrowed)
        arguments, placement, origins, directions, out = borrowed(
            (arguments, placement, origins, directions, out)
        )
        cell_test = cell_bilinear if bilinear else cell_triangles
        step = 1 if max_distance.shape[0] == origins.shape[0] else 0
        prefetching = arguments.nx * arguments.ny >= PREFETCH_MIN_CELLS
        bad = 0
        # Rays go in groups of GROUP: each is set up, then all take the hierarchy's skips
        # together (_skip_group), then each walks and finishes.
        state = np.empty(GROUP, dtype=STATE)
        for group_start in range(start, stop, GROUP):
            group = stop - group_start if stop - group_start < GROUP else GROUP
            # -- set-up and clipping --------------------------------------------------------
            for member in range(group):
                row = group_start + member
                ray = state[member]
                ray.valid = False
                # (any_hit first: numba prunes the prefetch from the segments' walk)
                if not any_hit and prefetching and row + AHEAD < stop:
                    _prefetch_ray(arguments, placement, origins, directions, row + AHEAD)
                ox, oy, oz = origins[row, 0], origins[row, 1], origins[row, 2]
                ex, ey, ez = directions[row, 0], directions[row, 1], directions[row, 2]
                if any_hit:
                    valid, ox, oy, oz, ux, uy, uz, limit, length = _segment_of(
                        ox, oy, oz, ex, ey, ez, max_distance[0]
                    )
                else:
                    valid, ox, oy, oz, ux, uy, uz, limit, length = _ray_of(
                        ox, oy, oz, ex, ey, ez, max_distance[row * step]
                    )
                if not valid:
                    bad += 1
                    continue
                U0, V0, lz, du, dv, dz, reach = _set_up(
                    ray, arguments, placement, ox, oy, oz, ux, uy, uz, limit, length
                )
                if solid:
                    t0, t1, face, terrain = _clip_solid(arguments, U0, V0, lz, du, dv, dz, reach)
                else:
                    t0, t1, face, terrain = _clip_surface(
                        arguments, bilinear, U0, V0, lz, du, dv, dz, reach
                    )
                _keep_clip(ray, t0, t1, face, terrain, lz, dz)
            # -- hierarchy skip -------------------------------------------------------------
            _skip_group(arguments, state, group)
            # -- cell walk and finish -------------------------------------------------------
            for member in range(group):
                ray = state[member]
                if not ray.valid:
                    continue
                t, grad_u, grad_v = INF, 0.0, 0.0
                cell_i, cell_j = np.int64(-1), np.int64(-1)
                if ray.t0 <= ray.t1 and ray.tc <= ray.t1:
                    t, grad_u, grad_v, cell_i, cell_j = walk(
                        cell_test, arguments, ray.terrain, ray.U0, ray.V0, ray.du, ray.dv,
                        ray.dz, ray.wz, ray.t1, ray.tc,
                    )  # fmt: skip
                    if ray.terrain == 1:  # the mirror's gradients, back to the terrain's
                        grad_u = -grad_u
                        grad_v = -grad_v
                row = group_start + member
                if any_hit:  # blocked: a hit within the trimmed segment (a point: inside a solid)
                    out[0][row] = segment_blocked(
                        t / ray.stretch, ray.limit, ray.segment_length, solid
                    )
                else:
                    _write_hit(
                        out, row, ray, placement, solid, arguments.dx, arguments.dy, t,
                        grad_u, grad_v, cell_i, cell_j,
                    )  # fmt: skip
        return bad

    return trace


# Every model's walk (compiled on its first call): (bilinear, solid, any_hit) -> kernel.
_TRACES = {
    (bilinear, solid, any_hit): _make_trace(bilinear, solid, any_hit)
    for bilinear in (False, True)
    for solid in (False, True)
    for any_hit in (False, True)
}


def _trace(arguments, any_hit):
    """The compiled walk for the terrain of ``arguments`` (its model: BILINEAR, solid) and
    the query (``any_hit``: occluded)."""
    return _TRACES[(arguments.bilinear, arguments.solid, any_hit)]


def raycast(arguments, placement, origins, directions, max_distance, out, start, stop):
    """Rays start ... stop - 1 (see core/backend.py): traced by the terrain's walk in their
    order, or on a large terrain in the order of the block they start over (_ordered_rays,
    then the walk on the gathered rays, then _scatter_hits). Plain Python choosing between
    kernels, so that the first query on a small terrain compiles only its walk."""
    trace = _trace(arguments, False)
    if not in_coherent_order(arguments.nx, arguments.ny, stop - start):
        return trace(arguments, placement, origins, directions, max_distance, out, start, stop)
    order, ordered_origins, ordered_directions, limits = _ordered_rays(
        arguments, placement, origins, directions, max_distance, start, stop
    )
    count = stop - start
    results = (
        np.empty(count, dtype=np.bool_),
        np.empty(count),
        np.empty((count, 3)),
        np.empty((count, 3)),
        np.empty((count, 2), dtype=np.int64),
    )
    bad = trace(
        arguments, placement, ordered_origins, ordered_directions, limits, results, 0, count
    )
    _scatter_hits(order, results, out)
    return bad


def occluded(arguments, placement, starts, ends, trim, out, start, stop):
    """Segments start ... stop - 1 (see backend.py and queries.py): out[0][row]
    True where the terrain meets the segment, trimmed by ``trim[0]`` of its length at both
    ends: the terrain's any-hit walk, which stops at the first cell that meets it and
    writes nothing but the flag."""
    trace = _trace(arguments, True)
    return trace(arguments, placement, starts, ends, trim, out, start, stop)
