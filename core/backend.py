"""Which implementation answers a query: a compiled numba kernel or the numpy reference.

Both give the same answers bit for bit; the numpy modules are the readable reference. The
latency rule (docs/DESIGN.md, "Backends and the latency rule"): a query runs on its compiled
kernel when that kernel is already loaded in this process (a query of its kind ran compiled
here, or core/prepare.py's background loader loaded it), or when numpy's expected time for
the batch (the shape's ``numpy_seconds(query, n)``) exceeds the wait for the kernel:
importing numba (once per process) plus compiling that kind (``COMPILE_SECONDS``); on the
numpy reference otherwise, so a small query never waits for a compile. Where the background
preparation failed, only loaded kernels run. ``GEOMETRY_QUERIES_BACKEND=numpy`` forces the
numpy reference, ``=numba`` the kernels whatever they cost (failing clearly without numba);
``use(name)`` does the same for a ``with`` block in the calling thread (tests compare the
two). ``backend()`` names the backend in charge: "numba" when the compiled kernels may
answer, else "numpy".

How a shape plugs in (core/sphere/ray_kernel.py is a complete example), through the shape
protocol (core/protocol.py):

* The shape class sets ``kernel_family = "<name>"``; ``KERNEL_MODULES`` names the module
  under core/ holding that family's kernel of each query (``sphere.ray_kernel``: raycast
  and occluded; ``sphere.cast_kernel``: sphere_cast), imported by :func:`kernels` the first
  time such a query runs on the numba backend, never at import of ``core``. Each kernel
  compiles on its first call, each query on its own (float64, no fastmath). The shape's
  ``compiled_queries`` says which of them serve its model (a bilinear terrain's raycast_all
  is numpy only).
* ``shape.kernel_arguments(query)`` returns the shape's parameters as a tuple (floats, ints,
  bools, float64 arrays; a named tuple where the kernel reads many, e.g. the terrain's
  heightfield/ray_arguments.py's ``RayArguments``) that the kernel takes first (the
  terrain's sphere cast gets more: its per-cell extremes). Its element types must not
  depend on how the shape was made (an int where a float was, a read-only array where a
  writable one was: each is a new compile), e.g. every array a read-only view
  (heightfield/ray_arguments.py's ``_read_only``).
* The module defines a function per query it supports, a loop over the rays
  ``range(start, stop)`` that returns how many of them were bad (non-finite input or a zero
  direction; core/queries.py then lets the numpy validation name the first one):
  ``raycast(arguments, placement, origins, directions, max_distance, out, start, stop)``,
  ``sphere_cast(arguments, placement, starts, ends, radius, out, start, stop)`` and
  ``occluded(arguments, placement, starts, ends, trim, out, start, stop)`` (``trim`` holds
  core/reference.py's ON_SEGMENT_END, ``out`` the (N,) bool array; kernel_common.py's
  segment_ray and segment_blocked repeat the numpy reference's segment arithmetic).
  Rays are (N, 3) float64 (2D rows come with z = 0); ``max_distance`` / ``radius`` hold one
  value for all or one per ray; ``placement`` is None, or (kernel_common.placement) a Placed
  wrapper's matrices, so the kernel moves each ray to local space and its hit back; ``out``
  is the tuple of (N, 3) / (N,) result arrays (hit, distance, point, normal[, cell]) for
  raycast (cell when the shape sets ``kernel_cells = True``) and (hit, distance, center,
  point, normal) for sphere_cast. kernel_common.py has the helpers, kernel_loops.py the
  loops over blocks of ``BLOCK`` rays (read_rays, then per ray ray_in_block, to_local, the
  shape's one-ray function, normal_to_world, keep_hit; then write_ray_hits) that a shape's
  kernel runs with its one-ray function, see sphere/ray_kernel.py.
* raycast_all's kernel (heightfield/crossings_kernel.py's ``records``) is called by the
  shape, not over a range of rays: queries.py hands it to ``shape.crossings``, which calls
  it on each chunk of rays in its own space, once counting each ray's records and once
  writing them.
* :func:`kernel` runs a batch: in the calling thread below ``PARALLEL_MIN`` rays (small
  batches must not pay for threads), else split into one block per thread
  (``NUMBA_NUM_THREADS``, default: all cores), the kernels releasing the GIL. Threads of our
  own rather than ``parallel=True``/``prange``: a prange loop recompiles every helper for
  the parallel target, a longer first use.

Every kernel follows the rules in docs/DESIGN.md ("Writing kernels"), which keep its first
use short (compiling is most of it): entry points ``@njit(cache=True, nogil=True,
error_model="numpy")`` that receive exactly what the drivers pass, so each compiles one
signature per kind of placement (tests/core/test_kernel_signatures.py checks it); everything
else a ``@helper`` or ``@rare_helper`` (kernel_common.py); one kernel per model, made by a
factory closing over its constants (heightfield/ray_kernel.py's ``_make_trace``); no
literals into compiled calls; selects and few, alike arrays rather than numba's own ``min``,
``max``, ``np.zeros`` or ``np.sort``. Measure a new or grown kernel with
bench/bench_first_use.py.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import importlib
import importlib.metadata
import os
import re
import shutil
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .protocol import Shape

PARALLEL_MIN = 2048  # rays; below this one thread (handing blocks to threads costs more)

# The latency rule's costs of waiting for a kernel, CPU seconds on a 2-core VM
# (bench/bench_first_use.py): importing numba, then compiling one kind of query (a
# kernel module's query for one shape model and one kind of placement). A kind loaded from
# the cache costs far less, but whether the cache holds it is unknown until it is loaded, so
# the rule counts a compile.
NUMBA_IMPORT_SECONDS = 0.4
COMPILE_SECONDS = {
    ("sphere", "raycast"): 1.5,
    ("sphere", "occluded"): 1.5,
    ("sphere", "sphere_cast"): 1.5,
    ("cylinder", "raycast"): 2.3,
    ("cylinder", "occluded"): 2.3,
    ("cylinder", "sphere_cast"): 3.1,
    ("heightfield", "raycast"): 3.8,
    ("heightfield", "occluded"): 3.5,
    ("heightfield", "sphere_cast"): 7.9,
    ("heightfield", "raycast_all"): 3.2,
    ("heightfield", "viewshed"): 3.5,
}
UNKNOWN_COMPILE_SECONDS = 8.0  # a kind missing above: above the longest listed

# The module (under core/) holding each family's kernel of each query: a shape names its
# family (``kernel_family``), the query picks the module.
KERNEL_MODULES = {
    ("sphere", "raycast"): "sphere.ray_kernel",
    ("sphere", "occluded"): "sphere.ray_kernel",
    ("sphere", "sphere_cast"): "sphere.cast_kernel",
    ("cylinder", "raycast"): "cylinder.ray_kernel",
    ("cylinder", "occluded"): "cylinder.ray_kernel",
    ("cylinder", "sphere_cast"): "cylinder.cast_kernel",
    ("heightfield", "raycast"): "heightfield.ray_kernel",
    ("heightfield", "occluded"): "heightfield.ray_kernel",
    ("heightfield", "sphere_cast"): "heightfield.cast_kernel",
    ("heightfield", "raycast_all"): "heightfield.crossings_kernel",
    ("heightfield", "viewshed"): "heightfield.viewshed_kernel",
}

_CHOICES = ("numba", "numpy")
_local = threading.local()  # per thread: use()'s override, notify_waits()'s callback
_numba_error = None  # why numba did not import, once tried
_numba_checked = False
_cache_dir = None  # set_cache_dir()
_modules: dict[str, ModuleType] = {}
_FOLDER_PREFIX = "geometry_queries-kernels-"
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_loaded: set[tuple] = set()  # kinds whose kernel ran in this process
_refusal: str | None = None  # why only loaded kernels may run (refuse_compiles())
_import_lock = threading.Lock()


def _numba_config() -> Any:
    """numba.config (its settings are module globals made at run time: typed as Any)."""
    import numba

    return numba.config


def _numba_available() -> bool:
    global _numba_checked, _numba_error
    if not _numba_checked:
        try:
            import numba  # noqa: F401
        except Exception as error:  # ImportError, or numba refusing this numpy version
            _numba_error = f"{type(error).__name__}: {error}"
        _numba_checked = True
    return _numba_error is None


def numba_error() -> str | None:
    """Why numba does not import here (None when it does)."""
    _numba_available()
    return _numba_error


def why_numba_is_unavailable() -> str | None:
    """:func:`numba_error` in a user's words (None when numba imports). numba refuses to
    import beside a numpy release newer (or older) than the ones it supports, as the numba
    bundled for a platform may beside a later Blender's numpy; that is said as such."""
    error = numba_error()
    if error is None:
        return None
    refusal = re.search(r"Numba needs NumPy (\d+(?:\.\d+)* or \w+)", error)
    if refusal is None:
        return f"numba does not import ({error})"
    try:
        numba_version = " " + importlib.metadata.version("numba")
    except importlib.metadata.PackageNotFoundError:
        numba_version = ""
    return (
        f"numba{numba_version} does not support NumPy {np.__version__} "
        f"(it needs {refusal.group(1)}); the numpy code answers"
    )


def forced() -> str | None:
    """The backend forced by ``use()`` in this thread or by GEOMETRY_QUERIES_BACKEND, or None
    when the latency rule chooses."""
    override = getattr(_local, "override", None)
    if override is not None:
        return override
    name = os.environ.get("GEOMETRY_QUERIES_BACKEND", "").strip().lower()
    if name and name not in _CHOICES:
        raise ValueError(f"GEOMETRY_QUERIES_BACKEND must be 'numba' or 'numpy', got {name!r}")
    return name or None


def _demand_numba(name: str | None) -> None:
    if not _numba_available():
        if getattr(_local, "override", None) == "numba":
            raise RuntimeError(f"numba does not import ({_numba_error})")
        raise RuntimeError(
            f"GEOMETRY_QUERIES_BACKEND={name} but numba does not import ({_numba_error}); "
            "install numba or unset GEOMETRY_QUERIES_BACKEND"
        )


def backend() -> str:
    """The backend in charge: "numba" (the compiled kernels answer where the latency rule
    lets them) or "numpy" (the reference answers everything)."""
    name = forced()
    if name == "numpy":
        return "numpy"
    if _numba_available():
        return "numba"
    if name == "numba":
        _demand_numba(name)
    return "numpy"


@contextlib.contextmanager
def _thread_setting(name: str, value: Any, unset: Any):
    """``_local.<name>`` set to ``value`` in this thread for a ``with`` block (``unset``
    when it had none), then restored."""
    previous = getattr(_local, name, unset)
    setattr(_local, name, value)
    try:
        yield
    finally:
        setattr(_local, name, previous)


def use(name: str):
    """Run the queries of a ``with`` block, in this thread, on backend ``name`` ("numba":
    every query compiled, whatever the wait; "numpy": the reference)."""
    if name not in _CHOICES:
        raise ValueError(f"backend must be 'numba' or 'numpy', got {name!r}")
    if name == "numba" and not _numba_available():
        raise RuntimeError(f"numba does not import ({_numba_error})")
    return _thread_setting("override", name, None)


def compile_freely():
    """In this thread, for a ``with`` block, let every query wait for its kernel as if numpy
    would take longer (unless a backend is forced or compiling is refused): for the work
    that follows a compiled step of the same request (the lines of sight a viewshed's
    sweep leaves undecided), which would otherwise repeat numpy's per-call cost."""
    return _thread_setting("compile_freely", True, False)


def notify_waits(callback: Callable[[str], None]):
    """Call ``callback(message)`` in this thread before a query of the ``with`` block waits
    for a kernel to compile or load (a large batch, by the latency rule)."""
    return _thread_setting("on_wait", callback, None)


def refuse_compiles(reason: str | None) -> None:
    """From now on (reason given) only kernels already loaded may answer, unless a backend is
    forced: the background preparation failed for ``reason``. None lifts it."""
    global _refusal
    _refusal = reason


def set_cache_dir(path) -> None:
    """Keep the compiled kernels under ``path`` (the extension's user directory in Blender).
    Takes effect for kernel modules not imported yet."""
    global _cache_dir
    _cache_dir = os.fspath(path)


def cache_root() -> str | None:
    """The folder given to :func:`set_cache_dir`, else None (numba's own default)."""
    return _cache_dir


def _kernels_fingerprint() -> str:
    """A hash of the kernels' sources: kernel_common.py, kernel_loops.py and every module of
    the folders holding a kernel module (the kernels, the helpers they inline from the
    modules beside them, the constants they take from the references). numba checks only a
    function's own file before it reuses a cached kernel, not the files of the helpers it
    inlines: a cache folder per version of all the sources keeps a stale kernel from being
    loaded."""
    root = os.path.dirname(os.path.abspath(__file__))
    folders = sorted({module.split(".")[0] for module in KERNEL_MODULES.values()})
    sources = ["kernel_common.py", "kernel_loops.py"] + [
        f"{folder}/{name}"
        for folder in folders
        for name in sorted(os.listdir(os.path.join(root, folder)))
        if name.endswith(".py")
    ]
    digest = hashlib.sha256()
    for source in sources:
        with open(os.path.join(root, *source.split("/")), "rb") as file:
            digest.update(source.encode() + b"\0" + file.read())
    return digest.hexdigest()[:16]


def _default_cache_root() -> str:
    """numba's own choice: NUMBA_CACHE_DIR, else __pycache__ beside the sources when
    writable, else numba's user-wide cache (read without importing numba)."""
    root = os.environ.get("NUMBA_CACHE_DIR", "")
    if root:
        return root
    here = os.path.dirname(os.path.abspath(__file__))
    if os.access(here, os.W_OK):
        return os.path.join(here, "__pycache__")
    from numba.misc.appdirs import AppDirs

    return AppDirs(appname="numba", appauthor=False).user_cache_dir


def cache_dir() -> str:
    """Where the compiled kernels are kept: the folder given to :func:`set_cache_dir`, else
    numba's default, in a subfolder per version of the kernels' sources."""
    root = _cache_dir or _default_cache_root()
    folder = f"{_FOLDER_PREFIX}{_kernels_fingerprint()}"
    if _cache_dir:  # our own directory: drop the kernels of earlier versions
        with contextlib.suppress(OSError):
            for old in os.listdir(_cache_dir):
                if old.startswith(_FOLDER_PREFIX) and old != folder:
                    shutil.rmtree(os.path.join(_cache_dir, old), ignore_errors=True)
    return os.path.join(root, folder)


def kernels(name: str):
    """The kernel module ``name`` under core/ (a value of KERNEL_MODULES, e.g.
    "sphere.ray_kernel"), imported on first use (numba backend only)."""
    module = _modules.get(name)
    if module is None:
        with _import_lock:  # the background loader and a query may import it together
            module = _modules.get(name)
            if module is None:
                # numba picks a function's cache folder when it is decorated: point it at
                # ours for the import only, so other numba users keep their own setting.
                config = _numba_config()
                previous = config.CACHE_DIR
                config.CACHE_DIR = cache_dir()
                try:
                    module = importlib.import_module(f"{__package__}.{name}")
                finally:
                    config.CACHE_DIR = previous
                _modules[name] = module
    return module


def threads() -> int:
    """Threads for large batches: NUMBA_NUM_THREADS (numba's default: every core)."""
    return max(1, int(_numba_config().NUMBA_NUM_THREADS))


def kind(shape: Shape, query: str) -> tuple:
    """What one compiled kernel answers: the shape's kernel family, the query, the shape's
    model (``kernel_variant``) and whether rays are placed (a Placed wrapper's matrices).
    raycast_all's kernel is one kind for every model and placement: it takes the model as
    values and the rays in the shape's own space (Placed moves them there in numpy)."""
    if query == "raycast_all":
        return (shape.kernel_family, query, None, False)
    return (shape.kernel_family, query, shape.kernel_variant, shape.placed)


def loaded(key: tuple) -> bool:
    """Whether the kernel of ``key`` (see :func:`kind`) has run in this process."""
    return key in _loaded


def wait_seconds(key: tuple) -> float:
    """The latency rule's estimate of the wait before the kernel of ``key`` can run."""
    wait = COMPILE_SECONDS.get(key[:2], UNKNOWN_COMPILE_SECONDS)
    return wait if "numba" in sys.modules else wait + NUMBA_IMPORT_SECONDS


def compiled(key: tuple, numpy_seconds: Callable[[], float]) -> bool:
    """The latency rule (module docstring): whether the kernel of ``key`` answers a batch
    that numpy would answer in ``numpy_seconds()``."""
    name = forced()
    if name is not None:
        if name == "numba":
            _demand_numba(name)
        return name == "numba"
    if key in _loaded:
        return True
    if _refusal is not None:
        return False
    if not getattr(_local, "compile_freely", False) and numpy_seconds() <= wait_seconds(key):
        return False
    return _numba_available()


def _from_numba_cache(error: BaseException) -> bool:
    """Whether ``error`` was raised while numba read its cache (a damaged file)."""
    traceback = error.__traceback__
    while traceback is not None:
        name = traceback.tb_frame.f_code.co_filename.replace("\\", "/")
        if name.endswith("numba/core/caching.py"):
            return True
        traceback = traceback.tb_next
    return False


def _purge_cache() -> None:
    """Remove the kernels' cache folder (numba writes a new one on the next compile)."""
    shutil.rmtree(cache_dir(), ignore_errors=True)


def first_run(key: tuple, function: Callable[..., Any], *arguments: Any) -> Any:
    """``function(*arguments)``, the first call of a kernel of ``key`` in this process:
    tells a waiting caller (notify_waits), and answers from a fresh compile when numba's
    cache is damaged (an unreadable file is removed, never shown). Later calls go direct."""
    if key in _loaded:
        return function(*arguments)
    callback = getattr(_local, "on_wait", None)
    if callback is not None:
        callback("Compiling fast kernels (first use)…")
    try:
        result = function(*arguments)
    except Exception as error:
        if not _from_numba_cache(error):
            raise
        _purge_cache()
        result = function(*arguments)
    _loaded.add(key)
    return result


def kernel(shape: Shape, query: str, n: int, numpy_seconds: Callable[[], float] | None = None):
    """The compiled ``query`` of ``shape`` for a batch of ``n`` rays; None when the numpy
    reference answers (the latency rule, or no such kernel: the shape's family has none,
    or its model has none, ``compiled_queries``). For "raycast", "sphere_cast" and
    "occluded" a function running it on the whole batch, ``run(arguments, placement, rays,
    rays, values, out) -> bad rows``; for "raycast_all" the records kernel itself,
    ``run(arguments, rays, limit, out, write) -> records per ray``, which the shape calls
    on its own rays, once counting and once writing (heightfield/crossings_kernel.py).
    ``numpy_seconds`` overrides the shape's estimate of numpy's time."""
    family = shape.kernel_family
    module = None if family is None else KERNEL_MODULES.get((family, query))
    if module is None or query not in shape.compiled_queries:
        return None
    key = kind(shape, query)
    if numpy_seconds is None:
        numpy_seconds = functools.partial(shape.numpy_seconds, query, n)
    if not compiled(key, numpy_seconds):
        return None
    if query == "raycast_all":
        return functools.partial(first_run, key, kernels(module).records)
    loop = getattr(kernels(module), query)

    def run(*arguments: Any) -> int:
        return first_run(key, _run_batch, loop, arguments)

    return run


def _run_batch(loop, arguments) -> int:
    """``loop`` over the whole batch: in this thread below ``PARALLEL_MIN`` rays, else split
    over ``threads()`` (the kernels release the GIL)."""
    n = len(arguments[2])
    return run_split(loop, arguments, n, 1 if n < PARALLEL_MIN else threads())


def run_split(loop, arguments, n: int, count: int) -> int:
    """``loop(*arguments, start, stop)`` over ``range(n)`` cut into ``count`` equal parts,
    one per thread (this one and the pool's), summing what each returns."""
    if count <= 1 or n < 2:
        return loop(*arguments, 0, n)
    global _pool
    if _pool is None or _pool._max_workers != count - 1:
        _pool = concurrent.futures.ThreadPoolExecutor(
            count - 1, thread_name_prefix="geometry_queries"
        )
    bounds = [n * block // count for block in range(count + 1)]
    block = functools.partial(loop, *arguments)
    others = [_pool.submit(block, start, stop) for start, stop in zip(bounds[1:-1], bounds[2:])]
    bad = block(bounds[0], bounds[1])  # the first block in this thread
    return bad + sum(future.result() for future in others)
