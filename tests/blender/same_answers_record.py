"""The expected hits of tests/blender/test_same_answers.py, computed with mpmath at 50 digits
from the scene's definition alone (no core, no bpy), written to same_answers.json:

    python tests/blender/same_answers_record.py

The scene is built from numbers float32 holds exactly (Blender stores transforms and vertex
coordinates in float32), so every Blender builds the same one and its exact answers are
the ones recorded here:

* an ellipsoid: a UV sphere of radius 1.25 at (-2, 0.5, 1), scaled (1, 1.5, 0.75);
* a capped cylinder of radius 0.5 and depth 2 at (2.25, -0.5, 1), turned by the quaternion
  (0.5, 0.5, 0.5, 0.5) (a third of a turn about (1, 1, 1): local x, y, z go to world y, z, x);
* a terrain surface, its vertices on the lattice x, y in {-3, -2.75, ..., 3} at height
  z = x^2 / 16 + y / 8 - 1, moved by (0, 0.25, 0): every quad is planar (z is a sum of a
  function of x and one of y), so both of Blender's diagonals give the same triangles.

Each ray's nearest hit over the three: distance along the unit direction, point, and normal
(out of the solids; on the terrain surface, facing the ray). No ray meets an edge of the
terrain's lattice, where two cells' normals would tie.
"""

import json
import os

import mpmath as mp

mp.mp.dps = 50
HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, "same_answers.json")

SPHERE = dict(radius=1.25, location=(-2.0, 0.5, 1.0), scale=(1.0, 1.5, 0.75))
CYLINDER = dict(radius=0.5, depth=2.0, location=(2.25, -0.5, 1.0), quaternion=(0.5, 0.5, 0.5, 0.5))
TERRAIN = dict(lattice=(-3.0, 0.25, 25), location=(0.0, 0.25, 0.0))
RAYS = [  # (origin, direction), each number exact in float32
    ((-2.0, 0.5, 5.0), (0.0, 0.0, -1.0)),
    ((-2.25, 0.75, 5.0), (0.125, -0.25, -1.0)),
    ((-6.0, 0.5, 1.0), (1.0, 0.0, 0.0)),
    ((-2.0, -4.0, 1.5), (0.0, 1.0, -0.0625)),
    ((2.25, -0.5, 5.0), (0.0, 0.0, -1.0)),
    ((2.0, -0.25, 5.0), (0.0625, 0.0, -1.0)),
    ((6.0, -0.5, 1.25), (-1.0, 0.0, 0.0)),
    ((2.25, 4.0, 1.5), (0.0, -1.0, -0.125)),
    ((0.5625, 1.4375, 5.0), (0.0, 0.0, -1.0)),
    ((0.0, -2.0, 4.0), (0.25, 0.5, -1.0)),
    ((-1.0625, -2.5, -3.0), (0.0, 0.125, 1.0)),
    ((0.25, 0.0, 6.0), (-0.5, 0.25, -1.0)),
    ((9.0, 9.0, 9.0), (1.0, 0.0, 0.0)),
]


def vec(values):
    return mp.matrix([mp.mpf(value) for value in values])


def unit(vector):
    return vector / mp.norm(vector)


def quaternion_matrix(w, x, y, z):
    """The rotation of a unit quaternion (w, x, y, z)."""
    w, x, y, z = (mp.mpf(value) for value in (w, x, y, z))
    return mp.matrix(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def placed_hit(linear, location, origin, direction, local_hit):
    """A local solver's hit (t, local normal) moved back: the world ray o + t d (|d| = 1) is
    the local ray L^-1 (o - c) + t L^-1 d with the same t; normals go by L^-T."""
    inverse = linear**-1
    found = local_hit(inverse * (origin - location), inverse * direction)
    if found is None:
        return None
    t, local_normal = found
    return t, unit(inverse.T * local_normal)


def smallest_root(a, b, c):
    """The smaller real root of a t^2 + b t + c >= 0 when it is >= 0, else the larger one if
    >= 0 (an origin inside a solid does not occur here), else None (so too for a = 0: a ray
    along a cylinder's axis never crosses its wall)."""
    disc = b * b - 4 * a * c
    if a == 0 or disc < 0:
        return None
    roots = sorted([(-b - mp.sqrt(disc)) / (2 * a), (-b + mp.sqrt(disc)) / (2 * a)])
    return next((root for root in roots if root >= 0), None)


def sphere_hit(origin, direction):
    radius = mp.mpf(SPHERE["radius"])

    def local(o, d):
        t = smallest_root((d.T * d)[0], 2 * (o.T * d)[0], (o.T * o)[0] - radius * radius)
        return None if t is None else (t, o + t * d)

    return placed_hit(mp.diag(SPHERE["scale"]), vec(SPHERE["location"]), origin, direction, local)


def cylinder_hit(origin, direction):
    radius, half = mp.mpf(CYLINDER["radius"]), mp.mpf(CYLINDER["depth"]) / 2

    def local(o, d):
        found = []
        t = smallest_root(
            d[0] ** 2 + d[1] ** 2,
            2 * (o[0] * d[0] + o[1] * d[1]),
            o[0] ** 2 + o[1] ** 2 - radius**2,
        )
        if t is not None and abs(o[2] + t * d[2]) <= half:
            found.append((t, vec((o[0] + t * d[0], o[1] + t * d[1], 0))))
        for side in (-1, 1):
            if d[2] != 0:
                t = (side * half - o[2]) / d[2]
                x, y = o[0] + t * d[0], o[1] + t * d[1]
                if t >= 0 and x * x + y * y <= radius**2:
                    found.append((t, vec((0, 0, side))))
        return min(found, key=lambda hit: hit[0]) if found else None

    rotation = quaternion_matrix(*CYLINDER["quaternion"])
    return placed_hit(rotation, vec(CYLINDER["location"]), origin, direction, local)


def terrain_height(x, y):
    return x * x / 16 + y / 8 - 1


def terrain_hit(origin, direction):
    """Every quad's plane (exact: the quads are planar), nearest crossing inside its cell."""
    start, step, count = (mp.mpf(value) for value in TERRAIN["lattice"])
    shift = vec(TERRAIN["location"])
    o = origin - shift
    best = None
    for j in range(int(count) - 1):
        y0, y1 = start + j * step, start + (j + 1) * step
        for i in range(int(count) - 1):
            x0, x1 = start + i * step, start + (i + 1) * step
            # z = z00 + a (x - x0) + b (y - y0) over the cell
            z00 = terrain_height(x0, y0)
            a = (terrain_height(x1, y0) - z00) / step
            b = (terrain_height(x0, y1) - z00) / step
            normal = unit(vec((-a, -b, 1)))
            denominator = direction[2] - a * direction[0] - b * direction[1]
            if denominator == 0:
                continue
            t = (z00 + a * (o[0] - x0) + b * (o[1] - y0) - o[2]) / denominator
            x, y = o[0] + t * direction[0], o[1] + t * direction[1]
            if t >= 0 and x0 <= x <= x1 and y0 <= y <= y1 and (best is None or t < best[0]):
                facing = normal if (normal.T * direction)[0] < 0 else -normal
                best = (t, facing)
    return best


def main():
    records = []
    for origin, direction in RAYS:
        o, d = vec(origin), unit(vec(direction))
        hits = [
            (found[0], name, found[1])
            for name, solver in (
                ("Sphere", sphere_hit),
                ("Cylinder", cylinder_hit),
                ("Terrain", terrain_hit),
            )
            if (found := solver(o, d)) is not None
        ]
        record = {"origin": origin, "direction": direction, "target": None}
        if hits:
            t, name, normal = min(hits, key=lambda hit: hit[0])
            point = o + t * d
            record.update(
                target=name,
                distance=float(t),
                point=[float(value) for value in point],
                normal=[float(value) for value in normal],
            )
        records.append(record)
    scene = {"sphere": SPHERE, "cylinder": CYLINDER, "terrain": TERRAIN}
    with open(OUTPUT, "w") as file:
        json.dump({"scene": scene, "rays": records}, file, indent=1)
        file.write("\n")
    for record in records:
        print(record["target"], record.get("distance"))


if __name__ == "__main__":
    main()
