"""``actionjournal cleanup run``: the continuous cleanup (:class:`CleanupLoop`) as a command,
with one log line per round on stdout and its metrics over HTTP."""

from __future__ import annotations

import argparse
import logging
import sys

from actionjournal.tools.cleanup.loop import DEFAULT_EVERY_S, CleanupLoop
from actionjournal.tools.cleanup.state import DEFAULT_MARGIN_S
from actionjournal.tools.store_options import (
    add_store_args,
    describe,
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
    duration,
    positive_int,
    seconds,
)


def port(text: str) -> int:
    """An argparse type: a TCP port, 0 for a free one."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: a port is 0 to 65535 (0: a free port)")
    return value


def run_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal cleanup run",
        description="Keep the journal bounded: every --every, plan from the oldest restorable "
        "state retained at that moment and apply, with every check of `cleanup plan` and "
        "`cleanup apply`. One line per round on stdout; metrics on --metrics-port. SIGTERM "
        "or Ctrl-C stops it (safely, also during a round).",
    )
    add_store_args(p)
    add_namespace_args(p)
    which = p.add_argument_group("the state that may be restored, read again each round (one kind)")
    which.add_argument(
        "--snapshot", help="the LocalRunner snapshot file the job keeps rewriting (exact)"
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
    p.add_argument(
        "--safety-margin",
        type=seconds,
        default=DEFAULT_MARGIN_S,
        metavar="SECONDS",
        help="with --checkpoints: runs must have completed this long before the checkpoint",
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
