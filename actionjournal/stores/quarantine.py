"""Reading a key's records past the ones an operator quarantined.

A record of the key being recovered that cannot be read stops the key: it may hold what
a run did. ``actionjournal journal quarantine`` journals a :class:`Quarantined` record for
it, an audited decision, read with the key's records; recovery then skips the unreadable
record and puts the decision in its place, so the replay knows which runs lost something.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter, itemgetter

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import CorruptRecordError, RecordError, SignatureError
from actionjournal.durable.records import CONTROL_KEY, JournalRecord, Quarantined

Entries = list[tuple[int, bytes]]


@dataclass(frozen=True, slots=True)
class KeyRead:
    """Where a key's records are read from: for errors, and the command that skips one."""

    where: str  # e.g. "topic t partition 3"
    unit: str  # what a position is called there: "offset", "row"
    partition: int
    namespace: str
    operator_uid: str
    key_id: str
    options: Callable[[], str]  # the tools' options naming the store (see store_options)

    def at(self, position: int) -> str:
        return f"{self.where} {self.unit} {position}"

    def check(self, record: JournalRecord, position: int) -> None:
        """Refuse a (signed) record that is not what its place says: a record of another key
        filed under this one (by its message key or headers) would replay as this key's."""
        if (record.namespace, record.operator_uid) == (self.namespace, self.operator_uid) and (
            record.key_id in (self.key_id, CONTROL_KEY)
        ):
            return
        raise CorruptRecordError(
            f"the record is a {type(record).__name__} of namespace {record.namespace!r}, "
            f"operator {record.operator_uid!r}, key {record.key_id or '(control)'}, but it is "
            f"filed under namespace {self.namespace!r}, operator {self.operator_uid!r}, key "
            f"{self.key_id or '(control)'}: it was copied there, not written by actionjournal",
            self.at(position),
        )

    def fix(self, position: int) -> str:
        """The command that quarantines the record at ``position``."""
        return (
            f"actionjournal journal quarantine {self.options()} --namespace "
            f"{shlex.quote(self.namespace)} --operator-uid {shlex.quote(self.operator_uid)} "
            f"--partition {self.partition} --position {position}"
        )


def store_options(codec: RecordCodec, **options: str) -> str:
    """The tools' options naming a store (``store="kafka", topic="t"`` gives ``--store kafka
    --topic t``), with ``--signing-key-env`` when its journal is signed: the tools must sign
    what they journal there."""
    words = [f"--{name.replace('_', '-')} {shlex.quote(value)}" for name, value in options.items()]
    if codec.signed:
        words.append("--signing-key-env VAR")
    return " ".join(words)


def decode_past_quarantined(
    codec: RecordCodec, entries: Entries, read: KeyRead
) -> list[JournalRecord]:
    """Decode ``entries`` (one partition's, in position order) one by one.

    A record at a position that a :class:`Quarantined` among the entries names is replaced by
    that decision, in its place; a decision whose record is not among them is dropped. A
    record that cannot be read and is not quarantined raises, saying how to quarantine it.
    """
    decoded: list[JournalRecord | RecordError] = []
    quarantined: dict[int, Quarantined] = {}
    for position, data in entries:
        try:
            record = codec.decode(data, read.at(position))
            if codec.signed:
                read.check(record, position)
        except RecordError as exc:
            decoded.append(exc)
            continue
        decoded.append(record)
        if isinstance(record, Quarantined) and record.partition == read.partition:
            quarantined[record.position] = record
    records: list[JournalRecord] = []
    for (position, _), item in zip(entries, decoded, strict=True):
        decision = quarantined.get(position)
        if decision is not None:
            records.append(decision)
        elif isinstance(item, RecordError):
            raise stopped(item, read.key_id, read.fix(position))
        elif not isinstance(item, Quarantined):
            records.append(item)
    return records


_VAR = " (VAR: an environment variable holding journal.signing_key)"


def stopped(error: RecordError, key_id: str, command: str) -> RecordError:
    """``error`` of a record of ``key_id``, with what the operator can do about it."""
    if not isinstance(error, CorruptRecordError | SignatureError):
        return error  # a newer format, say: its own message says what to do
    what = f"key {key_id}" if key_id else "the control records of this partition"
    return type(error)(
        f"{error.message}. This record belongs to {what}, which stops here: it may hold what "
        "a run did. Repair or restore the record if you can; otherwise skip it with "
        f"`{command}`{_VAR if '--signing-key-env VAR' in command else ''} (an audited "
        "decision, journaled), and restart the job: the key then "
        "recovers without it, and durable calls whose start or outcome it may have held "
        "follow their on_unknown policy",
        error.where,
    )


_identity = attrgetter("namespace", "operator_uid", "key_id")
_data = itemgetter(1)


def decode_range(
    codec: RecordCodec, entries: Entries, start: int, end: int, read: KeyRead
) -> list[JournalRecord]:
    """Decode the entries (in position order) at positions ``[start, end)``, all in one
    :meth:`~RecordCodec.decode_many` call. A bad one, records an operator quarantined, or (in
    a signed journal) a record that is not what its place says it is, take the slow path
    of :mod:`actionjournal.stores.quarantine`, which skips the quarantined and says which
    other record stops the key, where."""
    if entries and not (start <= entries[0][0] and entries[-1][0] < end):
        entries = [entry for entry in entries if start <= entry[0] < end]
    try:
        records = codec.decode_many(list(map(_data, entries)), lambda i: read.at(entries[i][0]))
    except RecordError:
        return decode_past_quarantined(codec, entries, read)
    if Quarantined in set(map(type, records)):
        return decode_past_quarantined(codec, entries, read)
    # In a signed journal a record must also be the key's by what it says itself: a signed
    # record of another key filed under this one (message key, headers, key column) would
    # replay as this key's. Unsigned, anyone who can write can forge the record itself.
    if codec.signed and not set(map(_identity, records)) <= {
        (read.namespace, read.operator_uid, read.key_id),
        (read.namespace, read.operator_uid, CONTROL_KEY),
    }:
        return decode_past_quarantined(codec, entries, read)
    return records
