"""What ``journal inspect`` and ``journal keys`` show, as documents (``--json`` prints them).

Positions are half-open ranges everywhere: ``[low, high)`` holds ``low`` .. ``high - 1``.
Times are epoch seconds.
"""

from __future__ import annotations

from typing import Any

import msgspec

from actionjournal.tools.reading import Unreadable


class StoreDoc(msgspec.Struct):
    backend: str
    name: str
    uid: str


class CallDoc(msgspec.Struct):
    index: int
    status: str
    function_id: str
    durable_id: str | None
    call_id: str
    attempt: int
    started_at: float | None
    finished_at: float | None
    duration_s: float | None
    reconciled: bool
    bytes: int
    outcome: dict[str, Any] | None
    """``{"value": preview, "value_bytes": n}`` or ``{"error": {"type", "message"}}``."""


class SentDoc(msgspec.Struct):
    event_id: str
    type: str


class ActionDoc(msgspec.Struct):
    action_id: str
    action: str | None
    status: str
    started_at: float | None
    completed_at: float | None
    outputs: int
    memory_ops: int
    records: int
    bytes: int
    calls: list[CallDoc]
    trigger_event_id: str | None = None
    """Lineage: the event the action ran on (None: journaled before lineage was kept)."""
    sent: list[SentDoc] = msgspec.field(default_factory=list)
    """The events it sent (each one's upstream: ``trigger_event_id`` and this action)."""


class RunDoc(msgspec.Struct):
    key_id: str
    operator_uid: str
    epoch: int
    seq: int
    partition: int
    status: str
    started_at: float | None
    completed_at: float | None
    duration_s: float | None
    records: int
    bytes: int
    first_position: int
    end_position: int
    """The run's records lie in ``[first_position, end_position)``."""
    actions: list[ActionDoc]


class ControlDoc(msgspec.Struct, omit_defaults=True):
    type: str
    position: int
    at: float
    text: str
    partition: int | None = None
    boundary: int | None = None
    old_journal: str | None = None
    old_epoch: int | None = None


class KeyDoc(msgspec.Struct):
    store: StoreDoc
    namespace: str
    key_id: str
    partition: int
    operator_uids: list[str]
    runs_total: int
    """Runs of the key (of the selected operator); ``runs`` holds those shown."""
    records: int
    bytes: int
    runs: list[RunDoc]
    control: list[ControlDoc]
    unreadable: list[Unreadable]
    key: str | None = None
    """The key's Python literal: as ``--key`` matched it, or as a record of the key holds it
    (a dead letter's); ``None`` when neither says."""


class PartitionSummary(msgspec.Struct):
    partition: int
    low: int
    high: int
    """``[low, high)``: the positions the partition retains."""
    records: int
    bytes: int
    keys: int
    runs: int
    runs_finished: int
    runs_in_flight: int
    oldest_position: int | None
    oldest_record_at: float | None
    cleanup_boundaries: list[dict[str, Any]]


class SummaryTotals(msgspec.Struct):
    records: int = 0
    bytes: int = 0
    keys: int = 0
    runs: int = 0
    runs_finished: int = 0
    runs_in_flight: int = 0


class SummaryDoc(msgspec.Struct):
    store: StoreDoc
    namespace: str
    operator_uid: str | None
    operator_uids: dict[str, int]
    """Records per operator uid of the namespace (all of them, whatever ``operator_uid``)."""
    partitions: list[PartitionSummary]
    """Partitions holding records of the namespace (every partition with ``--all-partitions``)."""
    partitions_total: int
    totals: SummaryTotals
    oldest_record_at: float | None
    other_namespaces: dict[str, int]
    unreadable: list[Unreadable]


class KeyEntry(msgspec.Struct):
    key_id: str
    partition: int
    operator_uids: list[str]
    runs: int
    runs_in_flight: int
    records: int
    bytes: int
    first_at: float | None
    last_at: float | None
    key: str | None = None
    """The key's Python literal where a record of it holds the value (a dead letter's)."""


class KeysDoc(msgspec.Struct):
    store: StoreDoc
    namespace: str
    operator_uid: str | None
    keys_total: int
    """Keys with records (active since ``since``, when given); ``keys`` holds those shown,
    the most recently active first."""
    since: float | None
    keys: list[KeyEntry]
    unreadable: list[Unreadable]


def to_json(doc: msgspec.Struct) -> str:
    return msgspec.json.format(msgspec.json.encode(doc).decode(), indent=2)
