"""Run the test suite inside a Blender binary (or any Python where ``import bpy`` works).

    blender -b --factory-startup --python-exit-code 1 \
        --python tests/run_in_blender.py -- [pytest args]
    .venv/bin/python tests/run_in_blender.py [--] [pytest args]     (bpy as a module: the same)

Arguments after ``--`` go to pytest unchanged; paths in them are relative to the repository
root (the runner changes into it, so pytest.ini and its testpaths apply). No arguments: the
whole suite.

Blender's own Python has no pytest: install the test dependencies into it once, e.g.
    <blender>/5.0/python/bin/python3.11 -m pip install pytest hypothesis mpmath
(the versions of requirements-dev.txt; not bpy, which is Blender itself, nor numpy, which
Blender bundles).

Exit code: pytest's. A non-zero code leaves through ``sys.exit(code)``: inside Blender the
SystemExit of a ``--python`` script reaches ``PyErr_Print``, which ends the process with that
code; ``--python-exit-code 1`` also turns any other uncaught error here into exit code 1.
Zero returns normally, so Blender finishes its command line and quits cleanly with 0.

Nothing here touches BLENDER_USER_RESOURCES: inside Blender, bpy is already imported and
tests/blender/conftest.py leaves it alone; with bpy as a module, conftest sets it before
importing bpy, as in a plain `pytest` run.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_args(argv):
    """Everything after ``--`` (Blender puts its own arguments before it), else argv[1:]."""
    return argv[argv.index("--") + 1 :] if "--" in argv else argv[1:]


def main():
    try:
        import pytest
    except ImportError:
        raise SystemExit(
            f"run_in_blender: pytest is not installed for this Python ({sys.executable}).\n"
            f"Install the test dependencies into it: {sys.executable} -m pip install "
            "pytest hypothesis mpmath"
        ) from None
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    os.chdir(ROOT)
    return int(pytest.main(pytest_args(sys.argv)))


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    if code:
        sys.exit(code)
