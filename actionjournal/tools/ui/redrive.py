"""``actionjournal runs redrive``: produce a dead letter to the topic its job reads back.

The same code as the explorer's re-drive button (:mod:`.deadletters`), reached from the
command line: the dead letter is found through the run index, brought up to date first.
"""

from __future__ import annotations

from pathlib import Path

from actionjournal.tools.toolkit import EXIT_OK, ArgumentParser, ToolError, add_namespace_args
from actionjournal.tools.ui import journal as jr
from actionjournal.tools.ui.deadletters import dead_letter, produce
from actionjournal.tools.ui.index import default_path
from actionjournal.tools.ui.indexer import build


def parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="actionjournal runs redrive",
        description="Re-drive a dead-lettered run: produce its DeadLetter (as JSON, "
        "DeadLetter.to_json) to the Kafka topic the job reads dead letters back from "
        "(docs/ui.md, docs/flink.md). Never writes to the journal.",
    )
    jr.add_store_args(p)
    add_namespace_args(p)
    p.add_argument("--key-id", required=True, metavar="ID", help="the run's key id")
    p.add_argument("--seq", required=True, type=int, help="the run's seq")
    p.add_argument("--to-topic", required=True, metavar="TOPIC", help="the job's re-drive topic")
    p.add_argument(
        "--to-bootstrap",
        metavar="HOST:PORT",
        help="its Kafka bootstrap servers (default: the journal's, on Kafka)",
    )
    p.add_argument("--index", metavar="FILE", help="the run index file (as `actionjournal ui`)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    journal = jr.journal_from_args(args)
    bootstrap = args.to_bootstrap or (args.bootstrap if jr.is_kafka(journal.config) else None)
    if not bootstrap:
        raise ToolError("--to-bootstrap HOST:PORT: where is the job's re-drive topic?")
    with journal.opened() as store:
        path = (
            Path(args.index)
            if args.index
            else default_path(jr.identity_of(store), journal.namespace, journal.operator_uid)
        )
    build(journal, path)
    from actionjournal.tools.ui.index import connect

    db = connect(path)
    try:
        found = db.execute(
            "SELECT f.partition, f.position FROM failures f JOIN runs ON runs.id = f.run "
            "WHERE f.final = 1 AND runs.key_id = ? AND runs.seq = ? "
            + ("AND runs.operator_uid = ? " if args.operator_uid else "")
            + "ORDER BY f.position DESC LIMIT 1",
            (args.key_id, args.seq, *([args.operator_uid] if args.operator_uid else [])),
        ).fetchone()
        if found is None:
            raise ToolError(
                f"no dead letter of key id {args.key_id} seq {args.seq} in namespace "
                f"{journal.namespace!r} of {journal.describe()} (`actionjournal runs "
                "dead-letters` lists them)"
            )
        db.row_factory = __import__("sqlite3").Row
        letter, _ = dead_letter(db, found[0], found[1])
    finally:
        db.close()
    offset = produce(letter, bootstrap, args.to_topic)
    print(
        f"re-drove key id {letter.key_id} seq {letter.seq} (dead letter {letter.number}): "
        f"produced to topic {args.to_topic} offset {offset}"
    )
    return EXIT_OK
