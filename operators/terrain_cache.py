"""Recognised terrains remembered by content, so repeated queries on an unchanged terrain skip
re-reading Blender's triangulation.

Why. A terrain's cell diagonals must be the ones Blender draws, and the only exact source is
``mesh.loop_triangles``, whose ``foreach_get`` goes through RNA item by item: ~65 ms for the
522k triangles of a 512 x 512 grid, most of a 10k-ray query. Everything else a terrain needs
is read in about a millisecond (positions and ``.corner_vert`` through the attribute API,
``loop_triangle_polygons`` as a flat int array).

What is compared. An entry holds the local ``Heightfield`` recognised from an evaluated mesh
and that mesh's *fingerprint*: copies of

* the vertex positions as stored (float32, compared bit for bit as uint32, so -0.0 and 0.0
  differ and NaN equals itself),
* the corner vertices (``.corner_vert``, int32),
* the face of every loop triangle (``loop_triangle_polygons``, int32). A face of ``n``
  corners has ``n - 2`` triangles, stored face after face, so this array determines the
  face offsets exactly (it is derived from them alone); reading ``polygons.loop_start``
  instead costs ~13 ms.

A later lookup under the same object name returns the entry only when all three arrays are
identical to the mesh's current ones, else nothing (and the caller reads and recognises
afresh, replacing the entry).

Why it cannot go stale. DESIGN.md says to cache nothing across depsgraph updates that could
go stale; this cache is keyed by content, not by time or by name. Blender's tessellation
(``bke::mesh::corner_tris_calc``, ``mesh_tessellate.cc``) is a deterministic function of the
positions, the face offsets and the corner vertices: a triangle is kept as is, a quad is split
0-2 unless ``is_quad_flip_v3_first_third_fast`` on its four positions says 1-3. Only faces of
five or more corners use anything else (the face normal, which may come from a cache); entries
are therefore stored only for meshes whose faces all have three or four corners, which the
identical triangle-face array then guarantees for every hit as well. The recognised
Heightfield in turn is a deterministic function of the positions and the loop triangles. So
identical fingerprints mean the same triangulation and the same Heightfield, whatever
happened in between (modifier edits, undo, file reloads, a different object renamed to the
same name); any difference, even one bit of one vertex, is a miss. A hash of the same bytes
would do too (blake2b: ~11 ms for the ~9 MB of a 512 x 512 grid; a direct comparison ~1 ms),
but a stored copy needs no collision argument at all. Edit mode is never cached: there the
mesh may be tessellated from its BMesh.

Bounded memory: at most ``MAX_ENTRIES`` objects and ``MAX_BYTES`` of fingerprints and
heights together, least recently used evicted first; a terrain larger than the whole budget
(beyond ~1400 x 1400 vertices) is simply not cached. The stored Heightfield's heights and
diagonals are made read-only, since every later query shares them.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

MAX_ENTRIES = 4
MAX_BYTES = 96 * 2 ** 20


def read_corner_verts(mesh) -> np.ndarray:
    """(corners,) int32 vertex of every face corner (the ``.corner_vert`` attribute)."""
    corner_verts = np.empty(len(mesh.loops), dtype=np.int32)
    if len(corner_verts):
        mesh.attributes[".corner_vert"].data.foreach_get("value", corner_verts)
    return corner_verts


def read_triangle_faces(mesh) -> np.ndarray:
    """(triangles,) int32 face of every loop triangle (``mesh.loop_triangle_polygons``)."""
    faces = np.empty(len(mesh.loop_triangles), dtype=np.int32)
    if len(faces):
        mesh.loop_triangle_polygons.foreach_get("value", faces)
    return faces


def _same_bits(first: np.ndarray, second: np.ndarray) -> bool:
    """True when two 4-byte arrays hold exactly the same bytes."""
    return first.shape == second.shape and np.array_equal(first.view(np.uint32),
                                                          second.view(np.uint32))


@dataclass(frozen=True)
class Fingerprint:
    """Everything Blender's triangulation of a mesh of triangles and quads depends on."""

    positions: np.ndarray      # (vertices * 3,) float32
    corner_verts: np.ndarray   # (corners,) int32
    triangle_faces: np.ndarray  # (triangles,) int32

    @classmethod
    def read(cls, mesh, positions: np.ndarray) -> "Fingerprint":
        """``mesh``'s fingerprint; ``positions`` are its float32 positions, already read."""
        return cls(np.array(positions, dtype=np.float32).ravel(), read_corner_verts(mesh),
                   read_triangle_faces(mesh))

    @property
    def nbytes(self) -> int:
        return self.positions.nbytes + self.corner_verts.nbytes + self.triangle_faces.nbytes

    def only_triangles_and_quads(self) -> bool:
        """True when no face has more than four corners (at most two triangles per face)."""
        if not len(self.triangle_faces):
            return True
        return int(np.bincount(self.triangle_faces).max()) <= 2


@dataclass
class _Entry:
    fingerprint: Fingerprint
    value: tuple
    nbytes: int


class TerrainCache:
    """Per object name, the last terrain recognised and the fingerprint it came from."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self):
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return sum(entry.nbytes for entry in self._entries.values())

    def clear(self):
        self._entries.clear()
        self.hits = self.misses = 0

    def lookup(self, name: str, mesh, positions: np.ndarray):
        """The value stored for ``name`` if ``mesh`` (whose float32 positions are
        ``positions``) has exactly the fingerprint it was stored with, else None. The
        positions are compared first: they are at hand and differ after most edits."""
        entry = self._entries.get(name)
        if entry is None:
            self.misses += 1
            return None
        stored = entry.fingerprint
        if not (_same_bits(stored.positions, positions.reshape(-1))
                and len(mesh.loops) == len(stored.corner_verts)
                and _same_bits(stored.corner_verts, read_corner_verts(mesh))
                and _same_bits(stored.triangle_faces, read_triangle_faces(mesh))):
            self.misses += 1
            return None
        self._entries.move_to_end(name)
        self.hits += 1
        return entry.value

    def store(self, name: str, fingerprint: Fingerprint, value: tuple, value_arrays=()):
        """Remember ``value`` (e.g. (Heightfield, description)) for ``name`` and
        ``fingerprint``; ``value_arrays`` are its numpy arrays, made read-only and counted
        against the budget. Meshes with faces of five or more corners are not stored (their
        triangulation may depend on cached face normals)."""
        self._entries.pop(name, None)
        if not fingerprint.only_triangles_and_quads():
            return
        for array in value_arrays:
            array.setflags(write=False)
        nbytes = fingerprint.nbytes + sum(array.nbytes for array in value_arrays)
        if nbytes > self.max_bytes:
            return
        self._entries[name] = _Entry(fingerprint, value, nbytes)
        while len(self._entries) > self.max_entries or self.nbytes > self.max_bytes:
            self._entries.popitem(last=False)


TERRAINS = TerrainCache()
"""The add-on's one terrain cache (see the module docstring)."""
