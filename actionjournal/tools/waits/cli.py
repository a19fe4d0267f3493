"""``actionjournal timers list`` and ``actionjournal signals list``: what agents wait for."""

from __future__ import annotations

import argparse
import time

import msgspec

from actionjournal.tools.journal.cli import add_key_args, key_id_from_args, report_unreadable
from actionjournal.tools.journal.keys import matching_form
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
    UsageError,
    add_namespace_args,
    add_progress_args,
    fmt_time,
)
from actionjournal.tools.waits.read import SignalDoc, TimerDoc, Waits, find_waits

TIMER_STATUSES = ("pending", "fired", "cancelled", "replaced")
SIGNAL_STATUSES = ("pending", "answered", "timed_out", "unknown", "late")


def _parser(
    prog: str, description: str, statuses: tuple[str, ...], json_help: str
) -> ArgumentParser:
    p = ArgumentParser(prog=prog, description=description)
    add_store_args(p)
    add_namespace_args(p)
    add_key_args(p)
    p.add_argument(
        "--status",
        action="append",
        choices=statuses,
        metavar="STATUS",
        help=f"only these ({', '.join(statuses)}); repeat for more (default: all)",
    )
    p.add_argument("--json", action="store_true", help=json_help)
    add_progress_args(p)
    return p


def timers_parser() -> ArgumentParser:
    return _parser(
        "actionjournal timers list",
        "List the timers agents scheduled, from the journal: pending (with when they are "
        "due), fired (and the run they started), cancelled, replaced (scheduled again under "
        "the same id). A timer counts once the run that scheduled it completed. Never writes "
        "to the journal.",
        TIMER_STATUSES,
        "a JSON list of objects with key_id, id, status, due, event_type, scheduled_at, "
        "scheduled_seq, operator_uid, fired_at, fired_seq, ended_at (times in epoch seconds)",
    )


def signals_parser() -> ArgumentParser:
    return _parser(
        "actionjournal signals list",
        "List the signals agents expected, from the journal: pending (with their deadline), "
        "answered, timed out, and the late or duplicate answers each got (journaled, nothing "
        "ran for them; 'late' selects signals that have some); 'unknown': answers to a "
        "signal the journal holds no expectation of. Never writes to the journal.",
        SIGNAL_STATUSES,
        "a JSON list of objects with key_id, id, name, status, deadline, expected_at, "
        "expected_seq, operator_uid, ended_at, ended_seq, answer, late_answers (times in "
        "epoch seconds)",
    )


def _read(args: argparse.Namespace) -> tuple[Waits, str]:
    config = store_config(args)
    assert config is not None
    key_id = key_id_from_args(args)
    if key_id is not None and len(key_id) < 32:
        raise UsageError("--key-id: give the whole key id here (32 hex digits)")
    with opened(config, record_codec(args)) as store:
        skipped: list[Unreadable] = []
        if key_id is None and args.key is not None:  # --key, its type to be found
            where = describe(config)
            key_id = matching_form(store, args.namespace, args.key, where, skipped).key_id
        found = find_waits(store, args.namespace, args.operator_uid, key_id, args.progress)
    report_unreadable([*skipped, *found.skipped])
    return found, describe(config)


def timers_main(argv: list[str]) -> int:
    args = timers_parser().parse_args(argv)
    found, where = _read(args)
    shown = [t for t in found.timer_list() if not args.status or t.status in args.status]
    if args.json:
        print(msgspec.json.encode(shown).decode())
    elif not shown:
        print(f"no timers in namespace {args.namespace!r} of {where}")
    else:
        now = time.time()
        for t in shown:
            print(_timer_line(t, now))
    return EXIT_OK


def _timer_line(t: TimerDoc, now: float) -> str:
    head = f"{t.status:<9} timer {t.id} of key id {t.key_id[:12]}… ({t.event_type})"
    due = f"due {fmt_time(t.due)}" + (" (overdue)" if t.status == "pending" and t.due < now else "")
    detail = f"scheduled by run {t.scheduled_seq} at {fmt_time(t.scheduled_at)}"
    if t.status == "fired":
        detail += f"; fired at {fmt_time(t.fired_at)}, run {t.fired_seq}"
    elif t.status in ("cancelled", "replaced"):
        detail += f"; {t.status} at {fmt_time(t.ended_at)}"
    return f"{head}\n    {due}; {detail} (operator {t.operator_uid})"


def signals_main(argv: list[str]) -> int:
    args = signals_parser().parse_args(argv)
    found, where = _read(args)
    wanted = set(args.status or ())
    shown = [
        s
        for s in found.signal_list()
        if not wanted or s.status in wanted or ("late" in wanted and s.late_answers)
    ]
    if args.json:
        print(msgspec.json.encode(shown).decode())
    elif not shown:
        print(f"no signals in namespace {args.namespace!r} of {where}")
    else:
        for s in shown:
            print(_signal_line(s))
    return EXIT_OK


def _signal_line(s: SignalDoc) -> str:
    if s.status == "unknown":
        lines = [f"unknown   signal {s.id} of key id {s.key_id[:12]}…: answered, never expected"]
    else:
        lines = [
            f"{s.status:<9} signal {s.id} {s.name!r} of key id {s.key_id[:12]}…",
            f"    deadline {fmt_time(s.deadline)}; expected by run {s.expected_seq} at "
            f"{fmt_time(s.expected_at)} (operator {s.operator_uid})",
        ]
    if s.status == "answered":
        lines.append(f"    answered at {fmt_time(s.ended_at)}, run {s.ended_seq}: {s.answer}")
    elif s.status == "timed_out":
        lines.append(f"    timed out: run {s.ended_seq} started at {fmt_time(s.ended_at)}")
    for late in s.late_answers:
        lines.append(
            f"    late answer at {fmt_time(late.at)}, run {late.seq} (nothing ran): {late.value}"
        )
    return "\n".join(lines)
