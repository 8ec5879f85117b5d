"""Which implementation answers the queries: compiled numba kernels or the numpy reference.

``backend()`` is "numba" when numba imports and "numpy" otherwise; the environment variable
``GEOMETRY_QUERIES_BACKEND=numpy`` forces the numpy reference, ``=numba`` demands numba (and
fails clearly without it). ``use("numpy")`` switches for a ``with`` block (tests compare the
two). Both backends give the same answers; the numpy modules are the readable reference.

How a shape plugs in (core/kernels/sphere.py is a complete example):

* The shape class sets ``kernel_module = "<name>"``: the module ``core/kernels/<name>.py``,
  imported by :func:`kernels` the first time a query on such a shape runs on the numba
  backend, never at import of ``core``. Its functions compile on their first call
  (``@njit(cache=True)``, float64, no fastmath), each query on its own.
* ``shape._kernel_arguments()`` returns the shape's parameters as a tuple (floats, float64
  arrays) that the module's kernels take first.
* The module defines, per query it supports, a pair made by
  ``kernels.rays.serial_and_parallel`` from one loop over rays written with ``prange``:
  ``raycast_serial`` / ``raycast_parallel`` with the signature
  ``(arguments, placement, origins, directions, max_distance, out) -> bad rows`` and
  ``sphere_cast_serial`` / ``sphere_cast_parallel`` with
  ``(arguments, placement, starts, ends, radius, out) -> bad rows``.
  ``placement`` (kernels.rays.placement) carries a Placed wrapper's matrices, so the kernel
  moves each ray to local space and its hit back; ``out`` is the tuple of result arrays
  (hit, distance, point, normal[, cell]) for raycast and (hit, distance, center, point,
  normal) for sphere_cast. Per-ray helpers for loading, normalizing, placing and storing
  live in kernels/rays.py; a shape module adds only its own one-ray function. "bad rows"
  counts rows with non-finite input or a zero direction: core/rays.py then lets the numpy
  validation name the first one.
* :func:`kernel` finds a shape's kernel; it runs the serial loop for small batches (below
  ``PARALLEL_MIN`` rays, which must not pay for starting threads) or when numba runs one
  thread (``NUMBA_NUM_THREADS``).
"""

from __future__ import annotations

import contextlib
import importlib
import os

PARALLEL_MIN = 2048  # rays; below this the serial loop wins (thread start-up ~20-50 us)

_CHOICES = ("numba", "numpy")
_override = None  # set by use()
_numba_error = None  # why numba did not import, once tried
_numba_checked = False
_cache_dir = None
_modules = {}


def _numba_available() -> bool:
    global _numba_checked, _numba_error
    if not _numba_checked:
        _numba_checked = True
        try:
            import numba  # noqa: F401
        except Exception as error:  # ImportError, or numba refusing this numpy version
            _numba_error = f"{type(error).__name__}: {error}"
    return _numba_error is None


def backend() -> str:
    """The active backend: "numba" or "numpy"."""
    if _override is not None:
        return _override
    forced = os.environ.get("GEOMETRY_QUERIES_BACKEND", "").strip().lower()
    if forced and forced not in _CHOICES:
        raise ValueError(f"GEOMETRY_QUERIES_BACKEND must be 'numba' or 'numpy', got {forced!r}")
    if forced == "numpy":
        return "numpy"
    if _numba_available():
        return "numba"
    if forced == "numba":
        raise RuntimeError(
            f"GEOMETRY_QUERIES_BACKEND=numba but numba does not import ({_numba_error}); "
            "install numba or unset GEOMETRY_QUERIES_BACKEND"
        )
    return "numpy"


@contextlib.contextmanager
def use(name: str):
    """Run the queries of a ``with`` block on backend ``name`` ("numba" or "numpy")."""
    global _override
    if name not in _CHOICES:
        raise ValueError(f"backend must be 'numba' or 'numpy', got {name!r}")
    if name == "numba" and not _numba_available():
        raise RuntimeError(f"numba does not import ({_numba_error})")
    previous, _override = _override, name
    try:
        yield
    finally:
        _override = previous


def set_cache_dir(path: str) -> None:
    """Keep the compiled kernels in ``path`` (the extension's user directory in Blender).
    Takes effect for kernel modules not imported yet; without it, numba's own default."""
    global _cache_dir
    _cache_dir = os.fspath(path)


def kernels(name: str):
    """The kernel module core/kernels/``name``.py, imported on first use (numba backend only)."""
    module = _modules.get(name)
    if module is None:
        import numba

        # numba picks a function's cache directory when it is decorated: point it at ours for
        # the import only, so other numba users in the same process keep their own setting.
        previous = numba.config.CACHE_DIR
        if _cache_dir is not None:
            numba.config.CACHE_DIR = _cache_dir
        try:
            module = importlib.import_module(f"{__package__}.kernels.{name}")
        finally:
            numba.config.CACHE_DIR = previous
        _modules[name] = module
    return module


def kernel(shape, query: str):
    """The compiled ``query`` ("raycast" or "sphere_cast") for ``shape`` as a function of
    the ray count that returns the loop to run; None when the numpy backend is active or
    the shape has no such kernel."""
    name = getattr(shape, "kernel_module", None)
    if name is None or backend() != "numba":
        return None
    module = kernels(name)
    serial = getattr(module, f"{query}_serial", None)
    if serial is None:
        return None
    parallel = getattr(module, f"{query}_parallel")

    def for_rays(n: int):
        import numba

        if n < PARALLEL_MIN or numba.get_num_threads() == 1:
            return serial
        return parallel

    return for_rays
