"""Recognised shapes remembered by content, so repeated queries on unchanged objects skip
re-reading Blender's triangulation (and re-fitting spheres and cylinders).

Why. A terrain's cell diagonals must be the ones Blender draws, and the only exact source is
``mesh.loop_triangles``, whose ``foreach_get`` goes through RNA item by item: most of a
10k-ray query on a 512 x 512 grid. Everything else a shape depends on reads far faster
(positions, ``.corner_vert`` and ``.corner_edge`` through the attribute API,
``loop_triangle_polygons`` as a flat int array), and fitting a sphere or a cylinder is
quick too.

What is compared. An entry holds what mapping.py recognised from an evaluated mesh and that
mesh's *fingerprint*: copies of exactly the data the recognition is a function of.

* Always the vertex positions as stored (float32, compared bit for bit as uint32, so -0.0
  and 0.0 differ and NaN equals itself).
* A terrain (its Heightfield is a function of the positions and the loop triangles): the
  corner vertices (``.corner_vert``) and the face of every loop triangle
  (``loop_triangle_polygons``). A face of ``n`` corners has ``n - 2`` triangles, stored face
  after face, so that array determines the face offsets exactly (it is computed from them
  alone); reading ``polygons.loop_start`` instead costs more (RNA item by item).
* A sphere or cylinder (a function of the positions and of whether the mesh is closed,
  which mapping.mesh_is_closed computes from ``.corner_edge`` and the edge count): the corner
  edges and the edge count. The terrain test, tried first, cannot start passing while these
  match: a sphere or cylinder is closed, and a terrain never is (the outer edge of a corner
  cell belongs to one face only).

A later lookup under the same object name returns the entry only when every array is
identical to the mesh's current one, else nothing (the caller recognises afresh and replaces
the entry). Failures are never stored.

Why it cannot go stale. The mapping's rule is to read every object afresh and keep nothing
across depsgraph updates that could go stale; this cache is keyed by content, not by time or
by name (the name only says which entry to compare with). Blender's tessellation
(``bke::mesh::corner_tris_calc``, ``mesh_tessellate.cc``) is a deterministic function of the
positions, the face offsets and the corner vertices: a triangle is kept as is, a quad is split
0-2 unless ``is_quad_flip_v3_first_third_fast`` on its four positions says 1-3. Only faces of
five or more corners use anything else (the face normal, which may come from a cache); terrain
entries are therefore stored only for meshes whose faces all have three or four corners, which
the identical triangle-face array then guarantees at every hit too. So identical
fingerprints mean the same triangulation and the same recognised shape, whatever happened in
between (modifier edits, undo, file reloads, another object renamed to the same name); any
difference, even one bit of one vertex, is a miss. The object's placement is never cached
(``matrix_world`` is read on every call). A hash of the same bytes would do too (though
blake2b is slower than a direct comparison), but a stored copy needs no collision argument
at all. Edit mode is never cached: there the mesh may be tessellated
from its BMesh.

Reading the topology costs more than the positions (on a 1000 x 1000 grid 24 MB read
through RNA and compared, against 12 MB), so a lookup skips it where Blender says it cannot
have changed: the positions are compared on every lookup, the topology only when Blender
reported a geometry update of the entry's object since it was last compared. An evaluated
mesh changes only when the depsgraph evaluates its object's geometry, and that is reported:
``depsgraph_update_post`` lists the object with ``is_updated_geometry`` (also when the
change came from its mesh, a modifier, a texture or an object a modifier depends on), except
after a frame change (``frame_change_post``), an undo or redo and a file load, after which
every entry's topology is compared again (operators/shape_watch.py). The lookup also passes
a token, the evaluated mesh's address and its vertex, edge, face and corner counts: a mesh
of another depsgraph (another scene or view layer) or of another size is compared.

Bounded memory: a budget of ``MAX_BYTES`` for everything the entries hold (fingerprints, the
recognised shapes with every array their Heightfields keep), least recently used evicted
first; no limit on the number of entries. A terrain grows after it is stored (the other
terrain model, the mirror image a surface walks rays from below in and that image's max
hierarchy are built on first use), so an entry is measured again whenever it is looked up
(summing each distinct buffer once: some arrays are views of others, or shared). The budget
is a quarter of what one 4096 x 4096 Grid terrain costs at its largest in the default
model, SURFACE, hit from above and below
(``grid_terrain_bytes``; per vertex V and per cell C of an n x n grid of quads, H the size
of one max hierarchy):

==============================================  ============  ============
what                                            bytes         4096 x 4096
==============================================  ============  ============
fingerprint: positions (float32 x 3)            12 V          192.0 MiB
fingerprint: corner vertices, triangle faces    16 C + 8 C    383.8 MiB
recognised: heights (float64), diagonals        8 V + C       144.0 MiB
Heightfield: heights, diagonals, float copy     8 V + 9 C     271.9 MiB
Heightfield: each cell's tolerance              8 V           128.0 MiB
seen from below: the heights negated            8 V           128.0 MiB
two max hierarchies, H = 8 (n + 1)^2 + ~0.3 C   2 H           265.5 MiB
numba kernel: both heights and hierarchies      16 V + 2 H    521.5 MiB
joined into its arguments (``kernel_bytes``)
total                                                         2034.8 MiB
==============================================  ============  ============

so ``MAX_BYTES`` = 508.7 MiB: one terrain of up to 2047 x 2047 vertices is cached, or two of
up to 1448 x 1448; a 1500 x 1500 grid (272.9 MiB at most; less in
bench/big_terrain_cache.py, where no quad is flipped and no ray comes from below); and any
number of spheres and cylinders (a 32 x 16 UV sphere: 13 KiB). A terrain larger than the
whole budget is simply not cached. Tests lower the budget by setting the module constant
``MAX_BYTES`` (read whenever an entry is stored or looked up). The arrays a cached terrain
was recognised from (its heights and diagonals) are made read-only, since every later query
shares them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.heightfield.shape import distinct_nbytes


def hierarchy_bytes(n: int) -> int:
    """One max hierarchy of an n x n grid terrain: the cells level and the levels of blocks
    of 8 x 8 cells and up, each padded by a node all round, and the block maxima (every
    block level counted, though levels that skip nothing are left out of the real one)."""
    total = 8 * (n + 1) ** 2
    blocks = -(-(n - 1) // 8)
    total += 8 * blocks**2
    while True:
        total += 8 * (blocks + 2) ** 2
        if blocks <= 3:
            return total
        blocks = -(-blocks // 2)


def kernel_bytes(n: int) -> int:
    """The compiled (numba) kernel's arguments for an n x n SURFACE terrain: the heights and
    the max hierarchies of the terrain and of its mirror image, joined into copies (built
    at the first query on the numba backend; never on the numpy backend), plus at most
    512 bytes of per-level offsets, counts and strides."""
    return 16 * n * n + 2 * hierarchy_bytes(n) + 512


def grid_terrain_bytes(n: int) -> int:
    """What the cache holds for a terrain made from an n x n Grid primitive (quads, some
    split along the other diagonal) in the SURFACE model, hit from above and below: see the
    module docstring."""
    vertices, cells = n * n, (n - 1) ** 2
    fingerprint = 12 * vertices + (16 + 8) * cells
    recognised = 8 * vertices + cells
    field = 8 * vertices + 9 * cells
    tolerances = 8 * vertices  # one per cell, stored at its first vertex; shared
    below = 8 * vertices  # the heights negated
    hierarchies = 2 * hierarchy_bytes(n)
    return fingerprint + recognised + field + tolerances + below + hierarchies + kernel_bytes(n)


MAX_BYTES = grid_terrain_bytes(4096) // 4
"""The cache's memory budget (bytes), a quarter of a 4096 x 4096 terrain; read at every
store and lookup, so a test may set a smaller one."""


def read_corner_attribute(mesh, name: str) -> np.ndarray:
    """(corners,) int32 values of a face-corner attribute such as ``.corner_vert``."""
    values = np.empty(len(mesh.loops), dtype=np.int32)
    if len(values):
        mesh.attributes[name].data.foreach_get("value", values)
    return values


def read_corner_verts(mesh) -> np.ndarray:
    """(corners,) vertex of every face corner."""
    return read_corner_attribute(mesh, ".corner_vert")


def read_triangle_faces(mesh) -> np.ndarray:
    """(triangles,) int32 face of every loop triangle (``mesh.loop_triangle_polygons``)."""
    faces = np.empty(len(mesh.loop_triangles), dtype=np.int32)
    if len(faces):
        mesh.loop_triangle_polygons.foreach_get("value", faces)
    return faces


def read_corner_edges(mesh) -> np.ndarray:
    """(corners,) edge of every face corner."""
    return read_corner_attribute(mesh, ".corner_edge")


def read_edge_count(mesh) -> np.ndarray:
    return np.array([len(mesh.edges)], dtype=np.int32)


TOPOLOGY = {
    # What besides the positions each kind of entry depends on (see the module docstring).
    "TRIANGULATION": (read_corner_verts, read_triangle_faces),
    "CLOSEDNESS": (read_corner_edges, read_edge_count),
}


def _same_bits(first: np.ndarray, second: np.ndarray) -> bool:
    """True when two contiguous 1D 4-byte arrays hold exactly the same bytes (compared 8
    bytes at a time where the length allows: half the elements)."""
    if first.shape != second.shape:
        return False
    word = np.uint64 if first.nbytes % 8 == 0 else np.uint32
    return np.array_equal(first.view(word), second.view(word))


@dataclass(frozen=True)
class Fingerprint:
    """Copies of the positions and of the topology arrays ``TOPOLOGY[depends_on]`` reads."""

    depends_on: str  # a key of TOPOLOGY
    positions: np.ndarray  # (vertices * 3,) float32
    topology: tuple  # int32 arrays, one per reader of TOPOLOGY[depends_on]

    @classmethod
    def read(cls, mesh, positions: np.ndarray, depends_on: str) -> "Fingerprint":
        """``mesh``'s fingerprint; ``positions`` are its float32 positions, already read."""
        return cls(
            depends_on,
            np.array(positions, dtype=np.float32).ravel(),
            tuple(read(mesh) for read in TOPOLOGY[depends_on]),
        )

    @property
    def nbytes(self) -> int:
        return self.positions.nbytes + sum(array.nbytes for array in self.topology)

    def matches(self, mesh, positions: np.ndarray, topology: bool = True) -> bool:
        """True when ``mesh`` (float32 ``positions``, already read) has exactly this
        fingerprint (its positions alone when ``topology`` is False). The positions are
        compared first: they are at hand and differ after most edits; each topology array
        is read only while everything before it matched."""
        return _same_bits(self.positions, positions.reshape(-1)) and (
            not topology
            or all(
                _same_bits(stored, read(mesh))
                for stored, read in zip(self.topology, TOPOLOGY[self.depends_on])
            )
        )

    def only_triangles_and_quads(self) -> bool:
        """True when no face has more than four corners (at most two triangles per face);
        only meaningful for a TRIANGULATION fingerprint."""
        triangle_faces = self.topology[1]
        if not len(triangle_faces):
            return True
        return int(np.bincount(triangle_faces).max()) <= 2


@dataclass
class _Entry:
    fingerprint: Fingerprint
    value: object
    held: Callable[[], list] | None  # the arrays the value holds now, or None: none
    nbytes: int = 0

    def measure(self) -> int:
        """What the entry holds now (its value may have grown since the last time)."""
        held = self.held() if self.held is not None else []
        self.nbytes = self.fingerprint.nbytes + distinct_nbytes(held)
        return self.nbytes


class ShapeCache:
    """Per object name, the last shape recognised and the fingerprint it came from."""

    def __init__(self, max_bytes: int | None = None):
        self._max_bytes = max_bytes
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._held = 0  # the entries' sizes as last measured
        # name -> (owner, token) of the entries whose topology was compared since Blender
        # last reported a geometry update of their owner (see topology_unchanged)
        self._topology_seen: dict[str, tuple] = {}
        self.hits = 0
        self.misses = 0
        self.topology_reads = 0  # lookups that read and compared the topology arrays

    @property
    def max_bytes(self) -> int:
        """The budget: as given, else the module's ``MAX_BYTES`` as it is now."""
        return MAX_BYTES if self._max_bytes is None else self._max_bytes

    def __len__(self):
        return len(self._entries)

    def __contains__(self, name):
        return name in self._entries

    @property
    def nbytes(self) -> int:
        """What the entries hold now (every entry measured anew)."""
        self._held = sum(entry.measure() for entry in self._entries.values())
        return self._held

    def clear(self):
        self._entries.clear()
        self._topology_seen.clear()
        self._held = 0
        self.hits = self.misses = self.topology_reads = 0

    def geometry_updated(self, owners) -> None:
        """Blender reports that the geometry of the objects named ``owners`` may have
        changed: their entries' topology is compared again at their next lookup."""
        owners = set(owners)
        for name in [name for name, (owner, _) in self._topology_seen.items() if owner in owners]:
            del self._topology_seen[name]

    def forget_topology(self, *_) -> None:
        """Compare every entry's topology again (a file load, undo, redo, frame change)."""
        self._topology_seen.clear()

    def lookup(self, name: str, mesh, positions: np.ndarray, owner=None, token=None):
        """The value stored for ``name`` if ``mesh`` (whose float32 positions are
        ``positions``) has exactly the fingerprint it was stored with, else None. The entry
        is measured anew (it may have grown since), which may make older ones leave.

        ``owner`` (the object whose geometry the mesh is) and ``token`` (the evaluated
        mesh's address and element counts) let a lookup skip reading the topology: it is
        compared only when this (owner, token) has not had it compared since Blender last
        reported a geometry update of ``owner`` (geometry_updated, forget_topology); the
        positions are compared on every lookup."""
        entry = self._entries.get(name)
        known = token is not None and self._topology_seen.get(name) == (owner, token)
        if entry is not None and not known:
            self.topology_reads += 1
        if entry is None or not entry.fingerprint.matches(mesh, positions, topology=not known):
            self._topology_seen.pop(name, None)
            self.misses += 1
            return None
        if token is not None:
            self._topology_seen[name] = (owner, token)
        self._entries.move_to_end(name)
        self.hits += 1
        before = entry.nbytes
        self._held += entry.measure() - before
        self._fit_budget()
        return entry.value

    def store(
        self,
        name: str,
        fingerprint: Fingerprint,
        value,
        value_arrays=(),
        held=None,
        owner=None,
        token=None,
    ):
        """Remember ``value`` for ``name`` and ``fingerprint`` (``owner`` and ``token`` as
        for lookup: the fingerprint was just read from that mesh); ``value_arrays`` (the
        arrays it was made from) are made read-only; ``held()`` lists every array it holds
        at the time it is called, counted against the budget. A triangulation-dependent
        value of a mesh with faces of five or more corners is not stored (their
        triangulation may depend on cached face normals); nor is anything larger than the
        whole budget. Least recently used entries make room."""
        old = self._entries.pop(name, None)
        self._topology_seen.pop(name, None)
        if old is not None:
            self._held -= old.nbytes
        if fingerprint.depends_on == "TRIANGULATION" and not fingerprint.only_triangles_and_quads():
            return
        for array in value_arrays:
            array.setflags(write=False)
        entry = _Entry(fingerprint, value, held)
        if entry.measure() > self.max_bytes:
            return
        self._entries[name] = entry
        if token is not None:
            self._topology_seen[name] = (owner, token)
        self._held += entry.nbytes
        self._fit_budget()

    def _fit_budget(self):
        """Evict least recently used entries until the sizes as last measured fit; the most
        recent one stays even when it alone has grown past the budget (it is in use)."""
        while len(self._entries) > 1 and self._held > self.max_bytes:
            name, entry = self._entries.popitem(last=False)
            self._held -= entry.nbytes
            self._topology_seen.pop(name, None)


SHAPES = ShapeCache()
"""The add-on's one shape cache (see the module docstring)."""
