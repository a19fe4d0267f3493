"""``actionjournal journal events``: the journal's events as Apache Flink Agents' Event Log.

Upstream documents its File Event Log (docs/operations/monitoring.md, "JSON Format"): one
flat JSON object per line, with ``timestamp``, ``logLevel``, ``eventId``, ``eventType``,
``eventAttributes`` and, for an event an action sent, ``upstreamEventId`` and
``upstreamActionName`` (a root input event has neither), in files named
``events-{jobId}-{taskName}-{subtaskId}.log``. Written so, its ``flink-agents-trace-tree``
command rebuilds the input-rooted trees of what led to what. Every event an action sent is
journaled with its id in the action's ``ActionCompleted``, with the event it ran on
(``trigger_event_id``), so the journal holds the whole chain; a run's input is not
journaled (only its digest), so a root event's ``eventAttributes`` is empty.
"""

from __future__ import annotations

import datetime
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import msgspec

from actionjournal.durable.records import ActionCompleted
from actionjournal.durable.store import Inspectable
from actionjournal.durable.values import ValueCodec
from actionjournal.tools import reading
from actionjournal.tools.journal.cli import report_unreadable
from actionjournal.tools.reading import Unreadable
from actionjournal.tools.store_options import add_store_args, opened, record_codec, store_config
from actionjournal.tools.toolkit import (
    EXIT_OK,
    ArgumentParser,
    ToolError,
    add_namespace_args,
)

INPUT_EVENT_TYPE = "_input_event"  # upstream's InputEvent: the root of every trace tree


def parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal journal events",
        description="Write the events the journal holds, with the event and action each came "
        "from, in Apache Flink Agents' Event Log format (JSON lines), for its "
        "flink-agents-trace-tree command. Never writes to the journal.",
    )
    add_store_args(p)
    add_namespace_args(p)
    p.add_argument(
        "--out",
        default="-",
        metavar="DIR",
        help="a directory to write events-{namespace}-{operator}-{partition}.log files into, "
        "one per partition (created if missing); '-': all to stdout (default)",
    )
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    config = store_config(args)
    assert config is not None
    out = None if args.out == "-" else Path(args.out)
    if out is not None and out.exists() and not out.is_dir():
        raise ToolError(f"--out {out}: not a directory")
    skipped: list[Unreadable] = []
    with opened(config, record_codec(args)) as store:
        for partition in store.partitions():
            lines = event_log(store, partition, args.namespace, args.operator_uid, skipped)
            if out is None:
                _write(lines, sys.stdout)
                continue
            written: list[str] = list(lines)
            if not written:
                continue
            out.mkdir(parents=True, exist_ok=True)
            uid = args.operator_uid or "all"
            path = out / f"events-{args.namespace}-{uid}-{partition}.log"
            with path.open("w", encoding="utf-8") as f:
                _write(iter(written), f)
    report_unreadable(skipped)
    return EXIT_OK


def event_log(
    store: Inspectable,
    partition: int,
    namespace: str,
    operator_uid: str | None,
    skipped: list[Unreadable],
) -> Iterator[str]:
    """The Event Log lines of one partition's events, in journal order: each root input event
    once, before the first event sent on it, then every event an action sent."""
    values = ValueCodec()  # never unpickles: a value it cannot decode is shown as its size
    seen: set[str] = set()  # every event id written (roots, and events actions sent)
    for item in reading.scan(store, partition, namespace, operator_uid, skipped):
        record = item.record
        if not isinstance(record, ActionCompleted) or record.trigger_event_id is None:
            continue
        trigger = record.trigger_event_id
        if trigger not in seen:  # not sent by an action: the run's input, a root
            seen.add(trigger)
            yield _line(record.at, trigger, INPUT_EVENT_TYPE, {}, None, None)
        for event in record.outputs:
            if event.id in seen:  # a replay journals nothing again, but be sure
                continue
            seen.add(event.id)
            attributes = _attributes(values, event.attributes)
            yield _line(record.at, event.id, event.type, attributes, trigger, record.action)


def _line(
    at: float,
    event_id: str,
    event_type: str,
    attributes: dict[str, Any],
    upstream_event: str | None,
    upstream_action: str | None,
) -> str:
    doc: dict[str, Any] = {
        "timestamp": datetime.datetime.fromtimestamp(at, datetime.UTC).isoformat(),
        "logLevel": "STANDARD",
        "eventId": event_id,
        "eventType": event_type,
        "eventAttributes": attributes,
    }
    if upstream_event is not None:  # a root input event carries neither
        doc["upstreamEventId"] = upstream_event
        doc["upstreamActionName"] = upstream_action
    return msgspec.json.encode(doc).decode()


def _attributes(values: ValueCodec, data: bytes) -> dict[str, Any]:
    """An event's attributes as JSON holds them (bytes as base64, other types as their repr)."""
    try:
        decoded = values.decode(data)
    except Exception as exc:  # pickled, or a type not importable here: never unpickled
        return {"_not_shown": f"{len(data)} bytes ({type(exc).__name__})"}
    plain = msgspec.to_builtins(decoded, enc_hook=repr)
    return plain if isinstance(plain, dict) else {"value": plain}


def _write(lines: Iterator[str], out: TextIO) -> None:
    for line in lines:
        out.write(line + "\n")
