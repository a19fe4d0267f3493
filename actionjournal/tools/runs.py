"""``actionjournal runs dead-letters``: the dead-lettered runs of a journal.

A dead letter is a final ``RunFailed`` record (``on_run_failure='dead-letter'`` or the last
try of ``'retry-then-dead-letter'``). The listing says, per run, its key, seq, error and
when, whether a re-drive completed it since, and where its record is. Keys and inputs are
shown decoded without pickle: reading a journal never runs code its bytes choose.
"""

from __future__ import annotations

from typing import Any

import msgspec

from actionjournal.durable.records import RunCompleted, RunFailed
from actionjournal.durable.store import Inspectable
from actionjournal.durable.values import ValueCodec
from actionjournal.tools import reading
from actionjournal.tools.journal.cli import report_unreadable
from actionjournal.tools.reading import Unreadable
from actionjournal.tools.store_options import (
    add_store_args,
    describe,
    opened,
    record_codec,
    store_config,
)
from actionjournal.tools.toolkit import (
    EXIT_OK,
    ArgumentParser,
    ProgressBar,
    add_namespace_args,
    add_progress_args,
    fmt_time,
    parse_time,
)

_PREVIEW = 80


class DeadLetterDoc(msgspec.Struct):
    """One dead-lettered run, as ``--json`` prints it."""

    key: str | int | float | bool  # the key itself when JSON has its type, else key_literal
    seq: int
    error: str
    when: float  # epoch seconds of the failure
    key_id: str
    operator_uid: str
    epoch: int
    error_type: str
    input: Any  # the run's input itself when JSON holds it as it is, else input_literal
    redriven: bool  # a re-drive completed the run since
    partition: int
    position: int
    key_literal: bool = False  # key is the Python literal of a key JSON cannot hold (a tuple)
    input_literal: bool = False  # input is the Python literal of a value JSON cannot hold


def dead_letters_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal runs dead-letters",
        description="List the dead-lettered runs of a namespace (final RunFailed records): "
        "key, seq, error, when, and whether a re-drive completed the run since. Re-drive one "
        "by giving its DeadLetter back to the job as input (docs/guarantees.md). Never writes "
        "to the journal.",
    )
    add_store_args(p)
    add_namespace_args(p)
    p.add_argument(
        "--since", metavar="TIME", help="only runs dead-lettered at or after TIME (epoch seconds "
        "or ISO 8601)"
    )  # fmt: skip
    p.add_argument(
        "--all", action="store_true", help="also list runs a re-drive has completed since"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="a JSON list of objects with key, seq, error, when (and key_id, operator_uid, "
        "epoch, error_type, input, redriven, partition, position, key_literal, "
        "input_literal), for scripts",
    )
    add_progress_args(p)
    return p


def dead_letters_main(argv: list[str]) -> int:
    args = dead_letters_parser().parse_args(argv)
    config = store_config(args)
    assert config is not None
    since = parse_time(args.since, "--since") if args.since is not None else None
    skipped: list[Unreadable] = []
    with opened(config, record_codec(args)) as store:
        found = find_dead_letters(store, args.namespace, args.operator_uid, skipped, args.progress)
    report_unreadable(skipped)
    shown = [
        d for d in found if (args.all or not d.redriven) and (since is None or d.when >= since)
    ]
    if args.json:
        print(msgspec.json.encode(shown).decode())
    elif not shown:
        print(f"no dead-lettered runs in namespace {args.namespace!r} of {describe(config)}")
    else:
        for d in shown:
            key = d.key if d.key_literal else repr(d.key)
            print(
                f"{fmt_time(d.when)}  key {key} (key id {d.key_id[:12]}…) seq {d.seq}"
                f"{'  [re-driven, completed]' if d.redriven else ''}\n"
                f"    error: {d.error}\n"
                f"    input: {_shown(d)}\n"
                f"    at partition {d.partition} position {d.position} "
                f"(operator {d.operator_uid}, epoch {d.epoch})"
            )
    return EXIT_OK


def find_dead_letters(
    store: Inspectable,
    namespace: str,
    operator_uid: str | None,
    skipped: list[Unreadable],
    progress: bool | None = None,
) -> list[DeadLetterDoc]:
    """Every final RunFailed of the namespace, oldest first per partition."""
    values = ValueCodec()  # no pickle: a preview never unpickles journal bytes
    found: list[DeadLetterDoc] = []
    for partition in store.partitions():
        bar = ProgressBar(f"reading partition {partition}", progress)
        letters: dict[tuple[str, str, int, int], DeadLetterDoc] = {}
        try:
            for item in reading.scan(
                store, partition, namespace, operator_uid, skipped, progress=bar
            ):
                record = item.record
                if record is None:
                    continue
                run = (item.operator_uid, record.key_id, record.epoch, record.seq)
                if isinstance(record, RunFailed) and record.final:
                    letters[run] = _doc(record, item.operator_uid, partition, item.position, values)
                elif isinstance(record, RunCompleted) and run in letters:
                    letters[run].redriven = True
        finally:
            bar.close()
        found.extend(letters.values())
    return found


def _doc(
    record: RunFailed, operator_uid: str, partition: int, position: int, values: ValueCodec
) -> DeadLetterDoc:
    root = record.error
    while root.cause is not None:
        root = root.cause
    key, literal = _key(values, record.key) if record.key is not None else (record.key_id, False)
    value, value_literal = _input(values, record.input)
    return DeadLetterDoc(
        key=key,
        key_literal=literal,
        seq=record.seq,
        error=record.error.message,
        when=record.at,
        key_id=record.key_id,
        operator_uid=operator_uid,
        epoch=record.epoch,
        error_type=root.type,
        input=value,
        input_literal=value_literal,
        redriven=False,
        partition=partition,
        position=position,
    )


def _key(values: ValueCodec, data: bytes) -> tuple[str | int | float | bool, bool]:
    """The key as JSON can hold it (str, int, float, bool), else its literal and True."""
    try:
        key = values.decode(data)
    except Exception:
        return preview(values, data), True
    if isinstance(key, (str, int, float, bool)):
        return key, False
    return repr(key), True


def _input(values: ValueCodec, data: bytes) -> tuple[Any, bool]:
    """The input as it is when JSON holds it so (dicts, lists, strings, numbers), else its
    literal and True."""
    try:
        value = values.decode(data)
    except Exception:
        return preview(values, data), True
    try:
        if msgspec.json.decode(msgspec.json.encode(value)) == value:
            return value, False
    except (TypeError, ValueError, msgspec.DecodeError):
        pass
    return repr(value), True


def _shown(d: DeadLetterDoc) -> str:
    """The input of the text listing: a one-line preview."""
    text = d.input if d.input_literal else repr(d.input)
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def preview(values: ValueCodec, data: bytes) -> str:
    try:
        text = repr(values.decode(data))
    except Exception as exc:  # pickled, or a type not importable here: say so, never unpickle
        return f"<{len(data)} bytes, not shown: {type(exc).__name__}>"
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"
