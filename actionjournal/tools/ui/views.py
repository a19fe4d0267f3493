"""What each page shows, as documents: the API returns them as JSON, the pages render them.

One function per page; each takes the explorer and the request's parameters and raises
:class:`~.queries.BadRequest` or :class:`~.queries.NotFound` for input it cannot use.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import Any

import msgspec

from actionjournal.tools.ui import journal as jr
from actionjournal.tools.ui import queries
from actionjournal.tools.ui.deadletters import LetterDoc, letters
from actionjournal.tools.ui.explorer import Explorer
from actionjournal.tools.ui.queries import BadRequest, RunFilter, RunRow, RunsPage
from actionjournal.tools.ui.tally import OPEN, RETRYING, STATUSES, decode_calls
from actionjournal.tools.ui.timeline import Timeline, build_timeline


class RunsDoc(msgspec.Struct):
    filter: dict[str, str]
    page: RunsPage
    statuses: list[str]
    actions: list[str]


def runs(explorer: Explorer, params: Mapping[str, str]) -> RunsDoc:
    f = RunFilter.parse(params)
    db = explorer.readers.get()
    page = queries.runs_page(db, f)
    return RunsDoc(f.params(cursor=""), page, list(STATUSES), queries.action_names(db))


class RunDoc(msgspec.Struct):
    timeline: Timeline
    key_runs: list[RunRow]


def run(explorer: Explorer, run_id: str) -> RunDoc:
    number = _int(run_id, "run id")
    db = explorer.readers.get()
    row = queries.run_by_id(db, number)
    positions_blob, _ = queries.run_state(db, number)
    positions = array("q")
    positions.frombytes(positions_blob)
    with explorer.store_lock:
        items, unreadable = jr.at_positions(
            explorer.store, row.partition, list(positions), explorer.journal
        )
    items = [i for i in items if i.record is None or i.record.key_id == row.key_id]
    timeline = build_timeline(row, items, unreadable, explorer.shown)
    if len(items) + len(unreadable) < len(positions):
        timeline.unreadable.append(
            f"{len(positions) - len(items) - len(unreadable)} of the run's {len(positions)} "
            "records are no longer in the journal (deleted by cleanup or the backend's "
            "retention): the timeline shows what is left"
        )
    return RunDoc(timeline, queries.key_runs(db, row.key_id))


class OpenCall(msgspec.Struct):
    run: RunRow
    action: str
    index: int
    function_id: str
    call_id: str
    state: str
    attempt: int
    since: float | None
    retry_at: float | None
    error: str
    on_restart: str  # what a restart now would do with it


class KeyPending(msgspec.Struct):
    key_id: str
    runs: int
    oldest_at: float
    seqs: list[int]


class InFlightDoc(msgspec.Struct):
    started: list[OpenCall]
    retrying: list[OpenCall]
    keys: list[KeyPending]
    runs_in_flight: int


def in_flight(explorer: Explorer, limit: int = 500) -> InFlightDoc:
    db = explorer.readers.get()
    rows = db.execute(
        "SELECT runs.*, run_state.calls AS state FROM runs JOIN run_state ON run_state.run = "
        "runs.id WHERE status IN ('in_flight', 'failed') ORDER BY first_at, id LIMIT ?",
        (limit,),
    ).fetchall()
    started: list[OpenCall] = []
    retrying: list[OpenCall] = []
    keys: dict[str, KeyPending] = {}
    for row in rows:
        run_doc = queries.run_row(row)
        pending = keys.get(run_doc.key_id)
        if pending is None:
            pending = keys[run_doc.key_id] = KeyPending(run_doc.key_id, 0, run_doc.first_at, [])
        pending.runs += 1
        pending.seqs.append(run_doc.seq)
        for call in decode_calls(row["state"]).values():
            if call.state not in OPEN:
                continue
            if call.state == RETRYING:
                then = "waits for its retry_at, then runs its next attempt"
            else:
                then = (
                    "its outcome is unknown: a restart asks its reconciler, or applies its "
                    "on_unknown policy (it was journaled as started, so the policy is not "
                    "'rerun' unless it has a reconciler)"
                )
            doc = OpenCall(
                run=run_doc,
                action=call.action,
                index=call.index,
                function_id=call.function_id,
                call_id=call.call_id,
                state=call.state,
                attempt=call.attempt + 1,
                since=call.started_at if call.state != RETRYING else call.at,
                retry_at=call.retry_at,
                error=f"{call.error_type}: {explorer.shown.cut(call.error)}" if call.error else "",
                on_restart=then,
            )
            (retrying if call.state == RETRYING else started).append(doc)
    (total,) = db.execute(
        "SELECT COUNT(*) FROM runs WHERE status IN ('in_flight', 'failed')"
    ).fetchone()
    started.sort(key=lambda c: c.since or 0.0)
    retrying.sort(key=lambda c: c.retry_at or 0.0)
    ordered = sorted(keys.values(), key=lambda k: k.oldest_at)
    return InFlightDoc(started, retrying, ordered, total)


class LettersDoc(msgspec.Struct):
    letters: list[LetterDoc]
    redrive_topic: str | None
    can_redrive: bool
    why_not: str


def dead_letters(explorer: Explorer, params: Mapping[str, str]) -> LettersDoc:
    unknown = set(params) - {"all"}
    if unknown:
        raise BadRequest(f"unknown parameter {sorted(unknown)[0]!r}: the dead letters take all=1")
    settings = explorer.settings
    found = letters(
        explorer.readers.get(),
        explorer.journal,
        explorer.shown,
        settings.redrive_topic,
        settings.redrive_bootstrap,
        include_redriven=params.get("all") in ("1", "true", "yes"),
    )
    why = redrive_refusal(explorer)
    return LettersDoc(found, settings.redrive_topic, not why, why)


def redrive_refusal(explorer: Explorer) -> str:
    """Why this explorer cannot re-drive (``""``: it can)."""
    settings = explorer.settings
    if not settings.allow_actions:
        return "read-only: start with --allow-actions to re-drive from here"
    if not settings.redrive_topic:
        return "no --redrive-topic: the explorer does not know the job's input topic"
    if not settings.redrive_bootstrap:
        return "no --redrive-bootstrap and the journal is not on Kafka: where is the topic?"
    return ""


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f"{what} {text!r} is not a number") from None


def as_data(doc: Any) -> Any:
    """A document as plain JSON data (what the API sends)."""
    return msgspec.to_builtins(doc)
