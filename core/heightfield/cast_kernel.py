"""Compiled sphere cast vs Heightfield (TRIANGLES, solid and surface): the one-cast form of
cast.py, whose docstring has the math (faces, edge cylinders, vertex balls, the solid's walls
and corner lines; starts in overlap first; the path walked in stretches, blocks and cells
culled by their max/min inflated by R). Every expression is the reference's, operand for
operand, so both backends find the same contact (float64, no fastmath); the contact point is
the winning piece's (cell_nearest of that piece alone), where the reference takes the nearest
of the winning cell's pieces (the same point, up to rounding where two tie).

Per cast, like the ray walk (ray_kernel.py), in phases, each a helper of ``cast_rows``
(inlined, or called where its work dwarfs a call; the traversal in cast_walk_kernel.py, the
pieces' tests in cast_cells_kernel.py):

1. set-up: the cast in the terrain's frame, and the overlap at the start (``inside_solid``,
   ``nearest_around``, ``overlap_normal``: the nearest point of the cells within R, or
   within the bound of a start inside the solid);
2. clipping: the path clipped to the footprint box grown by R (``clip``);
3. hierarchy skip: per stretch of the path, the cells whose box grown by R the path meets
   before the best contact so far, blocks of cells culled first (``gather_stretch``);
4. cell walk: those cells tested in the order the path meets their boxes, until the best
   contact is in the stretch (``test_stretch``, stretch after stretch in ``walk``);
5. finish: the contact's point and normal (``contact``) and the answer written.

Pieces whose entry cannot be the least are not tested: the edges and corners of a triangle
whose face entry is valid, a side or corner shared with the next cell (that cell's to test),
a cell tested in an earlier stretch, an edge whose line passes clearly farther than R from
the path's. A cast of radius 0 is the ray clipped to the segment: the ray kernel answers it
(``sphere_cast``, after the casts' own pass).

Helpers called per cell take scalars (the cell's heights are read by their caller); the
phases, called per cast or per stretch, take the arrays as views without an owner
(kernel_common.borrowed), so that no call counts references.

Arguments (``cast_arguments``), small records unpacked by name: the ray kernel's tuple;
``footprint`` (x0, y0, dx, dy, nx, ny); ``heights`` (flat, diagonals (1.0 where anti),
whether there are any); ``bounds`` (solid, zmin, zmax, the scale of the coordinates for
EARLY); ``hierarchy`` (the blocks per row, the block and the cell extremes: cast.py's
_Geometry's minima and maxima as float32 pairs, extremes_float32).
"""

import numpy as np
from numba import njit

from ..kernel_common import (
    INF,
    NAN,
    borrowed,
    box_gap_squared,
    cast_direction,
    cast_to_local,
    cast_to_world,
    finite,
    helper,
    maximum,
    minimum,
    rare_helper,
    transform,
    write_cast,
)
from . import ray_kernel as ray_kernels
from .cast import _Geometry
from .cast_cells_kernel import ANY_PIECE, cell_nearest
from .cast_walk_kernel import (
    CELL_ROWS,
    FIRST_CELLS,
    HIGH,
    LOW,
    block_box,
    cell_range,
    clip,
    walk,
)
from .grid import BLOCK
from .ray_arguments import _read_only
from .ray_order import PREFETCH_MIN_CELLS, _ordered_rays, _prefetch, in_coherent_order

AHEAD = 4  # casts: prefetch_cast looks this far ahead


def cast_arguments(field):
    """The tuple the kernel takes (module docstring), from cast.py's own _Geometry."""
    g = _Geometry(field)
    anti = g.anti
    footprint = (float(g.x0), float(g.y0), float(g.dx), float(g.dy), int(g.nx), int(g.ny))
    heights = (
        _read_only(g.flat),
        _read_only(np.zeros(1) if anti is None else anti),
        anti is not None,
    )
    bounds = (bool(g.solid), float(g.zmin), float(g.zmax), float(g.scale))
    hierarchy = (
        int(g.nbx),
        _read_only(extremes_float32(g.block_min, g.block_max), np.float32),
        _read_only(extremes_float32(g.cell_min, g.cell_max), np.float32),
    )
    return (field.kernel_arguments("raycast"), footprint, heights, bounds, hierarchy)


def extremes_float32(least, largest):
    """Each cell's (or block's) least and largest height side by side in float32 (at 2 k +
    LOW and 2 k + HIGH), rounded outward (so they still bound its pieces; the culling only
    gets a little looser): one cache line holds eight cells' pairs, where two float64
    arrays took two lines for four (the walk's box tests had waited for those loads more
    than they computed)."""
    # Beyond float32's range a bound becomes +-inf, still outward: the casts and the
    # step past float32's largest value overflow by design.
    with np.errstate(over="ignore"):
        low = least.astype(np.float32)
        high = largest.astype(np.float32)
        low = np.where(low > least, np.nextafter(low, np.float32(-np.inf)), low)
        high = np.where(high < largest, np.nextafter(high, np.float32(np.inf)), high)
    return np.stack((low, high), axis=1).ravel()


@helper
def surface_at(flat, anti_of, has_anti, nx, ny, U, V):
    """surfaces.surface_at (TRIANGLES) at grid coordinates (U, V), clamped: height and
    gradient (dh/du, dh/dv)."""
    i = np.int64(minimum(maximum(np.floor(U), 0.0), nx - 2.0))
    j = np.int64(minimum(maximum(np.floor(V), 0.0), ny - 2.0))
    u, v = U - i, V - j
    k = j * nx + i
    h00, h10, h01, h11 = flat[k], flat[k + 1], flat[k + nx], flat[k + nx + 1]
    anti = has_anti and anti_of[j * (nx - 1) + i] > 0.0
    a0, a1 = h10 - h00, h11 - h01
    main_b0, main_b1 = h11 - h10, h01 - h00
    b0 = main_b1 if anti else main_b0
    b1 = main_b0 if anti else main_b1
    c1 = (h01 + h10 - h11) if anti else h00
    w = (1.0 - u - v) if anti else (u - v)
    if w >= 0:
        return h00 + a0 * u + b0 * v, a0, b0
    return c1 + a1 * u + b1 * v, a1, b1


@helper
def prefetch_cast(
    starts, ends, row, placement, x0, y0, dx, dy, nx, ny, zmin, zmax, flat, cell_extremes
):  # fmt: skip
    """Start loading what cast ``row`` will probably read, a few casts ahead (as the ray
    kernel's _prefetch_ray): the heights and cell extremes where its path enters the box
    top and halfway down to the lowest height."""
    sx, sy, sz = starts[row, 0], starts[row, 1], starts[row, 2]
    ex, ey, ez = ends[row, 0] - sx, ends[row, 1] - sy, ends[row, 2] - sz
    if placement is not None:
        inverse, translation = placement[0], placement[1]
        sx, sy, sz = transform(
            inverse, sx - translation[0], sy - translation[1], sz - translation[2]
        )
        ex, ey, ez = transform(inverse, ex, ey, ez)
    enter = (zmax - sz) / ez if (ez < 0 and sz > zmax) else 0.0
    bottom = (zmin - sz) / ez if ez < 0 else enter
    for t in (enter, 0.5 * (enter + bottom)):
        U = (sx + t * ex - x0) / dx
        V = (sy + t * ey - y0) / dy
        if abs(U) < INF and abs(V) < INF:
            i = np.int64(minimum(maximum(U, 0.0), nx - 2.0))
            j = np.int64(minimum(maximum(V, 0.0), ny - 2.0))
            _prefetch(flat, j * nx + i)
            _prefetch(flat, (j + 1) * nx + i)
            _prefetch(cell_extremes, 2 * (j * (nx - 1) + i) + LOW)


@helper
def inside_solid(footprint, heights, zmax, sx, sy, sz, R):
    """Whether the start is inside the solid, and how far around it the nearest point of
    the terrain may lie: for a start inside, a bound on its distance to the boundary (no
    farther than the surface above, nor than each wall's top edge beside the start); R
    outside."""
    x0, y0, dx, dy, nx, ny = footprint
    flat, anti_of, has_anti = heights
    x1 = x0 + (nx - 1) * dx
    y1 = y0 + (ny - 1) * dy
    in_footprint = sx >= x0 and sx <= x1 and sy >= y0 and sy <= y1
    height = -INF
    if in_footprint and sz <= zmax:  # (above the highest point: outside)
        height, _, _ = surface_at(flat, anti_of, has_anti, nx, ny, (sx - x0) / dx, (sy - y0) / dy)
    inside = in_footprint and sz <= height
    if not inside:
        return False, R
    bound = height - sz
    for side in range(4):
        qx = x0 if side == 0 else (x1 if side == 1 else sx)
        qy = sy if side <= 1 else (y0 if side == 2 else y1)
        if side == 0:
            gap = sx - x0
        elif side == 1:
            gap = x1 - sx
        elif side == 2:
            gap = sy - y0
        else:
            gap = y1 - sy
        side_height, _, _ = surface_at(
            flat, anti_of, has_anti, nx, ny, (qx - x0) / dx, (qy - y0) / dy
        )
        rise = maximum(sz - side_height, 0.0)
        bound = minimum(bound, np.sqrt(gap * gap + rise * rise))
    return True, bound


@helper
def nearest_around(footprint, heights, hierarchy, grid, solid, sx, sy, sz, reach):
    """The nearest point of the terrain's pieces within ``reach`` of the start: its
    distance (inf where none), the point and the piece's outward normal (cell_nearest's).
    Blocks, then their cells, whose box of pieces is within reach (cast._box_gap), in the
    reference's order; among equally near cells the last one's point, as the reference's
    scatter keeps it."""
    x0, y0, dx, dy, nx, ny = footprint
    flat, anti_of, has_anti = heights
    nbx, block_extremes, cell_extremes = hierarchy
    _, _, _, _, _, _, inverse_dx, inverse_dy = grid
    nearest = INF
    px = py = pz = own_x = own_y = own_z = NAN
    every_piece = np.int64(ANY_PIECE)  # (no literal into a call)
    i_low, i_high = cell_range(sx - reach, sx + reach, x0, inverse_dx, nx - 1)
    j_low, j_high = cell_range(sy - reach, sy + reach, y0, inverse_dy, ny - 1)
    for bj in range(j_low // BLOCK, j_high // BLOCK + 1):
        for bi in range(i_low // BLOCK, i_high // BLOCK + 1):
            first_i, end_i, first_j, end_j, low, high = block_box(
                bi, bj, nx, ny, nbx, block_extremes
            )
            gap_squared = box_gap_squared(
                x0 + first_i * dx, x0 + end_i * dx, y0 + first_j * dy, y0 + end_j * dy,
                low, high, sx, sy, sz,
            )  # fmt: skip
            if not gap_squared <= reach * reach:
                continue
            for j in range(maximum(first_j, j_low), minimum(end_j - 1, j_high) + 1):
                for i in range(maximum(first_i, i_low), minimum(end_i - 1, i_high) + 1):
                    index = j * (nx - 1) + i
                    low = np.float64(cell_extremes[2 * index + LOW])
                    high = np.float64(cell_extremes[2 * index + HIGH])
                    gap_squared = box_gap_squared(
                        x0 + i * dx, x0 + (i + 1) * dx, y0 + j * dy, y0 + (j + 1) * dy,
                        low, high, sx, sy, sz,
                    )  # fmt: skip
                    if not gap_squared <= reach * reach:
                        continue
                    k = j * nx + i
                    distance, qx, qy, qz, ox, oy, oz = cell_nearest(
                        i, j, flat[k], flat[k + 1], flat[k + nx], flat[k + nx + 1],
                        has_anti and anti_of[index] > 0.0, grid, solid, sx, sy, sz,
                        every_piece,
                    )  # fmt: skip
                    if distance < nearest or (distance == nearest and distance < INF):
                        nearest, px, py, pz, own_x, own_y, own_z = distance, qx, qy, qz, ox, oy, oz
    return nearest, px, py, pz, own_x, own_y, own_z


@helper
def overlap_normal(footprint, heights, solid, sx, sy, sz, ux, uy, uz, inside, nearest,
                   px, py, pz, own_x, own_y, own_z):  # fmt: skip
    """The normal of a start in overlap at the nearest point (px, py, pz) ``nearest`` away,
    whose piece's outward normal is ``own`` (NaN for none): outside, from the point toward
    the start; inside, the piece's, or from the start toward the point; exactly on the
    terrain, the surface's (facing against the cast for a surface; the wall's for a start
    on a wall)."""
    x0, y0, dx, dy, nx, ny = footprint
    flat, anti_of, has_anti = heights
    gx, gy, gz = sx - px, sy - py, sz - pz
    inverse = 1.0 / (nearest if nearest > 0.0 else 1.0)
    tx, ty, tz = gx * inverse, gy * inverse, gz * inverse
    if not inside:
        nx_, ny_, nz_ = tx, ty, tz
    else:  # the piece's outward normal, or from the start toward the point
        nx_ = -tx if own_x != own_x else own_x
        ny_ = -ty if own_y != own_y else own_y
        nz_ = -tz if own_z != own_z else own_z
    if nearest == 0.0:  # on the terrain: the surface's (or the wall's) normal
        _, grad_u, grad_v = surface_at(
            flat, anti_of, has_anti, nx, ny, (sx - x0) / dx, (sy - y0) / dy
        )
        up_x, up_y = -grad_u / dx, -grad_v / dy
        up_length = np.sqrt(up_x * up_x + up_y * up_y + 1.0)
        up_x, up_y, up_z = up_x / up_length, up_y / up_length, 1.0 / up_length
        if solid:
            here, _, _ = surface_at(flat, anti_of, has_anti, nx, ny, (sx - x0) / dx, (sy - y0) / dy)
            if sz < here and own_x == own_x:
                up_x, up_y, up_z = own_x, own_y, own_z
        elif up_x * ux + up_y * uy + up_z * uz > 0.0:
            up_x, up_y, up_z = -up_x, -up_y, -up_z
        nx_, ny_, nz_ = up_x, up_y, up_z
    return nx_, ny_, nz_


@rare_helper
def contact(footprint, heights, grid, solid, t, best_cell, best_piece, sx, sy, sz, ux, uy, uz):
    """The contact at ``t``: the winning piece's nearest point to the centre and the normal
    from it toward the centre (the reference takes the nearest of the winning cell's
    pieces: the same point, but where two pieces tie, up to rounding)."""
    _, _, _, _, nx, _ = footprint
    flat, anti_of, has_anti = heights
    cx, cy, cz = sx + t * ux, sy + t * uy, sz + t * uz
    i, j = best_cell % (nx - 1), best_cell // (nx - 1)
    k = j * nx + i
    _, px, py, pz, _, _, _ = cell_nearest(
        i, j, flat[k], flat[k + 1], flat[k + nx], flat[k + nx + 1],
        has_anti and anti_of[best_cell] > 0.0, grid, solid, cx, cy, cz, best_piece,
    )  # fmt: skip
    gx, gy, gz = cx - px, cy - py, cz - pz
    size = np.sqrt(gx * gx + gy * gy + gz * gz)
    return px, py, pz, gx / size, gy / size, gz / size


def _make_cast_rows(solid):
    """The cast walk compiled for one model, solid or surface (``solid`` is a constant of the
    closure: numba drops the other model's branches before it types the function, as the
    ray kernel's _make_trace does)."""

    @njit(cache=True, nogil=True, error_model="numpy")
    def cast_rows(arguments, placement, starts, ends, radius, out, start, ray_rows):
        """The casts from ``start`` on, one per entry of ``ray_rows``: results into ``out``;
        a moving cast of radius 0 that does not start on the terrain is left to the ray kernel:
        ray_rows[row - start] True, its start, unit direction and length in the terrain's frame
        in the outputs' point, normal and distance.
        Returns the number of rows with non-finite input."""
        _, footprint, heights, bounds, hierarchy = arguments
        x0, y0, dx, dy, nx, ny = footprint
        _, zmin, zmax, scale = bounds
        # The phases take the arrays as views without an owner (no reference counts).
        flat, anti_of, has_anti = heights
        nbx, block_extremes, cell_extremes = hierarchy
        flat, anti_of = borrowed(flat), borrowed(anti_of)
        heights = (flat, anti_of, has_anti)
        cell_extremes = borrowed(cell_extremes)
        hierarchy = (nbx, borrowed(block_extremes), cell_extremes)
        _, distance, _, point, normal = out  # radius-0 casts are staged here for the ray kernel
        step = 1 if radius.shape[0] > 1 else 0
        grid = (x0, y0, dx, dy, nx - 2, ny - 2, 1.0 / dx, 1.0 / dy)
        x1 = x0 + (nx - 1) * dx
        y1 = y0 + (ny - 1) * dy
        cells = np.empty((CELL_ROWS, FIRST_CELLS))  # the walk's cell list (cast_walk_kernel)
        bad = 0
        prefetching = nx * ny >= PREFETCH_MIN_CELLS
        stop = start + ray_rows.shape[0]
        for row in range(start, stop):
            if prefetching and row + AHEAD < stop:
                ahead = row + AHEAD
                prefetch_cast(
                    starts, ends, ahead, placement, x0, y0, dx, dy, nx, ny, zmin, zmax,
                    flat, cell_extremes,
                )  # fmt: skip
            ray_rows[row - start] = False
            wsx, wsy, wsz = starts[row, 0], starts[row, 1], starts[row, 2]
            ex, ey, ez = ends[row, 0], ends[row, 1], ends[row, 2]
            if not (finite(wsx, wsy, wsz) and finite(ex, ey, ez)):
                bad += 1  # (the driver names the row; no walk over NaN cell ranges)
                continue
            # 1. Set-up: the cast in the terrain's frame; a start in overlap (within R of the
            # terrain, or inside the solid) is a contact at 0.
            wux, wuy, wuz, length = cast_direction(wsx, wsy, wsz, ex, ey, ez)
            sx, sy, sz, ux, uy, uz, R = cast_to_local(
                placement, wsx, wsy, wsz, wux, wuy, wuz, radius[row * step]
            )
            local_length = length if placement is None else length / placement[3]
            t = INF
            px = py = pz = nx_ = ny_ = nz_ = NAN
            inside, reach = False, R
            if solid:
                inside, reach = inside_solid(footprint, heights, zmax, sx, sy, sz, R)
            near = sx >= x0 - reach and sx <= x1 + reach and sy >= y0 - reach and sy <= y1 + reach
            near = near and sz <= zmax + reach and (solid or sz >= zmin - reach)
            nearest = INF
            own_x = own_y = own_z = NAN
            if near or inside:
                nearest, px, py, pz, own_x, own_y, own_z = nearest_around(
                    footprint, heights, hierarchy, grid, solid, sx, sy, sz, reach
                )
            if inside or nearest <= R:
                t = 0.0
                nx_, ny_, nz_ = overlap_normal(
                    footprint, heights, solid, sx, sy, sz, ux, uy, uz, inside, nearest,
                    px, py, pz, own_x, own_y, own_z,
                )  # fmt: skip
            elif ux != 0.0 or uy != 0.0 or uz != 0.0:
                if R == 0.0:
                    # The ray clipped to the segment: the ray kernel's, in the terrain's
                    # frame as the reference casts it (start, direction and length there).
                    ray_rows[row - start] = True
                    distance[row] = local_length
                    point[row, 0], point[row, 1], point[row, 2] = sx, sy, sz
                    normal[row, 0], normal[row, 1], normal[row, 2] = ux, uy, uz
                    continue
                # 2.-4. The path clipped, then walked in stretches.
                inverse_u = (1.0 / ux, 1.0 / uy, 1.0 / uz)
                t0, t1 = clip(
                    footprint, solid, zmin, zmax, sx, sy, sz, ux, uy, uz, inverse_u, R,
                    local_length,
                )  # fmt: skip
                best = INF
                best_cell = best_piece = -1
                while t0 <= t1:
                    best, best_cell, best_piece, needed = walk(
                        borrowed(cells), t0, t1, footprint, heights, hierarchy, grid, solid,
                        scale, sx, sy, sz, ux, uy, uz, inverse_u, R,
                    )  # fmt: skip
                    if not needed:
                        break
                    # A stretch's cells did not fit: again with room for them (the walk's
                    # answer does not depend on the room).
                    cells = np.empty((CELL_ROWS, 2 * needed))
                if best <= local_length:  # 5. Finish: the contact's point and normal.
                    t = best
                    px, py, pz, nx_, ny_, nz_ = contact(
                        footprint, heights, grid, solid, t, best_cell, best_piece,
                        sx, sy, sz, ux, uy, uz,
                    )  # fmt: skip
            t, px, py, pz, nx_, ny_, nz_ = cast_to_world(placement, t, px, py, pz, nx_, ny_, nz_)
            write_cast(out, row, t, length, wsx, wsy, wsz, wux, wuy, wuz, px, py, pz, nx_, ny_, nz_)
        return bad

    return cast_rows


_CAST_ROWS = {solid: _make_cast_rows(solid) for solid in (False, True)}


@njit(cache=True, nogil=True, error_model="numpy")
def finish_rays(placement, starts, ends, rows, rays, out):
    """The casts ``rows`` of radius 0 from the ray kernel's answers in the terrain's frame
    (``rays``: hit, distance, point, normal, cell): back to the world as cast_rows does."""
    ray_hit, ray_distance, _, ray_normal, _ = rays
    for k in range(rows.shape[0]):
        row = rows[k]
        sx, sy, sz = starts[row, 0], starts[row, 1], starts[row, 2]
        ux, uy, uz, length = cast_direction(sx, sy, sz, ends[row, 0], ends[row, 1], ends[row, 2])
        t = ray_distance[k] if ray_hit[k] else INF
        # The contact as the reference takes it: start + t direction in the terrain's frame.
        lx, ly, lz, lux, luy, luz, _ = cast_to_local(placement, sx, sy, sz, ux, uy, uz, 0.0)
        t, px, py, pz, nx, ny, nz = cast_to_world(
            placement, t, lx + t * lux, ly + t * luy, lz + t * luz,
            ray_normal[k, 0], ray_normal[k, 1], ray_normal[k, 2],
        )  # fmt: skip
        write_cast(out, row, t, length, sx, sy, sz, ux, uy, uz, px, py, pz, nx, ny, nz)


@njit(cache=True, nogil=True, error_model="numpy")
def scatter_casts(order, ordered, out):
    """The answers of the gathered casts (``ordered``, in ``order``) into their rows of
    ``out`` (both hit, distance, center, point, normal)."""
    hit, distance, center, point, normal = out
    ordered_hit, ordered_distance, ordered_center, ordered_point, ordered_normal = ordered
    for k in range(order.shape[0]):
        row = order[k]
        hit[row] = ordered_hit[k]
        distance[row] = ordered_distance[k]
        for axis in range(3):
            center[row, axis] = ordered_center[k, axis]
            point[row, axis] = ordered_point[k, axis]
            normal[row, axis] = ordered_normal[k, axis]


def sphere_cast(arguments, placement, starts, ends, radius, out, start, stop):
    """Casts start ... stop - 1 (see core/backend.py). On a large terrain the casts are
    gathered in the order of the block each starts over, so that casts one after another
    read the same heights and extremes from the cache, cast in that order and their
    answers scattered back (as the ray kernel does with its rays)."""
    ray_arguments, footprint, _, _, _ = arguments
    _, _, _, _, nx, ny = footprint
    if not in_coherent_order(nx, ny, stop - start):
        return cast_span(arguments, placement, starts, ends, radius, out, start, stop)
    # The ray kernel's gather: starts and ends as its origins and directions, the radii
    # (one, or one per cast) as its limits; the same types, so it compiles once for both.
    order, starts, ends, radius = _ordered_rays(
        ray_arguments, placement, starts, ends, radius, start, stop
    )
    count = stop - start
    center, point, normal = (np.empty((count, 3)) for _ in range(3))
    ordered = (np.empty(count, dtype=np.bool_), np.empty(count), center, point, normal)
    bad = cast_span(arguments, placement, starts, ends, radius, ordered, 0, count)
    scatter_casts(order, ordered, out)
    return bad


def cast_span(arguments, placement, starts, ends, radius, out, start, stop):
    """Casts start ... stop - 1 in their order: cast_rows, then the casts of radius 0 as
    rays clipped to their segments by the ray kernel (``raycast``, on the rays in the
    terrain's frame), whose answer the numpy reference takes too."""
    ray_arguments, _, _, bounds, _ = arguments
    solid, _, _, _ = bounds
    ray_rows = np.empty(stop - start, dtype=np.bool_)
    bad = _CAST_ROWS[solid](arguments, placement, starts, ends, radius, out, start, ray_rows)
    rows = np.flatnonzero(ray_rows) + start
    if rows.size:
        _, distance, _, point, normal = out
        rays = (
            np.empty(rows.size, dtype=np.bool_),
            np.empty(rows.size),
            np.empty((rows.size, 3)),
            np.empty((rows.size, 3)),
            np.empty((rows.size, 2), dtype=np.int64),
        )
        origins, directions = point[rows], normal[rows]
        ray_kernels.raycast(
            ray_arguments, None, origins, directions, distance[rows], rays, 0, rows.size
        )
        finish_rays(placement, starts, ends, rows, rays, out)
    return bad
