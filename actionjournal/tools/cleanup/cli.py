"""``actionjournal cleanup plan``, ``apply`` and ``run``: options and output (``run`` is
:class:`~actionjournal.tools.cleanup.loop.CleanupLoop` as a command: one log line per round
on stdout, its metrics over HTTP)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TextIO

import msgspec

from actionjournal.stores import SqliteStoreConfig
from actionjournal.tools.cleanup.apply import ApplyResult, apply_plan, check_location, check_plan
from actionjournal.tools.cleanup.document import CleanupPlan, load, to_json
from actionjournal.tools.cleanup.loop import DEFAULT_EVERY_S, CleanupLoop
from actionjournal.tools.cleanup.plan import make_plan
from actionjournal.tools.cleanup.state import (
    DEFAULT_MARGIN_S,
    CheckpointState,
    SnapshotState,
    load_checkpoint,
    load_snapshot,
    time_state,
)
from actionjournal.tools.cleanup.vacuum import size_note, vacuum
from actionjournal.tools.reading import describe as describe_unreadable
from actionjournal.tools.store_options import (
    add_store_args,
    cleanable,
    config_from_location,
    describe,
    opened,
    record_codec,
    refuse_cleanup,
    signing_key,
    store_config,
)
from actionjournal.tools.toolkit import (
    EXIT_OK,
    ArgumentParser,
    ToolError,
    UsageError,
    add_namespace_args,
    add_progress_args,
    check_output_file,
    duration,
    fmt_bytes,
    fmt_span,
    fmt_time,
    parse_time,
    positive_int,
    seconds,
)

DEFAULT_MAX_AGE_S = 3600.0
DEFAULT_PLAN_FILE = "actionjournal-cleanup-plan.json"


def _state_parser(
    command: str, description: str, states: str, snapshot: str
) -> tuple[ArgumentParser, argparse._ArgumentGroup]:
    """A parser of the job's journal and of its restorable state: the group of the latter."""
    p = ArgumentParser(prog=f"actionjournal cleanup {command}", description=description)
    add_store_args(p)
    add_namespace_args(p)
    which = p.add_argument_group(states)
    which.add_argument("--snapshot", help=snapshot)
    return p, which


def plan_parser() -> ArgumentParser:
    p, which = _state_parser(
        "plan",
        "Compute what may be deleted from the journal and write a plan file.",
        "the oldest state that may still be restored (exactly one)",
        "a LocalRunner snapshot file (exact; names its namespace and operator)",
    )
    which.add_argument(
        "--checkpoint",
        help="a Flink checkpoint or savepoint directory, its _metadata, or a directory of "
        "retained chk-N checkpoints or savepoint-* savepoints (the oldest is used), as a path "
        "or as Flink prints it (file:/...); judged by time, see --safety-margin",
    )
    which.add_argument(
        "--before",
        metavar="TIME",
        help="when the oldest restorable state was taken: epoch seconds or ISO 8601",
    )
    add_margin_arg(p, "with --checkpoint/--before: runs must have completed this long before")
    p.add_argument("--out", default=DEFAULT_PLAN_FILE, help="the plan file to write")
    p.add_argument("--json", action="store_true", help="print the plan as JSON on stdout")
    add_progress_args(p)
    return p


def add_margin_arg(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument(
        "--safety-margin", type=seconds, default=DEFAULT_MARGIN_S, metavar="SECONDS", help=text
    )


def plan_main(argv: list[str]) -> int:
    args = plan_parser().parse_args(argv)
    config = store_config(args)
    assert config is not None
    refuse_cleanup(config)
    chosen = [x for x in (args.snapshot, args.checkpoint, args.before) if x is not None]
    if len(chosen) != 1:
        raise UsageError(
            "say which state is the oldest that may be restored: exactly one of --snapshot, "
            "--checkpoint, --before"
        )
    out = check_output_file(args.out)  # before the scan, which may take long
    if args.checkpoint is not None:  # before opening anything: a typo fails fast
        state = load_checkpoint(args.checkpoint, args.safety_margin)
    elif args.before is not None:
        state = time_state(parse_time(args.before, "--before"), args.safety_margin)
    elif not Path(args.snapshot).is_file():
        raise ToolError(f"snapshot {args.snapshot} does not exist")
    with opened(config, record_codec(args)) as opened_store:
        store = cleanable(opened_store, config)
        operator_uid = args.operator_uid
        if args.snapshot is not None:
            state = load_snapshot(args.snapshot, store, args.namespace, operator_uid)
            assert isinstance(state.info, SnapshotState)
            operator_uid = state.info.operator_uid
        plan = make_plan(store, config, args.namespace, operator_uid, state, args.progress)
    data = to_json(plan)
    out.write_bytes(data)
    if args.json:
        sys.stdout.write(data.decode())
    else:
        print_plan(plan)
        print(f"plan written to {out}; apply it with: actionjournal cleanup apply --plan {out}")
    return EXIT_OK


def print_plan(plan: CleanupPlan, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    store, state = plan.store, plan.state
    print(
        f"cleanup plan for namespace {plan.namespace!r}, operator {plan.operator_uid!r} in "
        f"{store.backend} {store.name} (id {store.uid})",
        file=out,
    )
    if isinstance(state, SnapshotState):
        print(f"oldest restorable state: snapshot {state.path} ({state.keys} keys)", file=out)
    else:
        what = (
            f"checkpoint {state.metadata}"
            if isinstance(state, CheckpointState)
            else f"taken at {fmt_time(state.taken_at)}"
        )
        print(
            f"oldest restorable state: {what}; runs completed before {fmt_time(state.cutoff)} "
            f"(safety margin {state.safety_margin_s:g} s) count as contained",
            file=out,
        )
    print("positions are half-open ranges: [low, high) holds low .. high-1", file=out)
    for entry in plan.partitions:
        if entry.low >= entry.high and entry.delete_below is None:
            continue
        goes = (
            f"deletes {entry.records_deleted} records ({fmt_bytes(entry.bytes_deleted)}, "
            f"{entry.runs_deleted} runs)"
            if entry.delete_below is not None
            else "deletes nothing"
        )
        print(
            f"  {entry.reason}; {goes}, keeps {entry.records_kept} "
            f"(held {fmt_span(entry.low, entry.high)})",
            file=out,
        )
    for bad in plan.unreadable:
        print(f"  {describe_unreadable(bad)}", file=out)
    totals = plan.totals
    print(
        f"total: {totals.records_deleted} records ({fmt_bytes(totals.bytes_deleted)}, "
        f"{totals.runs_deleted} runs) may go; {totals.records_kept} stay",
        file=out,
    )
    if plan.other_namespaces and store.shared_deletes:
        print(
            "  other namespaces share this topic and bound what may go: "
            + ", ".join(f"{k} ({v} records)" for k, v in sorted(plan.other_namespaces.items())),
            file=out,
        )


def apply_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal cleanup apply",
        description="Re-check the plan's boundaries, journal them, then delete below them. "
        "The journal is reached at the plan's location unless --store ... is given.",
    )
    p.add_argument("--plan", required=True, help="a plan file from `actionjournal cleanup plan`")
    add_store_args(p, required=False)
    p.add_argument(
        "--max-age",
        type=seconds,
        default=DEFAULT_MAX_AGE_S,
        metavar="SECONDS",
        help="refuse a plan older than this; 0: no limit",
    )
    p.add_argument(
        "--vacuum",
        action="store_true",
        help="sqlite: after deleting, rewrite the file without the freed pages (VACUUM), so it "
        "shrinks; it waits for writers and needs free disk space for a copy",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    add_progress_args(p)
    return p


def apply_main(argv: list[str]) -> int:
    args = apply_parser().parse_args(argv)
    plan = load(args.plan)
    given = store_config(args)
    if given is None:
        config = config_from_location(plan.location, args)
    else:
        check_location(plan, given)
        config = given
    refuse_cleanup(config)
    sqlite = Path(config.path) if isinstance(config, SqliteStoreConfig) else None
    if args.vacuum and sqlite is None:
        raise UsageError("--vacuum is for SQLite journals: Kafka gives deleted space back itself")
    with opened(config, record_codec(args), write=True) as opened_store:
        store = cleanable(opened_store, config)
        check_plan(plan, store, config, args.max_age)
        result = apply_plan(plan, store, args.progress)
    sizes = vacuum(sqlite) if args.vacuum and sqlite is not None else None
    if args.json:
        print(msgspec.json.format(msgspec.json.encode(result).decode(), indent=2))
        return EXIT_OK
    _print_result(plan, result)
    if sizes is not None:
        print(f"vacuumed {sqlite}: {fmt_bytes(sizes[0])} -> {fmt_bytes(sizes[1])}")
    elif sqlite is not None and result.deleted:
        print(size_note(sqlite))
    return EXIT_OK


def _print_result(plan: CleanupPlan, result: ApplyResult) -> None:
    what = "offsets" if plan.store.backend == "kafka" else "records"
    for p in result.applied:
        n = result.deleted.get(p)
        print(f"partition {p}: boundary journaled, {n if n is not None else '?'} {what} deleted")
    for p in result.already_applied:
        print(f"partition {p}: already applied")
    for p in result.nothing_left:
        print(
            f"partition {p}: nothing of namespace {plan.namespace!r} left below the boundary "
            "(applied before, or nothing to delete); no boundary journaled"
        )
    if not (result.applied or result.already_applied or result.nothing_left):
        print("the plan deletes nothing")


def port(text: str) -> int:
    """An argparse type: a TCP port, 0 for a free one."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: a port is 0 to 65535 (0: a free port)")
    return value


def run_parser() -> ArgumentParser:
    p, which = _state_parser(
        "run",
        "Keep the journal bounded: every --every, plan from the oldest restorable state "
        "retained at that moment and apply, with every check of `cleanup plan` and `cleanup "
        "apply`. One line per round on stdout; metrics on --metrics-port. SIGTERM or Ctrl-C "
        "stops it (safely, also during a round).",
        "the state that may be restored, read again each round (one kind)",
        "the LocalRunner snapshot file the job keeps rewriting (exact)",
    )
    which.add_argument(
        "--checkpoints",
        "--checkpoint",
        action="append",
        default=[],
        metavar="DIR",
        help="a Flink job's checkpoint directory (of chk-N; or the directory above its jobs'), "
        "a savepoint directory (of savepoint-*), or one checkpoint or savepoint; repeat for "
        "every place restorable state is kept: each round plans for the oldest one retained "
        "in any of them, judged by time (see --safety-margin)",
    )
    add_margin_arg(
        p, "with --checkpoints: runs must have completed this long before the checkpoint"
    )
    when = p.add_argument_group("when")
    when.add_argument(
        "--every",
        type=duration,
        metavar="DURATION",
        help="pause between rounds: 30s, 5m, 1h (a number alone: seconds)",
    )
    when.add_argument(
        "--once", action="store_true", help="one round, then exit: 1 if it failed (for cron)"
    )
    when.add_argument(
        "--max-rounds", type=positive_int, metavar="N", help="stop after N rounds (tests)"
    )
    p.add_argument(
        "--metrics-port",
        type=port,
        metavar="PORT",
        help="serve Prometheus metrics at http://ADDR:PORT/metrics (0: a free port, said at "
        "start); none when left out",
    )
    p.add_argument(
        "--metrics-addr", default="127.0.0.1", metavar="ADDR", help="the metrics' address"
    )
    return p


def run_main(argv: list[str]) -> int:
    args = run_parser().parse_args(argv)
    config = store_config(args)
    assert config is not None
    refuse_cleanup(config)
    if args.once == (args.every is not None):
        raise UsageError(
            "say how often: --every DURATION (e.g. 5m) between rounds, or --once for one round"
        )
    if args.once and args.max_rounds is not None:
        raise UsageError("--once is one round: leave out --max-rounds")
    if (args.snapshot is None) == (not args.checkpoints):
        raise UsageError(
            "say which state may be restored: --snapshot FILE (a LocalRunner job) or "
            "--checkpoints DIR (a Flink job; repeat for savepoint directories), not both"
        )
    loop = CleanupLoop(
        config,
        snapshot=args.snapshot,
        checkpoints=args.checkpoints,
        namespace=args.namespace,
        operator_uid=args.operator_uid,
        signing_key=signing_key(args),
        every_s=args.every or DEFAULT_EVERY_S,
        safety_margin_s=args.safety_margin,
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger = logging.getLogger("actionjournal.tools.cleanup.loop")
    before = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        state = f"snapshot {args.snapshot}" if args.snapshot else ", ".join(args.checkpoints)
        when = "one round" if args.once else f"every {args.every:g} s"
        served = ""
        if args.metrics_port is not None:
            bound = loop.serve_metrics(args.metrics_port, args.metrics_addr)
            served = f"; metrics on http://{args.metrics_addr}:{bound}/metrics"
        logger.info(
            "cleanup run: %s, namespace %r, restorable state from %s, %s%s",
            describe(config),
            args.namespace,
            state,
            when,
            served,
        )
        with loop.stop_on_signals():
            last = loop.run(1 if args.once else args.max_rounds)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before[0])
        logger.propagate = before[1]
    if loop.stopped_by is None and last is not None and last.result == "failed":
        raise ToolError(f"round {last.round} failed: {last.error}")
    return EXIT_OK
