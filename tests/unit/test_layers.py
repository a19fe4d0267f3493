"""The package's layers: every import of actionjournal code points down (docs/architecture.md).

    tools, flink_agents -> testing -> flink -> operator -> chat, reconcilers, stores -> durable

``dev/`` (local servers) imports nothing of actionjournal but itself and ``_maven``,
``durable/`` nothing but itself, and ``_lazy`` (what package ``__init__`` files import) and
``_maven`` (resolving jars, for the servers and the binding's connector) nothing at all. Read
from the source (every import statement, also those inside functions and under
``TYPE_CHECKING``, and ``importlib.import_module`` of a constant), so an import added
anywhere is caught, not just those a test run happens to execute.
"""

from __future__ import annotations

import ast
from pathlib import Path

import actionjournal

ROOT = Path(actionjournal.__file__).parent

# A layer may import its own package and those of lower rank. The top package's __init__
# (the names users import) re-exports durable and operator names, so it sits just above
# the operator: the tools' demo agent imports from it as users do.
RANK = {
    "durable": 0,
    "chat": 1,
    "reconcilers": 1,
    "stores": 1,
    "operator": 2,
    "": 2.5,
    "flink": 2.7,
    "testing": 3,
    "tools": 4,
    "flink_agents": 4,
}
LEAVES = {"dev", "durable", "_lazy", "_maven"}  # import nothing of actionjournal but themselves


def _package(module: str) -> str:
    """``actionjournal.stores.kafka.store`` -> ``stores``; ``actionjournal`` -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            if node.module == "actionjournal":  # from actionjournal import stores
                found += [
                    (node.lineno, f"actionjournal.{a.name}")
                    for a in node.names
                    if a.name in RANK or a.name in LEAVES
                ]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return [(n, m) for n, m in found if m == "actionjournal" or m.startswith("actionjournal.")]


def _allowed(source: str, target: str) -> bool:
    if target == source:
        return True
    if source == "dev" and target == "_maven":
        return True
    if source in LEAVES:
        return False
    if target == "_lazy":
        return True  # every package's __init__ (actionjournal/_lazy.py says why)
    if target == "_maven":
        return True  # a leaf: the local servers' jars, the binding's Kafka connector
    if target == "dev":
        return True  # a leaf anyone above durable may use (the CLI, the plugin, the jar build)
    if target not in RANK:
        return False  # a new package: give it a layer here and in docs/architecture.md
    return RANK[target] < RANK[source]


def _violations() -> list[str]:
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(relative.parts)
        if parts[-1] == "__init__":
            parts.pop()
        source = _package(".".join(parts))
        assert source in RANK or source in LEAVES, f"{path}: package {source!r} has no layer"
        for line, module in _imports(path):
            target = _package(module)
            if not _allowed(source, target):
                bad.append(
                    f"{path.relative_to(ROOT.parent)}:{line}: {source or 'actionjournal'} "
                    f"imports {module}"
                )
    return bad


def test_imports_point_down():
    assert _violations() == []


def test_the_check_sees_imports(tmp_path):
    """The reader finds every form of import the check relies on (it cannot pass blind)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import actionjournal.operator.engine\n"
        "from actionjournal.chat.calls import chat\n"
        "from actionjournal import stores\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from actionjournal.operator.context import RunnerContext\n"
        "def f():\n"
        "    import importlib\n"
        "    return importlib.import_module('actionjournal.tools.demo')\n"
    )
    assert sorted(m for _, m in _imports(sample)) == [
        "actionjournal",
        "actionjournal.chat.calls",
        "actionjournal.operator.context",
        "actionjournal.operator.engine",
        "actionjournal.stores",
        "actionjournal.tools.demo",
    ]
    assert not _allowed("durable", "stores")
    assert not _allowed("chat", "operator")
    assert not _allowed("chat", "stores")
    assert not _allowed("dev", "durable")
    assert not _allowed("chat", "")  # the top package's names include the operator's
    assert _allowed("operator", "chat")
    assert _allowed("tools", "dev")
