"""``actionjournal journal inspect``: what the journal holds, as a tree or as JSON.

For a key (``--key``/``--key-id``), a run of it (``--run SEQ``), an action
(``--action ID``) or a call (``--call ID``): runs -> actions -> calls with status,
timings, sizes and outcomes. Without any of them: a summary of the namespace per
partition (keys, runs, bytes, oldest record, cleanup boundaries).

Values are shown as a short preview decoded without pickle: inspecting a journal never
runs code that the journal's bytes choose.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

from actionjournal.durable.records import (
    CONTROL_KEY,
    ActionCompleted,
    CallFinished,
    CallsDropped,
    CallStarted,
    CleanupBoundary,
    JournalRecord,
    RunCompleted,
    UpgradeSkipped,
)
from actionjournal.durable.values import ValueCodec
from actionjournal.stores.base import ActionStateStore, ScannedRecord
from actionjournal.tools.toolkit import (
    EXIT_OK,
    ArgumentParser,
    ProgressBar,
    ToolError,
    UsageError,
    add_key_args,
    add_namespace_args,
    add_progress_args,
    add_store_args,
    describe_location,
    fmt_bytes,
    fmt_time,
    key_id_from_args,
    open_store,
    record_codec,
    run_tool,
    store_location,
)

_PREVIEW = 80

# -- building the tree -----------------------------------------------------------------------


@dataclass
class _Call:
    index: int
    started: CallStarted | None = None
    finished: CallFinished | None = None
    size: int = 0
    dropped: bool = False


@dataclass
class _Action:
    action_id: str
    calls: dict[int, _Call] = field(default_factory=dict)
    completed: ActionCompleted | None = None
    records: int = 0
    size: int = 0
    first_at: float | None = None


@dataclass
class _Run:
    key_id: str
    epoch: int
    seq: int
    operator_uid: str
    partition: int
    actions: dict[str, _Action] = field(default_factory=dict)
    completed: RunCompleted | None = None
    records: int = 0
    size: int = 0
    first_position: int | None = None
    last_position: int | None = None
    first_at: float | None = None


def _start_time(record: JournalRecord) -> float | None:
    if isinstance(record, CallFinished):
        return record.at - record.duration
    return getattr(record, "at", None)


def build_runs(items: list[tuple[int, ScannedRecord]]) -> list[_Run]:
    """Group a key's scanned records (with their partitions) into runs, actions and calls."""
    runs: dict[tuple[str, int, int], _Run] = {}
    for partition, item in items:
        record = item.record
        if record is None or record.key_id == CONTROL_KEY:
            continue
        ident = (item.operator_uid, record.epoch, record.seq)
        run = runs.get(ident)
        if run is None:
            run = runs[ident] = _Run(
                record.key_id, record.epoch, record.seq, item.operator_uid, partition
            )
        run.records += 1
        run.size += item.size
        if run.first_position is None:
            run.first_position = item.position
        run.last_position = item.position
        started = _start_time(record)
        if started is not None and (run.first_at is None or started < run.first_at):
            run.first_at = started
        if isinstance(record, RunCompleted):
            run.completed = record
            continue
        action = run.actions.get(record.action_id)  # type: ignore[union-attr]
        if action is None:
            action = run.actions[record.action_id] = _Action(record.action_id)  # type: ignore[union-attr]
        action.records += 1
        action.size += item.size
        if started is not None and (action.first_at is None or started < action.first_at):
            action.first_at = started
        if isinstance(record, ActionCompleted):
            action.completed = record
        elif isinstance(record, CallsDropped):
            for index, call in action.calls.items():
                if index >= record.index:
                    call.dropped = True
        elif isinstance(record, CallStarted):
            call = action.calls.get(record.index)
            if call is None or call.dropped or call.finished is not None:
                call = action.calls[record.index] = _Call(record.index)
            call.started = record
            call.size += item.size
        elif isinstance(record, CallFinished):
            call = action.calls.get(record.index)
            if call is None or call.dropped:
                call = action.calls[record.index] = _Call(record.index)
            call.finished = record
            call.size += item.size
    return sorted(runs.values(), key=lambda r: (r.first_position or 0, r.seq))


def _preview(values: ValueCodec, data: bytes | None) -> str:
    if data is None:
        return "no value"
    try:
        text = repr(values.decode(data))
    except Exception as exc:  # pickled, or a type not importable here: say so, never unpickle
        return f"<{len(data)} bytes, not shown: {type(exc).__name__}>"
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def call_status(call: _Call, action_completed: bool) -> str:
    if call.dropped:
        return "dropped"
    if call.finished is None:
        return "unknown"  # started, no outcome: a reconciler or the policy decides on recovery
    if call.finished.error is not None:
        return "failed"
    return "finished" if action_completed else "replayable"


def run_to_dict(run: _Run, values: ValueCodec) -> dict[str, Any]:
    actions = []
    for action in run.actions.values():
        calls = []
        for call in sorted(action.calls.values(), key=lambda c: c.index):
            head = call.finished or call.started
            assert head is not None
            outcome: dict[str, Any] | None = None
            if call.finished is not None:
                error = call.finished.error
                outcome = (
                    {"error": {"type": error.type, "message": error.message}}
                    if error is not None
                    else {
                        "value": _preview(values, call.finished.value),
                        "value_bytes": len(call.finished.value or b""),
                    }
                )
            calls.append(
                {
                    "index": call.index,
                    "status": call_status(call, action.completed is not None),
                    "function_id": head.function_id,
                    "durable_id": head.durable_id,
                    "call_id": head.call_id,
                    "attempt": call.started.attempt if call.started else 0,
                    "started_at": call.started.at if call.started else None,
                    "finished_at": call.finished.at if call.finished else None,
                    "duration_s": call.finished.duration if call.finished else None,
                    "reconciled": bool(call.finished and call.finished.reconciled),
                    "bytes": call.size,
                    "outcome": outcome,
                }
            )
        completed = action.completed
        actions.append(
            {
                "action_id": action.action_id,
                "action": completed.action if completed else None,
                "status": "completed" if completed else "incomplete",
                "started_at": action.first_at,
                "completed_at": completed.at if completed else None,
                "outputs": len(completed.outputs) if completed else 0,
                "memory_ops": len(completed.memory_ops) if completed else 0,
                "records": action.records,
                "bytes": action.size,
                "calls": calls,
            }
        )
    done = run.completed
    return {
        "key_id": run.key_id,
        "operator_uid": run.operator_uid,
        "epoch": run.epoch,
        "seq": run.seq,
        "partition": run.partition,
        "status": "finished" if done else "in flight",
        "started_at": run.first_at,
        "completed_at": done.at if done else None,
        "duration_s": (done.at - run.first_at) if done and run.first_at is not None else None,
        "records": run.records,
        "bytes": run.size,
        "first_position": run.first_position,
        "last_position": run.last_position,
        "actions": actions,
    }


def render_tree(doc: dict[str, Any]) -> str:
    lines = [
        f"key {doc['key_id']}  partition {doc['partition']}  {len(doc['runs'])} runs  "
        f"{doc['records']} records  {fmt_bytes(doc['bytes'])}"
    ]
    runs = doc["runs"]
    for i, run in enumerate(runs):
        last_run = i == len(runs) - 1
        lines.append(("└─ " if last_run else "├─ ") + _run_line(run))
        pad = "   " if last_run else "│  "
        for j, action in enumerate(run["actions"]):
            last_action = j == len(run["actions"]) - 1
            lines.append(pad + ("└─ " if last_action else "├─ ") + _action_line(action))
            pad2 = pad + ("   " if last_action else "│  ")
            for k, call in enumerate(action["calls"]):
                last_call = k == len(action["calls"]) - 1
                lines.append(pad2 + ("└─ " if last_call else "├─ ") + _call_line(call))
    for control in doc.get("control", []):
        lines.append(f"control: {control['text']}")
    return "\n".join(lines)


def _run_line(run: dict[str, Any]) -> str:
    epoch = f" epoch={run['epoch']}" if run["epoch"] else ""
    timing = fmt_time(run["started_at"])
    if run["duration_s"] is not None:
        timing += f" ({run['duration_s']:.3f} s)"
    return (
        f"run seq={run['seq']}{epoch}  {run['status']}  {timing}  {run['records']} records, "
        f"{fmt_bytes(run['bytes'])}  positions {run['first_position']}..{run['last_position']}"
    )


def _action_line(action: dict[str, Any]) -> str:
    name = action["action"] or "?"
    text = f"action {name} [{action['action_id'][:12]}]  {action['status']}"
    if action["completed_at"] is not None and action["started_at"] is not None:
        text += f"  {action['completed_at'] - action['started_at']:.3f} s"
    if action["status"] == "completed":
        text += f"  outputs: {action['outputs']}, memory ops: {action['memory_ops']}"
    return text + f"  {fmt_bytes(action['bytes'])}"


def _call_line(call: dict[str, Any]) -> str:
    text = f"call {call['index']} {call['function_id']}"
    if call["durable_id"]:
        text += f" (durable_id={call['durable_id']})"
    text += f"  {call['status']}"
    if call["duration_s"] is not None:
        text += f"  {call['duration_s']:.3f} s"
    outcome = call["outcome"]
    if outcome is not None and "error" in outcome:
        text += f"  {outcome['error']['type']}: {outcome['error']['message']}"
    elif outcome is not None:
        text += f"  -> {outcome['value']} ({fmt_bytes(outcome['value_bytes'])})"
    if call["reconciled"]:
        text += "  [reconciled]"
    if call["attempt"] > 1:
        text += f"  attempt {call['attempt']}"
    return text + f"  [call id {call['call_id'][:12]}]"


def _control_entry(item: ScannedRecord) -> dict[str, Any] | None:
    record = item.record
    if isinstance(record, CleanupBoundary):
        return {
            "type": "cleanup_boundary",
            "position": item.position,
            "partition": record.partition,
            "boundary": record.position,
            "at": record.at,
            "text": f"cleanup boundary at position {item.position}: partition "
            f"{record.partition} deleted below {record.position} at {fmt_time(record.at)}",
        }
    if isinstance(record, UpgradeSkipped):
        return {
            "type": "upgrade_skipped",
            "position": item.position,
            "at": record.at,
            "old_journal": f"{record.old_backend} {record.old_name}",
            "old_epoch": record.old_epoch,
            "text": f"upgrade at position {item.position}, {fmt_time(record.at)}: skipped "
            f"{record.old_backend} {record.old_name} epoch {record.old_epoch}",
        }
    return None


# -- reading ---------------------------------------------------------------------------------


def key_document(
    store: ActionStateStore,
    namespace: str,
    operator_uid: str | None,
    key_id: str,
    progress: bool | None = None,
) -> dict[str, Any]:
    partition = store.partition_of(key_id)
    items: list[tuple[int, ScannedRecord]] = []
    control: list[dict[str, Any]] = []
    bar = ProgressBar(f"reading partition {partition}", progress)
    try:
        for item in store.scan(partition, namespace, operator_uid, progress=bar):
            assert item.record is not None
            if item.record.key_id == key_id:
                items.append((partition, item))
            elif item.record.key_id == CONTROL_KEY:
                entry = _control_entry(item)
                if entry is not None:
                    control.append(entry)
    finally:
        bar.close()
    values = ValueCodec(allow_pickle=False)
    runs = [run_to_dict(run, values) for run in build_runs(items)]
    return {
        "store": _identity(store),
        "namespace": namespace,
        "key_id": key_id,
        "partition": partition,
        "records": sum(r["records"] for r in runs),
        "bytes": sum(r["bytes"] for r in runs),
        "runs": runs,
        "control": control,
    }


def find_record(
    store: ActionStateStore,
    namespace: str,
    operator_uid: str | None,
    *,
    action_id: str | None = None,
    call_id: str | None = None,
    progress: bool | None = None,
) -> JournalRecord | None:
    """The first record of an action or call id (scans the namespace until found)."""
    for p in store.partitions():
        bar = ProgressBar(f"searching partition {p}", progress)
        try:
            for item in store.scan(p, namespace, operator_uid, progress=bar):
                record = item.record
                if action_id is not None and getattr(record, "action_id", None) == action_id:
                    return record
                if call_id is not None and getattr(record, "call_id", None) == call_id:
                    return record
        finally:
            bar.close()
    return None


def summary_document(
    store: ActionStateStore, namespace: str, operator_uid: str | None, progress: bool | None = None
) -> dict[str, Any]:
    partitions = []
    other: dict[str, int] = {}
    for p in store.partitions():
        low, high = store.position_range(p)
        keys: set[str] = set()
        runs: set[tuple[str, str, int, int]] = set()
        finished: set[tuple[str, str, int, int]] = set()
        records = size = 0
        oldest_at: float | None = None
        oldest_position: int | None = None
        boundaries = []
        bar = ProgressBar(f"scanning partition {p}", progress)
        try:
            for item in store.scan(p, namespace, operator_uid, foreign=True, progress=bar):
                record = item.record
                if record is None:
                    label = f"{item.namespace}/{item.operator_uid}"
                    other[label] = other.get(label, 0) + 1
                    continue
                records += 1
                size += item.size
                if oldest_position is None:
                    oldest_position = item.position
                at = _start_time(record)
                if at is not None and (oldest_at is None or at < oldest_at):
                    oldest_at = at
                if record.key_id == CONTROL_KEY:
                    if isinstance(record, CleanupBoundary):
                        boundaries.append(
                            {
                                "position": record.position,
                                "at": record.at,
                                "stored_at": item.position,
                            }
                        )
                    continue
                keys.add(record.key_id)
                run = (item.operator_uid, record.key_id, record.epoch, record.seq)
                runs.add(run)
                if isinstance(record, RunCompleted):
                    finished.add(run)
        finally:
            bar.close()
        partitions.append(
            {
                "partition": p,
                "low": low,
                "high": high,
                "records": records,
                "bytes": size,
                "keys": len(keys),
                "runs": len(runs),
                "runs_finished": len(finished),
                "runs_in_flight": len(runs - finished),
                "oldest_position": oldest_position,
                "oldest_record_at": oldest_at,
                "cleanup_boundaries": boundaries,
            }
        )
    return {
        "store": _identity(store),
        "namespace": namespace,
        "operator_uid": operator_uid,
        "partitions": partitions,
        "totals": {
            name: sum(p[name] for p in partitions)
            for name in ("records", "bytes", "keys", "runs", "runs_finished", "runs_in_flight")
        },
        "oldest_record_at": min(
            (p["oldest_record_at"] for p in partitions if p["oldest_record_at"] is not None),
            default=None,
        ),
        "other_namespaces": other,
    }


def render_summary(doc: dict[str, Any]) -> str:
    store = doc["store"]
    lines = [
        f"namespace {doc['namespace']!r} in {store['backend']} {store['name']} (id {store['uid']})"
    ]
    header = f"{'partition':>9} {'positions':>17} {'records':>9} {'bytes':>10} {'keys':>6} "
    header += f"{'runs':>6} {'in flight':>9}  oldest record"
    lines.append(header)
    for p in doc["partitions"]:
        span = f"{p['low']}..{p['high']}"
        lines.append(
            f"{p['partition']:>9} {span:>17} {p['records']:>9} {fmt_bytes(p['bytes']):>10} "
            f"{p['keys']:>6} {p['runs']:>6} {p['runs_in_flight']:>9}  "
            f"{fmt_time(p['oldest_record_at'])}"
            + (
                f"  (cleaned below {max(b['position'] for b in p['cleanup_boundaries'])})"
                if p["cleanup_boundaries"]
                else ""
            )
        )
    t = doc["totals"]
    lines.append(
        f"{'total':>9} {'':>17} {t['records']:>9} {fmt_bytes(t['bytes']):>10} {t['keys']:>6} "
        f"{t['runs']:>6} {t['runs_in_flight']:>9}  {fmt_time(doc['oldest_record_at'])}"
    )
    if doc["other_namespaces"]:
        lines.append(
            "other namespaces/operators here: "
            + ", ".join(f"{k} ({v} records)" for k, v in sorted(doc["other_namespaces"].items()))
        )
    return "\n".join(lines)


def _identity(store: ActionStateStore) -> dict[str, str]:
    i = store.identity
    return {"backend": i.backend, "name": i.name, "uid": i.uid}


# -- command line ----------------------------------------------------------------------------


def _parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal journal inspect",
        description="Show runs -> actions -> calls of a key, or a summary of a namespace.",
    )
    add_store_args(p)
    add_namespace_args(p)
    add_key_args(p)
    p.add_argument("--run", type=int, metavar="SEQ", help="only this run (seq) of the key")
    p.add_argument("--action", metavar="ACTION_ID", help="the run holding this action id")
    p.add_argument("--call", metavar="CALL_ID", help="the run holding this call id")
    p.add_argument("--summary", action="store_true", help="per-partition summary (the default)")
    p.add_argument("--json", action="store_true", help="JSON on stdout, for scripts")
    add_progress_args(p)
    return p


def inspect_main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    location = store_location(args)
    assert location is not None
    key_id = key_id_from_args(args)
    if args.run is not None and key_id is None:
        raise UsageError("--run SEQ needs --key or --key-id")
    chosen = sum(x is not None for x in (key_id, args.action, args.call))
    if chosen > 1:
        raise UsageError("give one of --key/--key-id, --action, --call")
    if args.summary and chosen:
        raise UsageError("--summary is for a whole namespace: drop --key/--action/--call")
    store = open_store(location, record_codec(args))
    try:
        if not chosen:
            doc = summary_document(store, args.namespace, args.operator_uid, args.progress)
            if not doc["totals"]["records"]:
                raise ToolError(_empty(args.namespace, location, doc["other_namespaces"]))
            print(json.dumps(doc, indent=2) if args.json else render_summary(doc))
            return EXIT_OK
        seq = args.run
        if key_id is None:
            found = find_record(
                store,
                args.namespace,
                args.operator_uid,
                action_id=args.action,
                call_id=args.call,
                progress=args.progress,
            )
            if found is None:
                what = f"action {args.action}" if args.action else f"call {args.call}"
                raise ToolError(
                    f"no record of {what} in namespace {args.namespace!r} of "
                    f"{describe_location(location)}"
                )
            key_id, seq = found.key_id, found.seq
        doc = key_document(store, args.namespace, args.operator_uid, key_id, args.progress)
    finally:
        store.close()
    if seq is not None:
        doc["runs"] = [r for r in doc["runs"] if r["seq"] == seq]
        doc["records"] = sum(r["records"] for r in doc["runs"])
        doc["bytes"] = sum(r["bytes"] for r in doc["runs"])
    if not doc["runs"]:
        what = f"key {key_id}" + (f" run seq={seq}" if seq is not None else "")
        raise ToolError(
            f"no records of {what} in namespace {args.namespace!r} of "
            f"{describe_location(location)} (deleted by cleanup, never written, or another "
            "--key-type?)"
        )
    print(json.dumps(doc, indent=2) if args.json else render_tree(doc))
    return EXIT_OK


def _empty(namespace: str, location: dict[str, Any], other: dict[str, int]) -> str:
    found = sorted({label.split("/")[0] for label in other})
    return f"namespace {namespace!r} has no records in {describe_location(location)}" + (
        f"; namespaces found: {', '.join(found)}" if found else ""
    )


def main(argv: list[str]) -> int:
    return run_tool(inspect_main, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
