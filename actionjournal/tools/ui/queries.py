"""What the pages ask of the run index: runs by filter, newest first, a page at a time.

Filters arrive as text (a query string); each one that cannot be read is a
:class:`BadRequest` naming the parameter and what it takes, shown on the page and answered
with 400 by the API.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from actionjournal.durable.identity import key_id as make_key_id
from actionjournal.tools.journal.cli import KEY_TYPES
from actionjournal.tools.toolkit import UsageError, parse_time
from actionjournal.tools.ui.index import id_range
from actionjournal.tools.ui.tally import STATUSES

PAGE = 50
MAX_PAGE = 500
_HEX = re.compile(r"^[0-9a-f]{6,32}$")


class BadRequest(Exception):
    """Input the explorer cannot use: says which parameter and what it takes (HTTP 400)."""


class NotFound(Exception):
    """Nothing of that id or key in the journal (HTTP 404)."""


class RunRow(msgspec.Struct):
    """One run as the runs list shows it."""

    id: int
    operator_uid: str
    key_id: str
    epoch: int
    seq: int
    partition: int
    status: str
    first_at: float
    last_at: float
    ended_at: float | None
    duration_s: float | None
    actions: list[str]
    calls: int
    attempts: int
    records: int
    bytes: int
    error_type: str | None
    error: str | None
    dead_letters: int
    failures: int
    open_calls: int


def run_row(row: sqlite3.Row) -> RunRow:
    """A runs row (its other columns, when joined, are left out)."""
    data = dict(zip(row.keys(), row, strict=True))
    ended = data["ended_at"]
    data["duration_s"] = (ended - data["first_at"]) if ended is not None else None
    data["actions"] = [a for a in data["actions"].split(",") if a]
    return RunRow(**{name: data[name] for name in RunRow.__struct_fields__})


@dataclass(frozen=True)
class RunFilter:
    key: str = ""
    key_type: str = "str"
    key_id: str = ""
    status: str = ""
    action: str = ""
    since: str = ""
    until: str = ""
    error: str = ""
    q: str = ""
    cursor: str = ""
    limit: int = PAGE

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> RunFilter:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(params) - known)
        if unknown:
            raise BadRequest(
                f"unknown filter {unknown[0]!r}: the runs list takes {', '.join(sorted(known))}"
            )
        values = {
            name: params[name].strip() for name in known if name != "limit" and params.get(name)
        }
        try:
            limit = int(params.get("limit", PAGE))
        except ValueError:
            raise BadRequest(f"limit {params.get('limit')!r} is not a whole number") from None
        if not 1 <= limit <= MAX_PAGE:
            raise BadRequest(f"limit {limit}: give 1 to {MAX_PAGE}")
        found = cls(limit=limit, **values)
        found.check()
        return found

    def check(self) -> None:
        if self.status and self.status not in STATUSES:
            raise BadRequest(f"status {self.status!r}: one of {', '.join(STATUSES)}")
        if self.key_type not in KEY_TYPES:
            raise BadRequest(f"key_type {self.key_type!r}: one of {', '.join(KEY_TYPES)}")
        if self.key_id and not re.match(r"^[0-9a-f]{1,32}$", self.key_id.lower()):
            raise BadRequest(f"key_id {self.key_id!r}: up to 32 hex digits (a prefix is enough)")
        if self.cursor and not re.match(r"^-?[0-9.e+-]+:[0-9]+$", self.cursor):
            raise BadRequest(f"cursor {self.cursor!r} is not one this explorer gave out")
        for name in ("since", "until"):
            if getattr(self, name):
                self.time(name)

    def time(self, name: str) -> float | None:
        text = getattr(self, name)
        if not text:
            return None
        try:
            return parse_time(text, name, now=float("inf"))
        except UsageError as exc:
            raise BadRequest(str(exc)) from None

    def key_ids(self) -> list[str]:
        """The key id of ``key`` read as ``key_type`` (ids are digests of typed keys)."""
        try:
            value = KEY_TYPES[self.key_type](self.key)
            return [make_key_id(value)]
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
            raise BadRequest(f"key {self.key!r} is not a valid {self.key_type}: {exc}") from None

    def params(self, **changes: Any) -> dict[str, str]:
        """The filter as query parameters (empty ones left out)."""
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        values.update(changes)
        return {k: str(v) for k, v in values.items() if v not in ("", None, PAGE, "str")}


class RunsPage(msgspec.Struct):
    runs: list[RunRow]
    next_cursor: str | None
    """Pass as ``cursor`` for the next (older) page; ``None``: this is the last page."""
    matched_by: str
    """What the search ``q`` matched: ``call id``, ``event id``, ``key id``, ``key``, or ``""``."""


def search_runs(db: sqlite3.Connection, q: str) -> tuple[list[int] | None, str]:
    """Run ids that ``q`` names (a call or event id or prefix), else None and the key ids
    to try: a key id prefix, or ``q`` as a string key."""
    text = q.strip()
    low = text.lower()
    if _HEX.match(low):
        bounds = id_range(low)
        if bounds is not None:
            runs = [
                r[0]
                for r in db.execute(
                    "SELECT DISTINCT run FROM ids WHERE h BETWEEN ? AND ? LIMIT 1000", bounds
                )
            ]
            if runs:
                return runs, "call or event id"
    return None, ""


def runs_page(db: sqlite3.Connection, f: RunFilter) -> RunsPage:
    where: list[str] = []
    args: list[Any] = []
    matched = ""
    if f.q:
        named, matched = search_runs(db, f.q)
        if named is not None:
            where.append(f"id IN ({','.join('?' * len(named))})")
            args += named
        else:
            low = f.q.strip().lower()
            ids = [make_key_id(f.q.strip())]
            if f.q.strip().lstrip("-").isdigit():
                ids.append(make_key_id(int(f.q.strip())))
            clause = f"key_id IN ({','.join('?' * len(ids))})"
            if re.match(r"^[0-9a-f]{4,32}$", low):
                clause = f"({clause} OR (key_id >= ? AND key_id < ?))"
                ids += [low, low + "g"]
            where.append(clause)
            args += ids
            matched = "key or key id"
    if f.key:
        ids = f.key_ids()
        where.append(f"key_id IN ({','.join('?' * len(ids))})")
        args += ids
    if f.key_id:
        low = f.key_id.lower()
        where.append("key_id >= ? AND key_id < ?")
        args += [low, low + "g"]
    if f.status:
        where.append("status = ?")
        args.append(f.status)
    if f.action:
        where.append("actions LIKE ? ESCAPE '\\'")
        args.append("%," + _like(f.action) + ",%")
    since, until = f.time("since"), f.time("until")
    if since is not None:
        where.append("last_at >= ?")
        args.append(since)
    if until is not None:
        where.append("first_at <= ?")
        args.append(until)
    if f.error:
        where.append("(error LIKE ? ESCAPE '\\' OR error_type LIKE ? ESCAPE '\\')")
        args += ["%" + _like(f.error) + "%"] * 2
    if f.cursor:
        at, _, last_id = f.cursor.partition(":")
        where.append("(first_at, id) < (?, ?)")
        args += [float(at), int(last_id)]
    sql = "SELECT * FROM runs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY first_at DESC, id DESC LIMIT ?"
    args.append(f.limit + 1)
    rows = db.execute(sql, args).fetchall()
    more = len(rows) > f.limit
    runs = [run_row(r) for r in rows[: f.limit]]
    cursor = f"{runs[-1].first_at!r}:{runs[-1].id}" if more and runs else None
    return RunsPage(runs, cursor, matched)


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def run_by_id(db: sqlite3.Connection, run_id: int) -> RunRow:
    row = db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise NotFound(
            f"no run {run_id} in the index (the runs list links each run; an index rebuilt "
            "since numbers runs anew)"
        )
    return run_row(row)


def run_state(db: sqlite3.Connection, run_id: int) -> tuple[bytes, bytes]:
    row = db.execute("SELECT positions, calls FROM run_state WHERE run = ?", (run_id,)).fetchone()
    if row is None:
        raise NotFound(f"no records of run {run_id} in the index")
    return row[0], row[1]


def key_runs(db: sqlite3.Connection, key_id: str, limit: int = 100) -> list[RunRow]:
    rows = db.execute(
        "SELECT * FROM runs WHERE key_id = ? ORDER BY seq DESC, id DESC LIMIT ?", (key_id, limit)
    ).fetchall()
    return [run_row(r) for r in rows]


def status_counts(db: sqlite3.Connection) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for status in STATUSES:
        (n,) = db.execute("SELECT COUNT(*) FROM runs WHERE status = ?", (status,)).fetchone()
        counts[status] = n
    return counts


def action_names(db: sqlite3.Connection) -> list[str]:
    return [r[0] for r in db.execute("SELECT DISTINCT action FROM actions ORDER BY action")]
