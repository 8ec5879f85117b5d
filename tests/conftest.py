"""Shared test set-up: the package ``geometry_queries`` is importable from this checkout
(demo/addon_from_checkout.py links the checkout under that name; subprocesses find it
through PYTHONPATH); under CI a skipped test is a failure (a skipped Blender test would hide
a broken install), and hypothesis runs derandomized (the same examples every run: CI repeats
what was tested here, while local runs keep exploring new ones)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # demo/ and bench/ helpers

from demo.addon_from_checkout import import_addon  # noqa: E402

import_addon(subprocesses=True)

# The repository root is a package (the add-on's __init__.py), which pytest imports under the
# checkout directory's name; in a checkout named "numba" that would shadow the real numba
# that core's compiled backend imports. Importing numba first keeps the real one.
try:
    import numba  # noqa: F401
except ImportError:
    pass

from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if os.environ.get("CI") and skipped and exitstatus == 0:
        reporter.write_line(f"CI: {skipped} test(s) skipped; skipped tests fail under CI", red=True)
        session.exitstatus = 1
