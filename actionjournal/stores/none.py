"""A store that journals nothing: durability off.

Use it where a journal is not wanted at all (a quick local run, a test of the
agent logic), or to restore state whose journal is gone without upgrade mode.
Every append is dropped and every read is empty, so after a failure every
action and durable call runs again. Recovery markers in restored state are
ignored: there is no journal to validate them against.

Its markers name the backend ``none``. Restoring state written with it
against a real store later is refused like any other change of journal
(``MarkerMismatchError``); restore in upgrade mode (docs/upgrade.md).
"""

from __future__ import annotations

import logging
import threading

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.records import JournalRecord, Marker, StoreIdentity
from actionjournal.durable.store import Store, StoreObserver
from actionjournal.stores.config import NoStoreConfig

__all__ = ["NoStore"]

log = logging.getLogger(__name__)

_warned = False
_warn_lock = threading.Lock()


class NoStore(Store):
    """Journals nothing; logs one warning per process that durability is off."""

    durable = False

    def __init__(
        self,
        config: NoStoreConfig | None = None,
        codec: RecordCodec | None = None,
        *,
        observer: StoreObserver | None = None,
    ) -> None:
        self.config = config or NoStoreConfig()
        self.codec = codec or RecordCodec()
        self.observer = observer
        self.identity = StoreIdentity("none", "none", "none")
        _warn_once()

    def append(self, record: JournalRecord) -> Marker:
        return self.marker(record.key_id, 0, record.epoch)

    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        return []

    def earliest_position(self, key_id: str) -> int:
        return 0


def _warn_once() -> None:
    global _warned
    with _warn_lock:
        if _warned:
            return
        _warned = True
    log.warning(
        "action state store 'none': nothing is journaled, durability is off. After a failure "
        "every action and durable call runs again, including calls that already had effects; "
        "configure a store (sqlite, kafka, fluss) to journal them"
    )
