"""First use: each compiled kernel compiles once per kind of placement, whatever arrays the
caller passes (core/backend.py). numba compiles a function again for every new combination
of argument types, and a read-only, strided, Fortran-ordered or float32 array, an int
where a float was, or a literal, is a type of its own: each costs a whole compile (seconds
for the terrain walk). The drivers hand the kernels one form of everything; this checks it
for every query on every shape, with inputs in every form a caller may use."""

import ast
import inspect
import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from numba.core.caching import FunctionCache

from geometry_queries.core import (
    Cylinder,
    Heightfield,
    Placed,
    Sphere,
    occluded,
    raycast,
    raycast_all,
    sphere_cast,
)
from geometry_queries.core import kernel_common as kernel_rays
from geometry_queries.core.backend import use

SHEAR = np.array([[1.0, 0.3, 0.0, 1.0], [0.0, 2.0, 0.5, -2.0], [0.2, 0.0, 0.7, 3.0], [0, 0, 0, 1]])
SIMILARITY = np.array([[0, -2, 0, 1], [2, 0, 0, 2], [0, 0, 2, 3], [0, 0, 0, 1]], dtype=float)


@pytest.fixture(autouse=True)
def backend():
    """Replaces the conftest's two-backend fixture: the compiled backend only."""
    with use("numba"):
        yield "numba"


def read_only(array):
    view = np.array(array).view()
    view.setflags(write=False)
    return view


def input_forms(points, dimension):
    """``points`` (N, 3) in the forms a caller may pass them: a C array, a list, float32,
    ints, read-only, a strided column slice of wider rows, Fortran order, one row."""
    rows = np.ascontiguousarray(points[:, :dimension])
    wide = np.zeros((len(rows), dimension + 2))
    wide[:, 1 : dimension + 1] = rows
    return {
        "C array": rows,
        "list": rows.tolist(),
        "float32": rows.astype(np.float32),
        "int": np.round(rows * 10).astype(np.int64),
        "read-only": read_only(rows),
        "strided": wide[:, 1 : dimension + 1],
        "Fortran": np.asfortranarray(rows),
        "one row": rows[0],
    }


def limits_forms(n):
    """max_distance / radius as a Python float, an int, a numpy scalar, per-ray arrays
    (C, read-only, strided, float32)."""
    values = np.linspace(0.05, 40.0, n)
    return [
        30.0,
        30,
        np.float32(30.0),
        values,
        read_only(values),
        np.repeat(values, 2)[::2],
        values.astype(np.float32),
    ]


def heights(n=48):
    x = np.linspace(-3, 3, n)
    return np.sin(x)[None, :] * np.cos(0.7 * x)[:, None]


SHAPES = {
    "sphere": Sphere((0.3, -0.2, 0.5), 1.7),
    "circle": Sphere((0.3, -0.2), 1.7),
    "cylinder": Cylinder((0, 0, -1), (0, 0, 2), 1.3),
    "open tube": Cylinder((0.5, -1, 0.2), (-1, 2, 1.5), 0.9, capped=False),
    "terrain": Heightfield(heights(), spacing=(0.125, 0.125), origin=(-3, -3)),
    "terrain surface, diagonals": Heightfield(
        heights(),
        spacing=(0.125, 0.125),
        origin=(-3, -3),
        solid=False,
        diagonals=np.arange(47 * 47).reshape(47, 47) % 3 == 0,
    ),
    "bilinear terrain": Heightfield(
        heights(), spacing=(0.125, 0.125), origin=(-3, -3), surface="BILINEAR"
    ),
}


def placed_too(name, shape):
    yield name, shape
    if shape.dimension == 3:
        yield f"{name}, sheared", Placed(shape, SHEAR)
        yield f"{name}, similarity", Placed(shape, SIMILARITY)
    else:
        yield f"{name}, placed", Placed(shape, [[0, -2, 1], [1, 0, 0.5], [0, 0, 1]])


def every_query(shape, origins, directions, limit):
    """Runs each query the shape answers (sphere casts only where rigid, on terrains only
    TRIANGLES)."""
    raycast(shape, origins, directions, limit)
    occluded(shape, origins, np.add(origins, directions))
    if not isinstance(shape, Placed) or shape.uniform_scale is not None:
        field = getattr(shape, "shape", shape)
        if not (isinstance(field, Heightfield) and field.surface == "BILINEAR"):
            sphere_cast(shape, origins, np.add(origins, directions), limit)
    if isinstance(shape, Heightfield):
        raycast_all(shape, origins, directions, limit)


def compiled_kernels():
    """Every cached kernel (an entry point called from Python) of the loaded kernel modules."""
    backend_module = sys.modules["geometry_queries.core.backend"]  # core.backend: the function
    for module in backend_module._modules.values():
        for name, value in vars(module).items():
            # a kernel per model (kernels/heightfield.py's _TRACES) is kept in a dict
            functions = value.items() if isinstance(value, dict) else [(None, value)]
            for key, function in functions:
                if isinstance(function, numba.core.registry.CPUDispatcher) and isinstance(
                    function._cache, FunctionCache
                ):
                    yield f"{module.__name__}.{name}{'' if key is None else key}", function


def differences(types):
    """The elements in which numba types differ (those of a tuple, else the types)."""
    if all(isinstance(t, numba.types.BaseTuple) for t in types):
        if len({len(t) for t in types}) == 1:
            return {
                k: sorted({str(t[k]) for t in types})
                for k in range(len(types[0]))
                if len({t[k] for t in types}) > 1
            }
    return sorted({str(t) for t in types})


def test_each_kernel_compiles_once_per_placement_whatever_the_inputs():
    rng = np.random.default_rng(5)
    n = 64
    points = rng.normal(0, 3, (n, 3))
    targets = rng.normal(0, 1, (n, 3))
    for base_name, base_shape in SHAPES.items():
        for _, shape in placed_too(base_name, base_shape):
            dimension = shape.dimension
            origin_forms = input_forms(points, dimension)
            direction_forms = input_forms(targets - points, dimension)
            for form in origin_forms:
                for limit in limits_forms(n) if form != "one row" else [30.0, 7]:
                    every_query(shape, origin_forms[form], direction_forms[form], limit)

    kernels = dict(compiled_kernels())
    assert {name.rsplit(".", 1)[1] for name in kernels} >= {"raycast", "occluded", "records"}
    for name, function in kernels.items():
        parameters = list(inspect.signature(function.py_func).parameters)
        by_placement = {}
        for signature in function.signatures:
            placement = (
                signature[parameters.index("placement")] if "placement" in parameters else None
            )
            by_placement.setdefault(str(placement).split("(")[0], []).append(signature)
        for placement, signatures in by_placement.items():
            differing = {
                parameters[k]: differences([signature[k] for signature in signatures])
                for k in range(len(parameters))
                if len({signature[k] for signature in signatures}) > 1
            }
            assert len(signatures) == 1, (name, placement, differing)


def test_placement_helper_gives_one_type_for_every_placed_shape():
    """The kernels' view of a placement: float64 C arrays and a float scale, for any matrix."""
    for matrix in (SHEAR, SIMILARITY, SHEAR.astype(np.float32).tolist(), np.eye(4, dtype=int)):
        placement = kernel_rays.placement(Placed(Sphere((0, 0, 0), 1.0), matrix))
        assert [numba.typeof(part) for part in placement] == [
            numba.typeof(np.eye(3)),
            numba.typeof(np.zeros(3)),
            numba.typeof(np.eye(3)),
            numba.float64,
        ]


def test_the_ordered_terrain_walk_is_the_one_compiled_walk(tmp_path):
    """On a large terrain raycast gathers the rays in block order (_ordered_rays), runs the
    terrain's walk on them and scatters the results back (_scatter_hits): the walk is the
    one raycast runs on a few rays (the gathered arrays have the drivers' types, so it
    compiles once), and occluded runs the any-hit walk of the same model. Checked in a new
    process with an empty cache, and that no other model's walk was compiled."""
    code = f"""
import sys
import numpy as np
from geometry_queries.core import Heightfield, occluded, raycast
from geometry_queries.core.backend import kernels, set_cache_dir, use
set_cache_dir({str(tmp_path)!r})
with use("numba"):
    module = kernels("heightfield.ray_kernel")
    order = kernels("heightfield.ray_order")
    side = int(np.ceil(np.sqrt(order.SORT_MIN_CELLS)))
    x = np.linspace(0, 40, side)
    field = Heightfield(np.sin(x)[None, :] * np.cos(x)[:, None])
    many = 4 * order.SORT_MIN_RAYS
    rng = np.random.default_rng(1)
    origins = np.column_stack([rng.uniform(0, side - 1, (many, 2)), np.full(many, 5.0)])
    directions = np.column_stack([rng.normal(0, 0.3, (many, 2)), -np.ones(many)])
    hits = raycast(field, origins, directions)
    occluded(field, origins, origins + 10 * directions)
    raycast(field, origins[:10], directions[:10])
    compiled = {{key: len(walk.signatures) for key, walk in module._TRACES.items()}}
    print(hits.hit.sum(), len(order._ordered_rays.signatures), compiled)
"""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "build", "addon-from-checkout"))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    hits, ordered, compiled = run.stdout.split(maxsplit=2)
    assert int(hits) > 0 and int(ordered) == 1
    walks = ast.literal_eval(compiled)  # (bilinear, solid, any_hit) -> signatures compiled
    assert walks == {
        (bilinear, solid, any_hit): 1 if (not bilinear and solid) else 0
        for bilinear in (False, True)
        for solid in (False, True)
        for any_hit in (False, True)
    }
