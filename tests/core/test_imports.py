"""core's modules import without cycles, each on its own in a fresh interpreter."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"
PACKAGE = "geometry_queries.core"


@pytest.fixture(autouse=True)
def backend():
    """Replaces the conftest's two-backend fixture: imports do not depend on the backend."""
    yield None


def module_names() -> list[str]:
    names = []
    for path in sorted(CORE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(CORE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join([PACKAGE, *parts]))
    return names


def source_of(name: str) -> Path:
    relative = Path(*name.split(".")[2:])
    package = CORE / relative / "__init__.py"
    return package if package.exists() else (CORE / relative).with_suffix(".py")


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, known: set[str]) -> set[str]:
    """The core modules ``name`` imports (at any depth of its code, lazy imports too; not
    those only for type checking)."""
    path = source_of(name)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in known:
                    found.add(f"{target}.{alias.name}")
                elif target in known:
                    found.add(target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    found.discard(name)
    return found


def test_the_import_graph_of_core_is_acyclic():
    names = module_names()
    known = set(names)
    graph = {name: imports_of(name, known) for name in names}
    # A package imports its submodules; a submodule's parents are imported before it, so
    # only edges between modules count (a package __init__ re-exporting is no cycle of
    # code). Depth-first search for a back edge.
    state: dict[str, int] = {}
    path: list[str] = []

    def search(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycle = path[path.index(target) :] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                search(target)
        path.pop()
        state[node] = 2

    for name in names:
        if name not in state:
            search(name)


def test_every_core_module_imports_alone_in_a_fresh_interpreter():
    root = CORE.parent  # (tests/conftest.py put the linked package on PYTHONPATH)
    code = (
        "import importlib, subprocess, sys\n"
        "for name in sys.argv[1:]:\n"
        "    done = subprocess.run([sys.executable, '-c', f'import {name}'],"
        " capture_output=True, text=True)\n"
        "    if done.returncode:\n"
        "        print(name, done.stderr.strip().splitlines()[-1])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *module_names()],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "", done.stdout
