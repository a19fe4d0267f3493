"""Dead letters as the explorer lists them, and re-driving one to a job's Kafka input.

A re-drive gives the dead letter back to the job as an input of its key (docs/guarantees.md):
here it is produced, as :meth:`DeadLetter.to_json`, to the topic the job reads dead letters
back from (``.map(DeadLetter.from_json)`` united with its input, docs/flink.md). The same
code serves the explorer's button and ``actionjournal runs redrive``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec

from actionjournal.durable.values import ValueCodec
from actionjournal.operator.dead_letters import DeadLetter
from actionjournal.tools.toolkit import ToolError
from actionjournal.tools.ui import journal as jr
from actionjournal.tools.ui.queries import NotFound, RunRow, run_row
from actionjournal.tools.ui.tally import FINISHED, RETRYING, decode_calls
from actionjournal.tools.ui.values import Shown

REDRIVE_HEADER = "actionjournal-dead-letter"


class Attempt(msgspec.Struct):
    what: str
    at: float | None
    error: str


class LetterDoc(msgspec.Struct):
    partition: int
    position: int
    run: RunRow
    key: str
    input: str
    error_type: str
    error: str
    when: float
    number: int  # which dead letter of the run (a re-drive that fails again: 2)
    redriven: bool  # a re-drive completed the run since
    history: list[Attempt]
    command: str  # the CLI command that re-drives it


def letters(
    db: sqlite3.Connection,
    journal: jr.Journal,
    shown: Shown,
    redrive_topic: str | None,
    redrive_bootstrap: str | None,
    *,
    include_redriven: bool = False,
    limit: int = 200,
) -> list[LetterDoc]:
    """The final failures of the index, newest first."""
    rows = db.execute(
        "SELECT f.partition AS f_partition, f.position AS f_position, f.at AS f_at, "
        "f.error_type AS f_error_type, f.error AS f_error, f.key AS f_key, f.input AS f_input, "
        "runs.* FROM failures f JOIN runs ON runs.id = f.run WHERE f.final = 1 "
        + ("" if include_redriven else "AND runs.status != 'redriven' ")
        + "ORDER BY f.at DESC LIMIT ?",
        (limit,),
    ).fetchall()
    return [_letter(db, journal, shown, row, redrive_topic, redrive_bootstrap) for row in rows]


def letter_at(
    db: sqlite3.Connection,
    journal: jr.Journal,
    shown: Shown,
    partition: int,
    position: int,
    redrive_topic: str | None = None,
    redrive_bootstrap: str | None = None,
) -> LetterDoc:
    row = _row(db, partition, position)
    return _letter(db, journal, shown, row, redrive_topic, redrive_bootstrap)


def _row(db: sqlite3.Connection, partition: int, position: int) -> sqlite3.Row:
    row = db.execute(
        "SELECT f.partition AS f_partition, f.position AS f_position, f.at AS f_at, "
        "f.error_type AS f_error_type, f.error AS f_error, f.key AS f_key, f.input AS f_input, "
        "runs.* FROM failures f JOIN runs ON runs.id = f.run WHERE f.final = 1 AND "
        "f.partition = ? AND f.position = ?",
        (partition, position),
    ).fetchone()
    if row is None:
        raise NotFound(
            f"no dead letter at partition {partition} position {position} (the dead letters "
            "page lists them)"
        )
    return row


def _letter(
    db: sqlite3.Connection,
    journal: jr.Journal,
    shown: Shown,
    row: sqlite3.Row,
    topic: str | None,
    bootstrap: str | None,
) -> LetterDoc:
    run = run_row(row)
    number = db.execute(
        "SELECT COUNT(*) FROM failures WHERE run = ? AND final = 1 AND position <= ?",
        (run.id, row["f_position"]),
    ).fetchone()[0]
    history = [
        Attempt(
            "try of the run failed" if not final else "dead-lettered",
            at,
            f"{error_type}: {shown.cut(error)}",
        )
        for final, at, error_type, error in db.execute(
            "SELECT final, at, error_type, error FROM failures WHERE run = ? ORDER BY position",
            (run.id,),
        )
    ]
    state = db.execute("SELECT calls FROM run_state WHERE run = ?", (run.id,)).fetchone()
    if state is not None:
        for call in decode_calls(state[0]).values():
            if call.attempts_failed or call.error:
                last = "the last error" if call.state != FINISHED else "an earlier attempt's error"
                history.append(
                    Attempt(
                        f"call {call.function_id} #{call.index} of {call.action or '?'}: "
                        f"{call.attempt + 1} attempt(s), {call.state}"
                        + (" (waiting to retry)" if call.state == RETRYING else "")
                        + (f"; {last}" if call.error else ""),
                        call.at,
                        f"{call.error_type}: {shown.cut(call.error)}" if call.error else "",
                    )
                )
    key = shown.value(row["f_key"], "key") if row["f_key"] is not None else run.key_id
    return LetterDoc(
        partition=row["f_partition"],
        position=row["f_position"],
        run=run,
        key=key,
        input=shown.value(row["f_input"], "input"),
        error_type=row["f_error_type"],
        error=shown.cut(row["f_error"]),
        when=row["f_at"],
        number=number,
        redriven=run.status == "redriven",
        history=history,
        command=redrive_command(journal, run, topic, bootstrap),
    )


def redrive_command(
    journal: jr.Journal, run: RunRow, topic: str | None, bootstrap: str | None
) -> str:
    parts = ["actionjournal", "runs", "redrive", *jr.store_args(journal.config)]
    if journal.namespace != "default":
        parts += ["--namespace", journal.namespace]
    parts += ["--operator-uid", run.operator_uid, "--key-id", run.key_id, "--seq", str(run.seq)]
    parts += ["--to-topic", topic or "TOPIC"]
    if bootstrap:
        parts += ["--to-bootstrap", bootstrap]
    return " ".join(jr.quote(p) for p in parts)


def dead_letter(
    db: sqlite3.Connection, partition: int, position: int
) -> tuple[DeadLetter, dict[str, Any]]:
    """The :class:`DeadLetter` of the failure at ``partition``/``position``, rebuilt from the
    journaled key and input (decoded without pickle: one that needs it is refused)."""
    row = _row(db, partition, position)
    run = run_row(row)
    values = ValueCodec(allow_pickle=False)
    if row["f_key"] is None:
        raise ToolError(
            f"the dead letter of key id {run.key_id} seq {run.seq} has no journaled key (it "
            "could not be encoded): re-drive it from the job's own dead-letter output"
        )
    try:
        key = values.decode(row["f_key"])
        value = values.decode(row["f_input"])
    except Exception as exc:
        raise ToolError(
            f"the dead letter of key id {run.key_id} seq {run.seq} holds a key or input that "
            f"cannot be decoded here without pickle ({type(exc).__name__}: {exc}): re-drive it "
            "from the job's own dead-letter output"
        ) from None
    number = db.execute(
        "SELECT COUNT(*) FROM failures WHERE run = ? AND final = 1 AND position <= ?",
        (run.id, position),
    ).fetchone()[0]
    letter = DeadLetter(
        key=key,
        seq=run.seq,
        input=value,
        error=row["f_error"],
        error_type=row["f_error_type"],
        when=row["f_at"],
        key_id=run.key_id,
        partition=partition,
        position=position,
        number=number,
    )
    target = {"key_id": run.key_id, "seq": run.seq, "partition": partition, "position": position}
    return letter, target


def produce(letter: DeadLetter, bootstrap: str, topic: str, timeout_s: float = 30.0) -> int:
    """Produce ``letter`` to ``topic`` and wait for its acknowledgement; returns its offset."""
    try:
        from confluent_kafka import KafkaException, Producer
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ToolError(
            f"re-driving to Kafka needs confluent-kafka ({exc}): pip install 'actionjournal[kafka]'"
        ) from None
    delivered: list[Any] = []

    def done(error: Any, message: Any) -> None:
        delivered.append(error if error is not None else message)

    try:
        producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"}
        )
        producer.produce(
            topic,
            letter.to_json().encode(),
            letter.key_id.encode(),
            headers={REDRIVE_HEADER: b"1"},
            on_delivery=done,
        )
        producer.flush(timeout_s)
    except KafkaException as exc:
        raise ToolError(f"re-drive to topic {topic!r} on {bootstrap} failed: {exc}") from None
    if not delivered:
        raise ToolError(
            f"re-drive to topic {topic!r} on {bootstrap}: no acknowledgement within "
            f"{timeout_s:.0f} s (is the broker up and the topic there?); the dead letter may "
            "or may not have been produced: check the topic before trying again"
        )
    result = delivered[0]
    if not hasattr(result, "offset"):
        raise ToolError(
            f"re-drive to topic {topic!r} on {bootstrap} failed: {result}; nothing was produced"
        )
    return int(result.offset())
