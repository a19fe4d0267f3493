"""Journal health: partitions and positions, records per type, growth, control records,
what cannot be read, and, with ``--checkpoints``, what the retained state needs and what
cleanup would delete (``cleanup plan``'s own computation, never applied from here)."""

from __future__ import annotations

from typing import Any

import msgspec

from actionjournal.tools.toolkit import ToolError
from actionjournal.tools.ui import journal as jr
from actionjournal.tools.ui.explorer import Explorer


class PartitionDoc(msgspec.Struct):
    partition: int
    low: int
    high: int
    indexed_to: int
    records: int
    bytes: int


class HealthDoc(msgspec.Struct):
    journal: str
    namespace: str
    partitions: list[PartitionDoc]
    types: list[dict[str, Any]]
    growth: list[dict[str, Any]]
    control: list[dict[str, Any]]
    unreadable: list[dict[str, Any]]
    quarantined: int
    checkpoints: dict[str, Any] | None
    cleanup: dict[str, Any] | None


def health(explorer: Explorer, cleanup: bool = False) -> HealthDoc:
    db = explorer.readers.get()
    sizes: dict[int, tuple[int, int]] = {
        p: (n, b)
        for p, n, b in db.execute(
            "SELECT partition, SUM(records), SUM(bytes) FROM types GROUP BY partition"
        )
    }
    partitions = [
        PartitionDoc(p, low, high, nxt, *sizes.get(p, (0, 0)))
        for p, nxt, low, high in db.execute(
            "SELECT partition, next, low, high FROM progress ORDER BY partition"
        )
    ]
    types = [
        {"type": t, "records": n, "bytes": b}
        for t, n, b in db.execute(
            "SELECT type, SUM(records), SUM(bytes) FROM types GROUP BY type ORDER BY 2 DESC"
        )
    ]
    growth = [
        {"hour": h * 3600, "records": n, "bytes": b}
        for h, n, b in db.execute("SELECT hour, records, bytes FROM growth ORDER BY hour")
    ]
    control = [
        {"partition": p, "position": pos, "type": t, "at": at, "text": text}
        for p, pos, t, at, text in db.execute(
            "SELECT partition, position, type, at, text FROM control ORDER BY at DESC LIMIT 200"
        )
    ]
    unreadable = [
        {"partition": p, "position": pos, "kind": kind, "error": error, "key_id": key}
        for p, pos, kind, error, key in db.execute(
            "SELECT partition, position, kind, error, key_id FROM unreadable "
            "ORDER BY partition, position LIMIT 200"
        )
    ]
    quarantined = sum(1 for c in control if c["type"] == "Quarantined")
    checkpoints, plan = _checkpoints(explorer, cleanup)
    return HealthDoc(
        journal=explorer.journal.describe(),
        namespace=explorer.journal.namespace,
        partitions=partitions,
        types=types,
        growth=growth[-168:],  # the last week of hours with records
        control=control,
        unreadable=unreadable,
        quarantined=quarantined,
        checkpoints=checkpoints,
        cleanup=plan,
    )


def _checkpoints(
    explorer: Explorer, cleanup: bool
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The restorable state ``--checkpoints`` names (as cleanup reads it), and with
    ``cleanup`` the plan cleanup would make against it."""
    from actionjournal.tools.cleanup.plan import make_plan
    from actionjournal.tools.cleanup.state import (
        DEFAULT_MARGIN_S,
        SnapshotState,
        load_checkpoint,
        load_snapshot,
    )

    where = explorer.settings.checkpoints
    if where is None:
        return None, None
    journal = explorer.journal
    try:
        with explorer.store_lock:
            if where.is_file() and where.name != "_metadata":
                store = jr.cleanable(explorer.store, journal.config)  # Fluss: says why not
                state = load_snapshot(where, store, journal.namespace, journal.operator_uid)
            else:
                state = load_checkpoint(where, DEFAULT_MARGIN_S)
    except ToolError as exc:
        return {"path": str(where), "error": str(exc)}, None
    info = msgspec.to_builtins(state.info)
    if isinstance(state.info, SnapshotState) and state.keys is not None:
        markers = [
            {
                "key_id": k,
                "partition": n.marker_partition,
                "position": n.marker_position,
                "next_seq": n.next_seq,
                "pending": list(n.pending),
            }
            for k, n in sorted(state.keys.items())
            if n.marker_position is not None
        ]
        info["markers"] = markers[:200]
        info["markers_total"] = len(markers)
    if not cleanup:
        return info, None
    try:
        with explorer.store_lock:
            operator = (
                state.info.operator_uid
                if isinstance(state.info, SnapshotState)
                else journal.operator_uid
            )
            store = jr.cleanable(explorer.store, journal.config)
            plan = make_plan(store, journal.config, journal.namespace, operator, state)
    except ToolError as exc:
        return info, {"error": str(exc)}
    doc = msgspec.to_builtins(plan)
    return info, {
        "totals": doc["totals"],
        "partitions": [
            {
                k: p[k]
                for k in (
                    "partition",
                    "low",
                    "high",
                    "delete_below",
                    "records_deleted",
                    "bytes_deleted",
                    "runs_deleted",
                    "reason",
                )
            }
            for p in doc["partitions"]
        ],
        "command": " ".join(
            jr.quote(x)
            for x in [
                "actionjournal",
                "cleanup",
                "plan",
                *jr.store_args(journal.config),
                "--checkpoint" if not isinstance(state.info, SnapshotState) else "--snapshot",
                str(where),
            ]
        ),
    }
