"""The text form of the documents: a key's tree, the namespace summary, the keys table."""

from __future__ import annotations

from actionjournal.tools.journal.documents import (
    ActionDoc,
    CallDoc,
    KeyDoc,
    KeysDoc,
    RunDoc,
    SummaryDoc,
)
from actionjournal.tools.toolkit import fmt_bytes, fmt_span, fmt_time


def render_tree(doc: KeyDoc, limited: bool) -> str:
    uids = f"  operator {', '.join(doc.operator_uids)}" if doc.operator_uids else ""
    name = f"{doc.key} (key id {doc.key_id})" if doc.key is not None else doc.key_id
    lines = [
        f"key {name}  partition {doc.partition}{uids}  {doc.runs_total} runs  "
        f"{doc.records} records  {fmt_bytes(doc.bytes)}"
    ]
    if len(doc.runs) < doc.runs_total:
        hidden = doc.runs_total - len(doc.runs)
        lines.append(
            f"({hidden} earlier runs not shown: --limit N shows the last N, --limit 0 all)"
            if limited
            else f"({hidden} runs not shown)"
        )
    several = len(doc.operator_uids) > 1
    runs = doc.runs
    for i, run in enumerate(runs):
        last_run = i == len(runs) - 1
        lines.append(("└─ " if last_run else "├─ ") + _run_line(run, several))
        pad = "   " if last_run else "│  "
        for j, action in enumerate(run.actions):
            last_action = j == len(run.actions) - 1
            lines.append(pad + ("└─ " if last_action else "├─ ") + _action_line(action))
            pad2 = pad + ("   " if last_action else "│  ")
            for k, call in enumerate(action.calls):
                last_call = k == len(action.calls) - 1
                lines.append(pad2 + ("└─ " if last_call else "├─ ") + _call_line(call))
    for control in doc.control:
        lines.append(f"control: {control.text}")
    return "\n".join(lines)


def _run_line(run: RunDoc, with_operator: bool) -> str:
    epoch = f" epoch={run.epoch}" if run.epoch else ""
    operator = f"  operator {run.operator_uid}" if with_operator else ""
    timing = fmt_time(run.started_at)
    if run.duration_s is not None:
        timing += f" ({run.duration_s:.3f} s)"
    return (
        f"run seq={run.seq}{epoch}{operator}  {run.status}  {timing}  {run.records} records, "
        f"{fmt_bytes(run.bytes)}  positions {fmt_span(run.first_position, run.end_position)}"
    )


def _action_line(action: ActionDoc) -> str:
    name = action.action or "?"
    text = f"action {name} [{action.action_id[:12]}]  {action.status}"
    if action.completed_at is not None and action.started_at is not None:
        text += f"  {action.completed_at - action.started_at:.3f} s"
    if action.status == "completed":
        text += f"  outputs: {action.outputs}, memory ops: {action.memory_ops}"
    text += f"  {fmt_bytes(action.bytes)}"
    if action.trigger_event_id:  # lineage: on which event, and what it sent
        sent = ", ".join(f"{e.type} {e.event_id[:12]}" for e in action.sent)
        text += f"  on {action.trigger_event_id[:12]}" + (f" -> {sent}" if sent else "")
    return text


def _call_line(call: CallDoc) -> str:
    text = f"call {call.index} {call.function_id}"
    if call.durable_id:
        text += f" (durable_id={call.durable_id})"
    text += f"  {call.status}"
    if call.duration_s is not None:
        text += f"  {call.duration_s:.3f} s"
    outcome = call.outcome
    if outcome is not None and "error" in outcome:
        text += f"  {outcome['error']['type']}: {outcome['error']['message']}"
    elif outcome is not None:
        text += f"  -> {outcome['value']} ({fmt_bytes(outcome['value_bytes'])})"
    if call.reconciled:
        text += "  [reconciled]"
    if call.attempt > 0:
        text += f"  attempt {call.attempt + 1}"
    return text + f"  [call id {call.call_id[:12]}]"


def render_summary(doc: SummaryDoc) -> str:
    store = doc.store
    uids = ", ".join(f"{uid} ({n} records)" for uid, n in sorted(doc.operator_uids.items()))
    lines = [
        f"namespace {doc.namespace!r} in {store.backend} {store.name} (id {store.uid})",
        f"operators: {uids}"
        + (
            f"; showing {doc.operator_uid}"
            if doc.operator_uid and len(doc.operator_uids) > 1
            else ""
        ),
        f"{'partition':>9} {'positions [low, high)':>22} {'records':>9} {'bytes':>10} {'keys':>6} "
        f"{'runs':>6} {'in flight':>9}  oldest record",
    ]
    for p in doc.partitions:
        lines.append(
            f"{p.partition:>9} {fmt_span(p.low, p.high):>22} {p.records:>9} "
            f"{fmt_bytes(p.bytes):>10} {p.keys:>6} {p.runs:>6} {p.runs_in_flight:>9}  "
            f"{fmt_time(p.oldest_record_at)}"
            + (
                f"  (cleaned below {max(b['position'] for b in p.cleanup_boundaries)})"
                if p.cleanup_boundaries
                else ""
            )
        )
    t = doc.totals
    lines.append(
        f"{'total':>9} {'':>22} {t.records:>9} {fmt_bytes(t.bytes):>10} {t.keys:>6} "
        f"{t.runs:>6} {t.runs_in_flight:>9}  {fmt_time(doc.oldest_record_at)}"
    )
    empty = doc.partitions_total - len(doc.partitions)
    if empty:
        lines.append(
            f"{empty} of {doc.partitions_total} partitions hold no records of the namespace "
            "(--all-partitions lists them)"
        )
    if doc.other_namespaces:
        lines.append(
            "other namespaces/operators here: "
            + ", ".join(f"{k} ({v} records)" for k, v in sorted(doc.other_namespaces.items()))
        )
    return "\n".join(lines)


def render_keys(doc: KeysDoc) -> str:
    lines = [
        f"{'key id':<32} {'partition':>9} {'runs':>6} {'in flight':>9} {'records':>8} "
        f"{'bytes':>10}  last activity               operator  key"
    ]
    for key in doc.keys:
        lines.append(
            f"{key.key_id:<32} {key.partition:>9} {key.runs:>6} {key.runs_in_flight:>9} "
            f"{key.records:>8} {fmt_bytes(key.bytes):>10}  {fmt_time(key.last_at):<27} "
            f"{', '.join(key.operator_uids)}  {key.key if key.key is not None else '-'}"
        )
    since = f" active since {fmt_time(doc.since)}" if doc.since is not None else ""
    shown = len(doc.keys)
    if doc.keys and all(key.key is None for key in doc.keys):
        lines.append(
            "(the journal holds key values only in dead letters; --key finds a key by its "
            "value, in any of its forms)"
        )
    lines.append(
        f"{doc.keys_total} keys{since}"
        + (
            f"; the {shown} most recently active shown (--limit 0: all)"
            if shown < doc.keys_total
            else ""
        )
    )
    return "\n".join(lines)
