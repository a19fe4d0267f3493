"""Importing actionjournal from several threads at once, as PyFlink's Python worker does.

The worker unpickles the functions of a job's operators (the key selector, the agent, a map
chained after it) on threads of their own, each importing what its functions name. With
package ``__init__`` files that imported their modules, two such threads deadlocked or saw a
partially initialized module and the task failed at start (see actionjournal/_lazy.py).
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import actionjournal

ROOT = Path(actionjournal.__file__).parent
LAZY = "actionjournal._lazy"


def modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules()


def load_time_imports(path: Path) -> Iterator[tuple[str, list[str]]]:
    """(module, names) of each import run when ``path`` loads as a module: top level, ``if``
    and ``try`` bodies, not ``if TYPE_CHECKING``, ``if __name__ == "__main__"`` nor imports
    inside functions."""

    def visit(body: list[ast.stmt]) -> Iterator[tuple[str, list[str]]]:
        for node in body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield alias.name, []
            elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
                assert node.level == 0, f"{path}: relative import"
                yield str(node.module), [alias.name for alias in node.names]
            elif isinstance(node, ast.If) and not {"TYPE_CHECKING", "__name__"} & {
                n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)
            }:
                yield from visit(node.body)
                yield from visit(node.orelse)
            elif isinstance(node, ast.Try):
                yield from visit(node.body)
                for handler in node.handlers:
                    yield from visit(handler.body)

    yield from visit(ast.parse(path.read_text()).body)


def ours(module: str) -> bool:
    return module == "actionjournal" or module.startswith("actionjournal.")


def test_packages_import_nothing_of_ours_but_the_lazy_helper_when_they_load():
    packages = {name: path for name, path in MODULES.items() if path.name == "__init__.py"}
    assert len(packages) > 10
    for name, path in packages.items():
        imported = {module for module, _ in load_time_imports(path) if ours(module)}
        assert imported <= {LAZY}, f"{name} imports {sorted(imported - {LAZY})} when it loads"
    assert not [m for m, _ in load_time_imports(MODULES[LAZY]) if ours(m)]


def test_no_modules_import_each_other_in_a_circle():
    def target(module: str, name: str) -> str | None:
        """The module ``from module import name`` loads, if one of ours below a package."""
        if f"{module}.{name}" in MODULES:
            return f"{module}.{name}"
        path = MODULES.get(module)
        if path is not None and path.name == "__init__.py":
            for source, names in importlib.import_module(module)._LAZY.items():
                if name in names:
                    return source
        return module if module in MODULES else None

    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        if path.name == "__init__.py":
            continue  # imports only the lazy helper (the test above)
        edges = graph.setdefault(name, set())
        for module, names in load_time_imports(path):
            if not ours(module):
                continue
            for imported in [target(module, n) for n in names] or [module]:
                if imported is not None and MODULES[imported].name != "__init__.py":
                    edges.add(imported)
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := walk(node)):
            return found
    return None


RACE = """
import importlib, sys, threading, time

class Slow:  # every first import of ours takes a few ms: the threads overlap
    def find_spec(self, name, path=None, target=None):
        if name.startswith("actionjournal"):
            time.sleep(0.003)

sys.meta_path.insert(0, Slow())
entries = sys.argv[1:]
barrier = threading.Barrier(len(entries))
errors = []

def load(name):
    barrier.wait()
    try:
        importlib.import_module(name)
    except BaseException as exc:
        errors.append(f"{name}: {type(exc).__name__}: {exc}")

threads = [threading.Thread(target=load, args=(name,)) for name in entries]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(60)
print("\\n".join(errors) or "ok")
"""

# What a job's functions name: the agent function, the key selector, a test map chained
# after the agent, a store factory, the demo's agents; and the top package itself.
ENTRIES = [
    "actionjournal.flink.function",
    "actionjournal.testing.flink",
    "actionjournal.testing.crash",
    "actionjournal.stores.sqlite",
    "actionjournal.tools.demo",
    "actionjournal",
]


def test_threads_importing_different_modules_at_once_all_succeed():
    for _ in range(3):  # each in a fresh interpreter: nothing imported yet
        done = subprocess.run(
            [sys.executable, "-c", RACE, *ENTRIES], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "ok"
