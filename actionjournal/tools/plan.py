"""``actionjournal plan MODULE:Agent``: an agent's actions and the events between them, as
JSON, read from its code without running it (no JVM, no journal).

An action listens on the event types its ``@action`` names; the events it sends are read
from its source: ``ctx.send_event(X(...))`` where ``X`` is an event class with a type
(``OutputEvent`` is the agent's output) or ``Event("type", ...)`` with a literal type. An
event built elsewhere and sent by name is not seen here; the explorer adds the edges the
journal shows.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import sys
import textwrap
from typing import Any

from actionjournal.durable.agent import Agent
from actionjournal.durable.events import Event, OutputEvent
from actionjournal.tools.toolkit import EXIT_OK, ArgumentParser, ToolError, UsageError


def parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal plan",
        description="Print an agent's actions and the events between them as JSON, read from "
        "its code (nothing runs: no JVM, no journal). `actionjournal ui --plan FILE` shows "
        "it with the journal's counts on each edge.",
    )
    p.add_argument("agent", metavar="MODULE:AGENT", help="the agent class, e.g. shop:Shop")
    p.add_argument("--indent", type=int, default=2, help="JSON indentation (0: one line)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    plan = plan_of(load_agent(args.agent))
    print(json.dumps(plan, indent=args.indent or None))
    return EXIT_OK


def load_agent(spec: str) -> type[Agent]:
    module_name, sep, name = spec.partition(":")
    if not sep or not module_name or not name:
        raise UsageError(f"{spec!r}: give MODULE:AGENT, e.g. shop:Shop")
    if "" not in sys.path:
        sys.path.insert(0, "")  # a module of the current directory, as `python -m` finds it
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ToolError(f"cannot import {module_name!r}: {exc}") from None
    found: Any = module
    for part in name.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ToolError(f"module {module_name!r} has no {name!r}")
    if isinstance(found, Agent):
        found = type(found)
    if not (isinstance(found, type) and issubclass(found, Agent)):
        raise ToolError(
            f"{spec} is not an actionjournal Agent class (a Flink Agents agent: give the class "
            "the engine runs, or use actionjournal's Agent)"
        )
    return found


def plan_of(cls: type[Agent]) -> dict[str, Any]:
    """The plan of an agent class: its actions, events, and the edges between them."""
    shell = cls.__new__(cls)  # actions() reads methods only: the constructor need not run
    try:
        by_type = shell.actions()
    except TypeError as exc:
        raise ToolError(f"{cls.__module__}.{cls.__qualname__}: {exc}") from None
    specs: dict[str, Any] = {}
    for event_type, listeners in by_type.items():
        for spec in listeners:
            entry = specs.setdefault(spec.name, {"name": spec.name, "listens": [], "sends": [],
                                                 "async": spec.is_async})  # fmt: skip
            entry["listens"].append(event_type)
    for name, entry in specs.items():
        entry["sends"] = sorted(_sent_types(getattr(cls, name), cls))
    events = {cls.input_event_type, cls.output_event_type}
    edges = []
    for entry in specs.values():
        events.update(entry["listens"], entry["sends"])
        edges += [{"from": f"event:{t}", "to": f"action:{entry['name']}", "kind": "triggers"}
                  for t in entry["listens"]]  # fmt: skip
        edges += [{"from": f"action:{entry['name']}", "to": f"event:{t}", "kind": "sends"}
                  for t in entry["sends"]]  # fmt: skip
    return {
        "agent": f"{cls.__module__}:{cls.__qualname__}",
        "operator_uid": cls.uid or cls.__name__,
        "input_event": cls.input_event_type,
        "output_event": cls.output_event_type,
        "actions": list(specs.values()),
        "events": sorted(events),
        "edges": edges,
    }


def _sent_types(member: Any, cls: type[Agent]) -> set[str]:
    fn = inspect.unwrap(getattr(member, "__func__", member))
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return set()
    scope = {**getattr(fn, "__globals__", {}), **vars(cls)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "send_event"
            and node.args
            and isinstance(node.args[0], ast.Call)
        ):
            continue
        made = node.args[0]
        target = _resolve(made.func, scope)
        if target is Event and made.args and isinstance(made.args[0], ast.Constant):
            if isinstance(made.args[0].value, str):
                found.add(made.args[0].value)
        elif target is OutputEvent:
            found.add(cls.output_event_type)
        elif isinstance(target, type) and issubclass(target, Event) and target.TYPE:
            found.add(target.TYPE)
    return found


def _resolve(node: ast.expr, scope: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return scope.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, scope)
        return getattr(base, node.attr, None) if base is not None else None
    return None
