"""Ray vs a heightfield terrain, cast exactly: a solid column or the surface as drawn.

One concept per module, in the order a query meets them:
  shape.py     Heightfield: parameters, the two models (solid / surface), clip and cast
  grid.py      validation, each cell's tolerance, the max hierarchy (and its mirror image)
  walk.py      the exact walk: blocks, then cells, empty space skipped (method EXACT)
  surfaces.py  one cell's surface along a ray: triangles or bilinear, solved exactly
  march.py     seed 004's search (method MARCH), kept for comparison
"""

from .shape import Heightfield

__all__ = ["Heightfield"]
