"""Ray vs a heightfield terrain, cast exactly: a solid column or the surface as drawn.

One concept per module, in the order a query meets them:
  shape.py       Heightfield: parameters, the two models (solid / surface), folding
  grid.py        validation, each cell's tolerance, the max hierarchy (and its mirror image)
  ray.py         raycast: the clip, then the walk; ray_kernel.py compiles it (its
                 traversal in ray_walk.py, cell tests in ray_cells.py, memory in ray_order.py,
                 arguments in ray_arguments.py)
  walk.py        the exact walk: blocks, then cells, empty space skipped
  surfaces.py    one cell's surface along a ray: triangles or bilinear, solved exactly
  cast.py        sphere casts (TRIANGLES): starts in overlap, then the walk; cast_kernel.py
                 compiles them
  cast_walk.py   the casts' walk: stretches, blocks, then cells; cast_walk_kernel.py
  cast_cells.py  one cell's pieces: entries and nearest points; cast_cells_kernel.py
  crossings.py   raycast_all's records; crossings_kernel.py compiles them (TRIANGLES)
"""

from .shape import Heightfield

__all__ = ["Heightfield"]
