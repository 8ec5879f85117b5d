"""Kernels prepared in the background, so that no query waits for numba.

:func:`start` runs the preparation: one or two worker processes (this Python's
``sys.executable``, which inside Blender is Blender's own; at the lowest priority) compile
every kind of kernel missing from the cache (core/backend.py's :func:`~.backend.kind`)
into the kernels' cache folder, one kind after another, and report each. A thread of this
process then loads that kind from the cache (off the main thread) and core/backend.py's
latency rule runs it from then on. Workers are separate processes because numba holds the
GIL while it compiles: in a thread it would stall Blender's interface.

Failure never reaches a query. A worker loads what the cache holds before this process
does, so a damaged cache is found there and rebuilt (backend.first_run); a worker that
crashes is started again once on an emptied cache; if it fails again, or numba does not
import, or the cache folder cannot be written, :func:`status` says why and queries go on
with the numpy reference (and any kernel already loaded).

Each kind is warmed by a query of that kind on a few rays (:func:`warm`); the ones Blender's
operators use (placed shapes) come first. A worker prints ``ready <index>`` after each.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import IO, Any

from .backend import (
    cache_dir,
    cache_root,
    forced,
    refuse_compiles,
    set_cache_dir,
    use,
    why_numba_is_unavailable,
)

WORKERS = 2  # at most: compiling is single-threaded, and a 2-core machine stays usable
WAIT_FOR_STOP = 2.0  # seconds a stopped worker gets before it is killed


@dataclass(frozen=True)
class Status:
    """Where the preparation stands: ``state`` is "off" (a backend is forced, nothing to
    prepare), "idle" (not started: kernels compile when a batch pays for it), "preparing",
    "ready" or "unavailable" (``reason`` says why); ``done`` of ``total`` kinds loaded."""

    state: str
    done: int = 0
    total: int = 0
    reason: str = ""

    def line(self) -> str:
        """One line for a user: "Fast kernels: ready", "... preparing, 3 of 40", ..."""
        if self.state == "preparing":
            return f"Fast kernels: preparing, {self.done} of {self.total}"
        if self.state == "unavailable":
            return f"Fast kernels: unavailable: {self.reason}"
        if self.state == "off":
            return f"Fast kernels: off ({self.reason})"
        if self.state == "idle":
            return "Fast kernels: compiled when a large batch first needs them"
        return "Fast kernels: ready"


MODELS = (
    "sphere",
    "cylinder",
    "open tube",
    "terrain",
    "terrain surface",
    "bilinear terrain",
    "bilinear surface",
)


def kinds() -> list[tuple[str, str, bool]]:
    """(query, model, placed) per kind of kernel, in the order they are prepared."""
    listed = []
    # Blender's objects are placed, and its terrains are triangles: those first.
    for placed in (True, False):
        for model in MODELS[:5]:
            listed += [("ray", model, placed), ("line of sight", model, placed)]
            listed.append(("sphere cast", model, placed))
    # A large terrain's batches are gathered in order first (heightfield.ray_order's
    # in_coherent_order): one more kernel per kind of placement.
    for placed in (True, False):
        listed += [("ray", "large terrain", placed), ("sphere cast", "large terrain", placed)]
    listed.append(("every hit", "terrain", False))
    listed.append(("viewshed", "terrain", False))  # Visibility's sweep (core/visibility.py)
    for placed in (True, False):
        for model in MODELS[5:]:  # bilinear patches: no sphere casts
            listed += [("ray", model, placed), ("line of sight", model, placed)]
    return listed


def kind_name(kind: tuple[str, str, bool]) -> str:
    query, model, placed = kind
    return f"{query}, {'placed ' if placed else ''}{model}"


@functools.cache
def _inputs() -> dict[str, Any]:
    """The shapes and rays the warm-ups query (made once, off the main thread)."""
    import numpy as np

    from . import Cylinder, Heightfield, Sphere

    angle = 0.3  # a rotation and a move: placed, and rigid (sphere casts fold no scale)
    rigid = np.array(
        [
            [np.cos(angle), -np.sin(angle), 0.0, 0.5],
            [np.sin(angle), np.cos(angle), 0.0, -0.25],
            [0.0, 0.0, 1.0, 0.125],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )
    heights = np.outer(np.linspace(-1.0, 1.0, 6), np.linspace(-1.0, 1.0, 6))
    spacing, origin = (0.4, 0.4), (-1.0, -1.0)
    rng = np.random.default_rng(1)
    starts = rng.uniform(-1.5, 1.5, (8, 3)) + (0.0, 0.0, 2.0)
    large = rng.uniform((0.0, 0.0, 1.0), (1023.0, 511.0, 2.0), (256, 3))
    return {
        "rigid": rigid,
        "shapes": {
            "sphere": Sphere((0.0, 0.0, 0.0), 1.0),
            "cylinder": Cylinder((0.0, 0.0, -1.0), (0.0, 0.0, 1.0), 1.0),
            "open tube": Cylinder((0.0, 0.0, -1.0), (0.0, 0.0, 1.0), 1.0, capped=False),
            "terrain": Heightfield(heights, spacing, origin),
            "terrain surface": Heightfield(heights, spacing, origin, solid=False),
            "bilinear terrain": Heightfield(heights, spacing, origin, "BILINEAR"),
            "bilinear surface": Heightfield(heights, spacing, origin, "BILINEAR", solid=False),
            "large terrain": Heightfield(np.zeros((512, 1024)), spacing=(1.0, 1.0)),
        },
        # (starts, ends, radii): radius 0 casts take the ray kernel's path too
        "small": (starts, starts * (1.0, 1.0, -1.0), np.array([0.0, 0.1] * 4)),
        "large": (large, large * (1.0, 1.0, -1.0), np.full(len(large), 0.5)),
    }


def warm(kind: tuple[str, str, bool]) -> None:
    """Run one query of ``kind`` on a few rays (its kernel compiles or loads)."""
    from . import Placed, occluded, raycast, raycast_all, sphere_cast, viewshed

    query, model, placed = kind
    inputs = _inputs()
    shape = inputs["shapes"][model]
    if placed:
        shape = Placed(shape, inputs["rigid"])
    starts, ends, radii = inputs["large" if model == "large terrain" else "small"]
    if query == "ray":
        raycast(shape, starts, ends - starts)
    elif query == "line of sight":
        occluded(shape, starts, ends)
    elif query == "sphere cast":
        sphere_cast(shape, starts, ends, radii)
    elif query == "viewshed":
        viewshed(shape, (0.0, 0.0, 1.0))
    else:
        raycast_all(shape, starts, ends - starts)


# --- the worker process ------------------------------------------------------------------

_BOOT = """
import importlib, json, sys, types
job = json.loads(sys.argv[1])
sys.path[:0] = [path for path in job["path"] if path not in sys.path]
for name, path in job["packages"]:  # the parents of core, without running their code
    package = types.ModuleType(name)
    package.__path__ = path
    sys.modules[name] = package
importlib.import_module(job["module"]).work(job["cache"])
"""


def work(cache: str | None) -> None:
    """The worker's loop (in its own process): prepare the kind at each index (of kinds())
    read from standard input, printing ``ready <index>`` after each (``failed <index>
    <why>``, or ``unavailable <why>`` and nothing more when numba does not import)."""
    with contextlib.suppress(AttributeError, OSError):
        os.nice(19)  # type: ignore[attr-defined,unused-ignore]  # POSIX only
    if cache is not None:
        set_cache_dir(cache)
    why = why_numba_is_unavailable()
    if why is not None:
        print(f"unavailable {why}", flush=True)
        return
    listed = kinds()
    for line in sys.stdin:
        index = int(line)
        try:
            with use("numba"):
                warm(listed[index])
        except Exception as failure:
            print(f"failed {index} {type(failure).__name__}: {failure}", flush=True)
        else:
            print(f"ready {index}", flush=True)


# --- this process ------------------------------------------------------------------------


class _Preparation:
    """The workers of one :func:`start`, each followed by a thread of this process that
    starts it, hands it the next kind from one queue whenever it finishes one (so the
    workers finish together), loads the kinds it reports ready and starts it again once if
    it crashes."""

    def __init__(self, cache: str | None, workers: int) -> None:
        self.cache = cache
        self.kinds = kinds()
        self.queue = collections.deque(range(len(self.kinds)))
        self.done: set[int] = set()
        self.reason = ""
        self.stopped = False
        self.restarted = False
        self.lock = threading.Lock()
        self.processes: list[subprocess.Popen] = []
        for _ in range(max(1, workers)):
            threading.Thread(
                target=self._follow, name="geometry_queries-prepare", daemon=True
            ).start()

    def _launch(self, errors: IO[str]) -> subprocess.Popen:
        package = __name__.rpartition(".")[0]  # ...core
        parents = package.split(".")[:-1]
        job = {
            "path": [path for path in sys.path if isinstance(path, str) and path],
            "packages": [
                (name, list(getattr(sys.modules[name], "__path__", ())))
                for name in (".".join(parents[: k + 1]) for k in range(len(parents)))
            ],
            "module": f"{package}.prepare",
            "cache": self.cache,
        }
        environment = dict(os.environ, NUMBA_NUM_THREADS="1")
        environment.pop("GEOMETRY_QUERIES_BACKEND", None)
        flags = 0
        if sys.platform == "win32":
            flags = subprocess.IDLE_PRIORITY_CLASS | subprocess.CREATE_NO_WINDOW
        process = subprocess.Popen(
            [sys.executable, "-c", _BOOT, json.dumps(job)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,  # a file: a full pipe would stall the worker
            env=environment,
            text=True,
            creationflags=flags,
        )
        with self.lock:
            self.processes.append(process)
            if self.stopped:  # stop() came while it started
                process.terminate()
        return process

    def _next(self) -> int | None:
        with self.lock:
            return self.queue.popleft() if self.queue and not self.stopped else None

    def _follow(self) -> None:
        """Run a worker until the queue is empty; if it crashes, put its kind back and
        start one once more (on an emptied cache: a damaged file may crash numba itself)."""
        while True:
            with tempfile.TemporaryFile("w+") as errors:
                try:
                    process = self._launch(errors)
                except OSError as error:
                    self._fail(f"the compiling process did not start ({error})")
                    return
                asked = self._serve(process)
                code = process.wait()
                errors.seek(0)
                last = errors.read().strip().splitlines()[-1:]
            if self.stopped or code == 0:
                return
            with self.lock:
                if asked is not None:
                    self.queue.appendleft(asked)
                again = not self.restarted
                self.restarted = True
            if not again:
                self._fail(f"the compiling process failed ({(last or [f'exit code {code}'])[0]})")
                return
            shutil.rmtree(cache_dir(), ignore_errors=True)

    def _serve(self, process: subprocess.Popen) -> int | None:
        """Hand ``process`` kinds until the queue is empty, loading each it reports ready;
        the kind it was working on when it ended (None when it finished)."""
        stdin: IO[str] = process.stdin  # type: ignore[assignment]  # piped in _launch
        stdout: IO[str] = process.stdout  # type: ignore[assignment]

        def ask() -> int | None:
            index = self._next()
            try:
                if index is None:
                    stdin.close()
                else:
                    stdin.write(f"{index}\n")
                    stdin.flush()
            except OSError:  # it ended already: what it said is still read below
                pass
            return index

        asked = ask()
        for line in stdout:
            word, _, rest = line.strip().partition(" ")
            if self.stopped:
                break
            if word == "unavailable":
                self._fail(rest)
                return None
            if word == "failed":
                index, _, why = rest.partition(" ")
                self._fail(f"{kind_name(self.kinds[int(index)])}: {why}")
            asked = ask()  # the worker goes on while this process loads
            if word == "ready":
                self._load(int(rest))
        return asked

    def _load(self, index: int) -> None:
        try:
            with use("numba"):
                warm(self.kinds[index])
        except Exception as failure:
            self._fail(f"{kind_name(self.kinds[index])}: {type(failure).__name__}: {failure}")
        else:
            with self.lock:
                self.done.add(index)

    def _fail(self, reason: str) -> None:
        with self.lock:
            if not self.reason:
                self.reason = reason
        refuse_compiles(reason)

    def status(self) -> Status:
        with self.lock:
            done, reason = len(self.done), self.reason
        total = len(self.kinds)
        if reason:
            return Status("unavailable", done, total, reason)
        return Status("ready" if done == total else "preparing", done, total)

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            processes = list(self.processes)
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(WAIT_FOR_STOP)
            except subprocess.TimeoutExpired:
                process.kill()


_current: _Preparation | None = None
_refused: Status | None = None  # why start() did not start


def start(workers: int = WORKERS) -> Status:
    """Prepare every kind of kernel in the background (module docstring), unless a backend
    is forced or it runs already; returns at once with the :func:`status`."""
    global _current, _refused
    if _current is not None:
        return _current.status()
    _refused = None
    try:
        chosen = forced()
    except ValueError as error:
        chosen, _refused = "numpy", Status("unavailable", reason=str(error))
    if chosen is not None:
        _refused = _refused or Status("off", reason=f"GEOMETRY_QUERIES_BACKEND={chosen}")
        return _refused
    if importlib.util.find_spec("numba") is None:
        _refused = Status("unavailable", reason="numba is not installed")
        refuse_compiles(_refused.reason)
        return _refused
    folder = cache_dir()
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, f".write-test-{os.getpid()}")
        with open(probe, "w") as file:
            file.write("ok")
        os.remove(probe)
    except OSError as error:
        _refused = Status("unavailable", reason=f"cannot write the kernel cache ({error})")
        refuse_compiles(_refused.reason)
        return _refused
    _current = _Preparation(cache_root(), min(workers, os.cpu_count() or 1))
    return _current.status()


def status() -> Status:
    """Where the background preparation stands (:class:`Status`)."""
    if _current is not None:
        return _current.status()
    return _refused or Status("idle")


def stop() -> None:
    """End the workers (the kinds loaded stay loaded); :func:`start` may run again."""
    global _current, _refused
    if _current is not None:
        _current.stop()
    _current = _refused = None
    refuse_compiles(None)
