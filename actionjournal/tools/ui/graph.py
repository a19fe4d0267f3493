"""The agent's graph: actions and the events between them, with what the journal saw.

The edges come from the agent's plan (``actionjournal plan``, given with ``--plan`` or
``--agent``) and from the journal itself: an action that completed, and the events each
action sent (``ActionCompleted`` outputs), counted per edge with a rate over the span the
journal covers. Without a plan, the graph is what the journal shows.
"""

from __future__ import annotations

from typing import Any

import msgspec

from actionjournal.tools.ui.explorer import Explorer

COLUMN = 320
ROW = 90


class Node(msgspec.Struct):
    id: str  # "event:TYPE" or "action:NAME"
    kind: str
    name: str
    executions: int | None = None  # actions: completed executions in the journal
    per_minute: float | None = None
    x: int = 0
    y: int = 0


class Edge(msgspec.Struct):
    source: str
    target: str
    kind: str  # triggers | sends
    declared: bool  # in the agent's code (its plan)
    observed: int | None  # how many times the journal shows it (None: not countable)
    per_minute: float | None


class GraphDoc(msgspec.Struct):
    source: str
    nodes: list[Node]
    edges: list[Edge]
    width: int
    height: int


def graph(explorer: Explorer) -> GraphDoc:
    db = explorer.readers.get()
    plan: dict[str, Any] = explorer.settings.plan or {}
    uid = explorer.journal.operator_uid or plan.get("operator_uid")
    where, args = ("WHERE operator_uid = ?", (uid,)) if uid else ("", ())
    executions: dict[str, tuple[int, float, float]] = {}
    for action, n, first, last in db.execute(
        f"SELECT action, SUM(executions), MIN(first_at), MAX(last_at) FROM actions {where} "
        "GROUP BY action",
        args,
    ):
        executions[action] = (n, first, last)
    sent: dict[tuple[str, str], int] = {}
    for action, event_type, n in db.execute(
        f"SELECT action, event_type, SUM(n) FROM sent {where} GROUP BY action, event_type", args
    ):
        sent[(action, event_type)] = n

    def rate(action: str, n: int) -> float | None:
        found = executions.get(action)
        if found is None or found[2] <= found[1]:
            return None
        return round(n / ((found[2] - found[1]) / 60), 1)

    nodes: dict[str, Node] = {}
    edges: dict[tuple[str, str], Edge] = {}

    def node(ident: str) -> Node:
        if ident not in nodes:
            kind, name = ident.split(":", 1)
            nodes[ident] = Node(ident, kind, name)
        return nodes[ident]

    listeners: dict[str, list[str]] = {}
    for action in plan.get("actions", []):
        for event_type in action.get("listens", []):
            listeners.setdefault(action["name"], []).append(event_type)
    for edge in plan.get("edges", []):
        node(edge["from"])
        node(edge["to"])
        edges[(edge["from"], edge["to"])] = Edge(edge["from"], edge["to"], edge["kind"], True,
                                                 None, None)  # fmt: skip
    node(f"event:{plan.get('input_event', 'input')}")
    for (action, event_type), n in sent.items():
        key = (f"action:{action}", f"event:{event_type}")
        node(key[0])
        node(key[1])
        edge = edges.setdefault(key, Edge(key[0], key[1], "sends", False, None, None))
        edge.observed, edge.per_minute = n, rate(action, n)
    for action, (n, _, _) in executions.items():
        found = node(f"action:{action}")
        found.executions, found.per_minute = n, rate(action, n)
        heard = listeners.get(action, [])
        if len(heard) == 1:  # an action of one event type: each execution is one trigger
            key = (f"event:{heard[0]}", f"action:{action}")
            edge = edges.setdefault(key, Edge(key[0], key[1], "triggers", False, None, None))
            edge.observed, edge.per_minute = n, rate(action, n)
    width, height = _layout(nodes, edges, f"event:{plan.get('input_event', 'input')}")
    source = f"plan of {plan['agent']}" if plan.get("agent") else "the journal only (no --plan)"
    return GraphDoc(source, list(nodes.values()), list(edges.values()), width, height)


def _layout(
    nodes: dict[str, Node], edges: dict[tuple[str, str], Edge], start: str
) -> tuple[int, int]:
    """Columns by distance from the input event; rows in order of discovery."""
    depth = {start: 0}
    frontier = [start]
    while frontier:
        following = []
        for ident in frontier:
            for source, target in edges:
                if source == ident and target not in depth:
                    depth[target] = depth[ident] + 1
                    following.append(target)
        frontier = following
    deepest = max(depth.values(), default=0)
    for ident in nodes:
        depth.setdefault(ident, deepest + 1)
    rows: dict[int, int] = {}
    for ident, found in nodes.items():
        column = depth[ident]
        found.x = 20 + column * COLUMN
        found.y = 20 + rows.get(column, 0) * ROW
        rows[column] = rows.get(column, 0) + 1
    width = 20 + (max(depth.values(), default=0) + 1) * COLUMN
    height = 40 + max(rows.values(), default=1) * ROW
    return width, height
