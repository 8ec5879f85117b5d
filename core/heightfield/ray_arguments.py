"""The terrain in the compiled ray walk's form (ray_kernel.py): RayArguments, the record
Heightfield.kernel_arguments gives the kernels, built from the reference's own arrays
(grid.Terrain), joined only for a surface. numpy only: a shape holding its record imports
no numba.
"""

from typing import NamedTuple

import numpy as np


class RayArguments(NamedTuple):
    """The ray kernel's arguments, read by name (numba types a named tuple field by field,
    so a field's type must never depend on how the shape was made: every array is a
    read-only float64 or int64 view)."""

    x0: float  # the grid: origin, spacing, heights per row (nx) and per column (ny)
    y0: float
    dx: float
    dy: float
    nx: int
    ny: int
    heights: np.ndarray  # flat, row-major; a surface's mirror heights after them
    spacing: float  # the largest spacing (the cells' tolerances)
    anti_of: np.ndarray  # per cell, 1.0 where split along u + v = 1 (TRIANGLES only)
    has_anti: bool  # whether any cell is (else anti_of is one 0.0)
    bilinear: bool  # BILINEAR, else TRIANGLES
    solid: bool
    zmin: float
    top_above: float  # the clip box's top: the terrain's, the mirror's (a surface's)
    top_mirror: float
    slack_x: float  # the footprint's slack in x and y (Heightfield._edge_slack)
    slack_y: float
    block_max: np.ndarray  # the block maxima (the mirror's after them)
    nodes: np.ndarray  # the skip levels of both hierarchies: their nodes end to end,
    node_offset: np.ndarray  # and per level where its nodes start, how many there are,
    node_count: np.ndarray  # their row stride and the node size (grid.Terrain.hierarchy)
    node_stride: np.ndarray
    node_size: np.ndarray
    reach_first: np.ndarray  # per terrain (0 the terrain, 1 its mirror image): its first
    reach_levels: np.ndarray  # pyramid level and how many,
    inner_first: np.ndarray  # and its first cell-skip level and how many
    inner_levels: np.ndarray


def _levels(hierarchies, which):
    """Skip levels (size, nodes, stride) of one or two terrains' hierarchies (``which``:
    1 for the pyramid, 2 for the cell-level skips) in one list, and per terrain its first
    level and level count."""
    levels: list = []
    first: list = []
    count: list = []
    for hierarchy in hierarchies:
        first.append(len(levels))
        count.append(len(hierarchy[which]))
        levels.extend(hierarchy[which])
    return levels, np.array(first, dtype=np.int64), np.array(count, dtype=np.int64)


def arguments(field):
    """The RayArguments of ``field`` (a Heightfield). A BILINEAR terrain's diagonals mean
    nothing to its patches: it gets none, so its walk never reads them."""
    terrains = [field._above] if field.solid else [field._above, field._mirror]
    hierarchies = [terrain.hierarchy for terrain in terrains]
    reach, reach_first, reach_levels = _levels(hierarchies, 1)
    inner, inner_first, inner_levels = _levels(hierarchies, 2)
    levels = reach + inner
    inner_first = inner_first + len(reach)
    counts = np.array([nodes.shape[0] for _, nodes, _ in levels], dtype=np.int64)
    ny, nx = field.heights.shape
    bilinear = field.surface == "BILINEAR"
    anti = None if bilinear else field._anti
    return RayArguments(
        x0=float(field.origin[0]),
        y0=float(field.origin[1]),
        dx=float(field.spacing[0]),
        dy=float(field.spacing[1]),
        nx=int(nx),
        ny=int(ny),
        heights=_joined([terrain.flat for terrain in terrains]),
        spacing=float(max(field.spacing)),
        anti_of=_read_only(np.zeros(1) if anti is None else anti),
        has_anti=anti is not None,
        bilinear=bilinear,
        solid=field.solid,
        zmin=float(field.zmin),
        top_above=float(field._above.top),
        top_mirror=0.0 if field.solid else float(field._mirror.top),
        slack_x=float(field._edge_slack[0]),
        slack_y=float(field._edge_slack[1]),
        block_max=_joined([hierarchy[0] for hierarchy in hierarchies]),
        nodes=_joined([nodes for _, nodes, _ in levels]),
        node_offset=_read_only(np.concatenate(([0], np.cumsum(counts)[:-1])), np.int64),
        node_count=_read_only(counts, np.int64),
        node_stride=_read_only([stride for _, _, stride in levels], np.int64),
        node_size=_read_only([size for size, _, _ in levels]),
        reach_first=_read_only(reach_first, np.int64),
        reach_levels=_read_only(reach_levels, np.int64),
        inner_first=_read_only(inner_first, np.int64),
        inner_levels=_read_only(inner_levels, np.int64),
    )


def _joined(arrays):
    """One contiguous float64 array of ``arrays`` end to end (no copy for one)."""
    if len(arrays) == 1:
        return _read_only(arrays[0])
    return _read_only(np.concatenate(arrays))


def _read_only(array, dtype=np.float64):
    """A read-only view: the kernel's arguments have one type whether an array is the
    reference's own (read-only heights) or made here (or made read-only by its owner
    later), so the kernel compiles once."""
    view = np.ascontiguousarray(array, dtype=dtype).view()
    view.setflags(write=False)
    return view
