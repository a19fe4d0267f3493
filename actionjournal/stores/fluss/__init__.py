"""The Fluss journal store (:class:`FlussStore`): one log table, all records of a key in one bucket.

Settings: :class:`~actionjournal.stores.fluss.config.FlussStoreConfig`; see docs/fluss.md.

The table has four columns, ``key_id`` (the bucket key), ``namespace``, ``operator_uid``
and ``record`` (the encoded journal record). Do not point the store at a table it did not
create: an existing table must have exactly this schema and bucket key.

Guarantees and why they hold:

* **An append returns only once acknowledged** (``acks=all``, idempotent writer, so retries
  never duplicate or reorder). Every client error, and no
  acknowledgement within ``ack_timeout_s`` (the client itself retries forever while a
  tablet server is down), raises :class:`JournalWriteError` naming table, bucket and key.
  After a failure the store writes through a freshly opened table handle: the old one can
  stay stuck after a tablet server restart (pyfluss 1.0 then never completes its acks).
* **Markers carry bucket and offset although the client reports neither.** The bucket is
  computed here with Fluss's own bucketing function (the one the client uses for the
  ``key_id`` bucket key; see :func:`fluss_bucket`), so a marker names its bucket without a
  round trip. Only one marker per run is kept (keyed state takes the one of the run's last
  record, ``RunCompleted``), so only that record pays for an exact offset: the bucket's high
  watermark minus one, read right after the acknowledgement with a one-record limit scan
  (one round trip to the bucket leader; ``list_offsets`` costs a metadata refresh on the
  coordinator on top). It is at least the record's own offset and below the offset of the
  key's next record, since a key's runs append one after the other; concurrent
  acknowledgements of one bucket share one probe. Every other record (calls, actions, control
  records: most appends) returns at once with a bound below it instead: the bucket's end as
  this store last saw it before sending the record, minus one (forgotten after a failed
  append, as the server may have lost records). Nothing keeps such a marker; one kept would
  make recovery re-read records of runs the state already reflects, which replay skips.
* **Recreated tables are detected.** The store identity carries the Fluss table id, so a
  marker taken before the table was dropped and recreated is refused.
* **Lost acknowledged records are detected where possible.** A marker at or past the
  bucket's current end means records it covered are gone (a tablet server crash with
  replication factor 1 loses recent acknowledged appends, see docs/fluss.md); the read
  raises :class:`DataLossError` instead of treating later records at reused offsets as new.
* **Recovery reads each bucket range once.** ``read_key`` reads a key's bucket from its
  marker to the bucket's end and keeps the records of the same namespace/operator for other
  keys of that bucket (filtered in Arrow, never decoded for other namespaces), so recovering
  many keys costs one pass per bucket. The end is read once per recovery wave: reads that
  begin within ``_WAVE_S`` (1 s) of a bucket's end probe reuse it, as the Kafka store does
  (see its docstring for why): a key's records are appended only by the subtask that owns
  it, after its recovery, so an end captured before its first read misses none of them; a
  key read again by the same store gets a fresh end.
* **Sync and thread-safe over an asyncio client.** pyfluss is asyncio-only: the store runs
  a private event loop in a background thread and every call hops onto it, except the
  appends that need no probe: they wait for their acknowledgement on an event loop of the
  calling thread (kept per thread), like a plain pyfluss caller. Reads use their own
  connection: a fetch parked at the end of a bucket would delay appends on a shared one.

The package, one job per module: ``store`` (the store: appends and their markers, recovery
reads, opening and closing), ``bucketing`` (Fluss's bucket of a key), ``loop`` (the event
loops pyfluss runs on), ``table`` (the journal table), ``read`` (rows from Arrow batches),
``errors`` (what an error means) and ``config`` (the settings, importable without pyfluss,
as is this package).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.stores.fluss.bucketing import (
        fluss_bucket as fluss_bucket,
    )
    from actionjournal.stores.fluss.config import (
        FlussStoreConfig as FlussStoreConfig,
    )
    from actionjournal.stores.fluss.store import (
        FlussStore as FlussStore,
    )

_LAZY = {
    "actionjournal.stores.fluss.bucketing": ("fluss_bucket",),
    "actionjournal.stores.fluss.config": ("FlussStoreConfig",),
    "actionjournal.stores.fluss.store": ("FlussStore",),
}
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
