"""The Kafka store itself: appends, recovery reads, and the operator tools' operations.

What it guarantees and why is in the package docstring (:mod:`actionjournal.stores.kafka`).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from typing import Any

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import (
    DataLossError,
    JournalWriteError,
    RecordTooLargeError,
    StoreError,
)
from actionjournal.durable.records import CONTROL_KEY, JournalRecord, Marker, StoreIdentity
from actionjournal.durable.store import (
    Cleanable,
    Progress,
    ScanFilter,
    ScannedRecord,
    StoreObserver,
)
from actionjournal.stores.kafka.admin import delete_records, prepare_topic, topic_shape
from actionjournal.stores.kafka.config import KafkaStoreConfig
from actionjournal.stores.kafka.delivery import Delivery, Reports
from actionjournal.stores.kafka.errors import advice, describe, retrying
from actionjournal.stores.kafka.logs import client_logging
from actionjournal.stores.kafka.read import (
    Sorter,
    consume,
    foreign_text,
    gc_paused,
    headers,
    offset_of,
    scanned_batch,
)
from actionjournal.stores.quarantine import KeyRead, decode_range, store_options
from actionjournal.stores.recovery import (
    Found,
    RecentProbes,
    RecoveryCache,
    entries_cost,
    with_control,
)
from actionjournal.stores.seen import SeenKeys

__all__ = ["KafkaStore", "KafkaStoreConfig"]

log = logging.getLogger("actionjournal.stores.kafka")

# Record batch header (61 bytes) plus one record's framing, generously: a record this much
# under the topic limit is never refused for size.
_FRAMING = 128
_PRODUCER_LIMIT = 1_000_000  # librdkafka's default message.max.bytes
_WARN_EVERY_S = 30.0
# Delivery reports arrive by message.timeout.ms at the latest; past this margin, stop waiting.
_REPORT_MARGIN_S = 5.0
# Foreign records remembered (warned about and counted once); past this, every read counts.
_REMEMBER_FOREIGN = 100_000
# Reads that begin within this many seconds of a partition's offsets query share it.
_WAVE_S = 1.0


class _Described:
    """``str()`` names a record and where it goes; built only when an error needs it."""

    __slots__ = ("partition", "record", "topic")

    def __init__(self, record: JournalRecord, topic: str, partition: int) -> None:
        self.record, self.topic, self.partition = record, topic, partition

    def __str__(self) -> str:
        r = self.record
        return (
            f"{type(r).__name__} of key {r.key_id} seq {r.seq} "
            f"(topic {self.topic} partition {self.partition})"
        )


_TOO_LARGE = (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE)


def _write_error(error: KafkaError) -> type[JournalWriteError]:
    """A record too large is refused every time: callers handle it apart from other errors."""
    return RecordTooLargeError if error.code() in _TOO_LARGE else JournalWriteError


class KafkaStore(Cleanable):
    """Journal in a Kafka topic. Thread-safe; one instance per process is enough."""

    max_record_bytes: int  # always known: the smallest of the topic's, producer's and ours

    def __init__(
        self,
        config: KafkaStoreConfig,
        codec: RecordCodec | None = None,
        *,
        observer: StoreObserver | None = None,
    ) -> None:
        self.config = config
        self.codec = codec or RecordCodec()
        self.observer = observer
        self.topic = config.topic
        common = {
            "bootstrap.servers": config.bootstrap_servers,
            "client.id": "actionjournal",
            **client_logging(),
            **config.client_config,
        }
        self._common = common
        topic_id, topic_limit = prepare_topic(common, config)
        self.identity = StoreIdentity("kafka", self.topic, topic_id)
        producer_limit = int(config.client_config.get("message.max.bytes", _PRODUCER_LIMIT))
        limits = {
            f"topic max.message.bytes={topic_limit}": topic_limit - _FRAMING,
            f"producer message.max.bytes={producer_limit}": producer_limit - _FRAMING,
        }
        if config.max_record_bytes is not None:
            limits[f"max_record_bytes={config.max_record_bytes}"] = config.max_record_bytes
        self._limit_source = min(limits, key=limits.__getitem__)
        self.max_record_bytes = limits[self._limit_source]
        self._fatal: KafkaError | None = None
        self._last_warning: dict[int, float] = {}
        producer_config: dict[str, Any] = {
            # A batch bigger than the topic accepts would fail every record in it.
            "batch.size": min(1_000_000, topic_limit),
            # No linger: a lone append is sent at once (p50 ~0.3 ms on a local broker vs
            # ~1.5 ms with linger.ms=1 and ~6 ms with 5), and concurrent appends still share
            # batches: librdkafka fills a partition's next request while earlier ones are in
            # flight. Measured: 64 appending threads reach the same rate with 0, 1 or 5 ms.
            "linger.ms": 0,
            **common,
            "enable.idempotence": True,
            "acks": "all",
            "message.timeout.ms": int(config.delivery_timeout_s * 1000),
            "error_cb": self._on_client_error,
        }
        self._producer = Producer(producer_config)
        self._consumer = Consumer(
            {
                **common,
                "group.id": f"actionjournal-reader-{self.topic}",  # required; never joined
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "error",
                # A fetch parked at the end of a partition delays the next read's assign by up
                # to this (measured: a median 4-17 ms at 20, 2-4 ms at 1). Reads stop at an end
                # offset already known, so a fetch never has new records to wait for.
                "fetch.wait.max.ms": 1,
            }
        )
        self._closed = False
        self._reports = Reports(self._producer)
        self._stop = threading.Event()
        self._poller = threading.Thread(
            target=self._poll_reports, name=f"actionjournal-kafka-{self.topic}", daemon=True
        )
        self._poller.start()
        self._read_lock = threading.Lock()
        self._windows = RecoveryCache(config.recovery_cache_bytes, control=True, cost=entries_cost)
        # Keys already read, by namespace/operator: read again, they need the current end
        # (in fixed memory: a key taken for read before is only read the slower way).
        self._served: dict[tuple[str, str], SeenKeys] = {}
        self._captured: RecentProbes[tuple[int, int]] = RecentProbes()  # see _offsets
        self._foreign: set[tuple[int, int]] = set()  # (partition, offset) of foreign records met
        log.info(
            "Kafka journal: topic %s (id %s, %d partitions) on %s",
            self.topic, topic_id, config.partitions, config.bootstrap_servers,
        )  # fmt: skip

    # -- appends --------------------------------------------------------------------------

    def partition_of(self, key_id: str) -> int:
        """Stable forever: changing it would move keys away from their journal."""
        digest = hashlib.blake2b(key_id.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") % self.config.partitions

    def append(self, record: JournalRecord, _partition: int | None = None) -> Marker:
        started = time.perf_counter()
        data = self.codec.encode(record)
        key = record.key_id.encode()
        head = headers(record.namespace, record.operator_uid)
        partition = self.partition_of(record.key_id) if _partition is None else _partition
        what = _Described(record, self.topic, partition)  # formatted only into errors
        if self._closed:
            raise JournalWriteError(f"cannot append {what}: the Kafka store was closed")
        if self._fatal is not None:
            raise JournalWriteError(
                f"cannot append {what}: the Kafka producer stopped after a fatal error "
                f"({self._fatal.name()}: {self._fatal.str()}); restart the job to get a new "
                "producer"
            )
        size = len(data) + len(key) + sum(len(name) + len(value) for name, value in head)
        if size > self.max_record_bytes:
            raise RecordTooLargeError(
                f"{what} is {size} bytes, over the limit of "
                f"{self.max_record_bytes} bytes ({self._limit_source}); the record is not "
                "kept (a durable call's result this large is journaled as the call's failure "
                "instead). Keep large data out of the journal, or raise the topic's "
                "max.message.bytes"
            )
        delivery = Delivery()
        deadline = time.monotonic() + self.config.delivery_timeout_s
        while True:
            try:
                self._producer.produce(
                    self.topic,
                    data,
                    key,
                    partition,
                    on_delivery=delivery,
                    headers=head,  # type: ignore[arg-type]  # a list of (str, bytes) is one
                )
                break
            except BufferError:  # local queue full: wait for deliveries to make room
                if time.monotonic() > deadline:
                    raise JournalWriteError(
                        f"{what} was not queued: the producer queue stayed full for "
                        f"{self.config.delivery_timeout_s:g} s (broker slow or unreachable); "
                        "the record is not kept"
                    ) from None
                time.sleep(0.005)
            except KafkaException as exc:
                raise _write_error(exc.args[0])(
                    f"{what} was refused by the Kafka client: {describe(exc.args[0])}; the "
                    f"record is not kept. {advice(exc.args[0], self.config)}"
                ) from exc
        if not self._reports.wait(delivery, self.config.delivery_timeout_s + _REPORT_MARGIN_S):
            raise JournalWriteError(
                f"{what}: no delivery report within {self.config.delivery_timeout_s:g} s; the "
                "record may or may not have reached the broker and counts as not written. "
                "Check that the brokers are reachable"
            )
        if delivery.error is not None:
            fate = (
                "it may or may not have reached the broker and counts as not written"
                if delivery.error.code() == KafkaError._MSG_TIMED_OUT
                else "the record counts as not written"
            )
            raise _write_error(delivery.error)(
                f"Kafka did not acknowledge {what}, {len(data)} bytes: "
                f"{describe(delivery.error)}; {fate}. {advice(delivery.error, self.config)}"
            )
        self.observe_append(len(data), started)
        return Marker(self.identity, record.epoch, partition, delivery.offset)

    def _poll_reports(self) -> None:
        while not self._stop.wait(0.1):
            self._reports.poll_if_idle()

    def _on_client_error(self, error: KafkaError) -> None:
        # Connection trouble is reported here as well as through the affected appends; a
        # broker that is down reports every reconnect attempt, so say it once in a while.
        if error.fatal():
            self._fatal = error
            log.error("Kafka producer fatal error: %s", describe(error))
            return
        now = time.monotonic()
        if now - self._last_warning.get(error.code(), -1e9) >= _WARN_EVERY_S:
            self._last_warning[error.code()] = now
            log.warning("Kafka client (topic %s): %s", self.topic, describe(error))

    # -- recovery -------------------------------------------------------------------------

    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        with gc_paused():
            return self._read_key(namespace, operator_uid, key_id, after)

    def _read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        partition = self.partition_of(key_id)
        with self._read_lock:
            served = self._served.setdefault((namespace, operator_uid), SeenKeys())
            again = key_id in served
            # A key asked for again may have appended since: it gets the current end.
            low, high = self._offsets(partition, 0.0 if again else _WAVE_S)
            if after is not None and after.position + 1 < low:
                raise DataLossError(
                    f"key {key_id} needs topic {self.topic} partition {partition} from offset "
                    f"{after.position + 1}, but the partition now starts at offset {low}: "
                    "records were deleted (retention or cleanup). Restore a newer checkpoint, "
                    "or restore with journal.upgrade='fresh' to start a new journal"
                )
            # Never raised to the earliest offset: if retention moved past ``start`` since
            # ``low`` was captured, the scan fails loudly instead of skipping the key's records.
            start = after.position + 1 if after is not None else low
            if start >= high:
                served.add(key_id)
                return []
            if self.config.recovery_cache_bytes == 0 or again:
                found = self._scan(partition, start, high, namespace, operator_uid)
                entries = with_control(found.get(key_id, []), found, key_id)
            else:

                def scan(start: int, end: int, earlier: bool) -> Found:
                    return self._scan(partition, start, end, namespace, operator_uid)

                entries = self._windows.read(
                    partition, namespace, operator_uid, key_id, start, high, scan, served
                )
            served.add(key_id)
        where = f"topic {self.topic} partition {partition}"
        read = KeyRead(
            where, "offset", partition, namespace, operator_uid, key_id, self.tool_options
        )
        return decode_range(self.codec, entries, start, high, read)

    def tool_options(self) -> str:
        return store_options(
            self.codec, store="kafka", bootstrap=self.config.bootstrap_servers, topic=self.topic
        )

    def earliest_position(self, key_id: str) -> int:
        with self._read_lock:
            return self._offsets(self.partition_of(key_id), _WAVE_S)[0]

    def _offsets(self, partition: int, max_age: float) -> tuple[int, int]:
        """The partition's first retained and end offsets, reused for up to ``max_age`` s.

        Keys recovering together (a recovery wave) share one broker query per partition
        instead of one each: see the module docstring for why the reuse is safe.
        """
        return self._captured.get(partition, max_age, lambda: self._watermarks(partition))

    # -- operator tools: inspect and cleanup ----------------------------------------------

    shared_deletes = True  # delete_records cuts a partition for every namespace at once

    @classmethod
    def open_existing(
        cls,
        config: KafkaStoreConfig,
        codec: RecordCodec | None = None,
        *,
        observer: StoreObserver | None = None,
        read_only: bool = False,
    ) -> KafkaStore:
        """Open the existing journal topic ``config`` names with whatever partition count it
        has; never creates it. For the operator tools, which are told a topic, not how it
        was configured (``read_only``: a promise the tools keep; the topic is not changed)."""
        settings = {
            "bootstrap.servers": config.bootstrap_servers,
            "client.id": "actionjournal-tools",
            **client_logging(),
            **config.client_config,
        }
        partitions, replicas = topic_shape(settings, config.topic, config.admin_timeout_s)
        update = {  # the topic as it is: nothing to refuse or warn about
            "partitions": partitions,
            "replication_factor": replicas,
            "min_insync_replicas": 1,
            "create_topic": False,
            "recovery_cache_bytes": 0,
        }
        return cls(config.model_copy(update=update), codec, observer=observer)

    def partitions(self) -> list[int]:
        return list(range(self.config.partitions))

    def position_range(self, partition: int) -> tuple[int, int]:
        with self._read_lock:
            return self._watermarks(partition)

    def scan_range(
        self, partition: int, start: int, end: int, wanted: ScanFilter, progress: Progress | None
    ) -> Iterator[ScannedRecord]:
        if start >= end:
            return
        # A consumer of its own: the caller may take its time between records.
        consumer = Consumer(
            {
                **self._common,
                "group.id": f"actionjournal-scan-{self.topic}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "error",
            }
        )
        place = f"topic {self.topic} partition {partition}"
        done = 0
        try:
            with closing(consume(consumer, self.config, partition, start, end)) as batches:
                for messages in batches:
                    yield from scanned_batch(messages, wanted, self.codec, place)
                    done = offset_of(messages[-1]) + 1 - start
                    if progress is not None:
                        progress(done, end - start)
            if progress is not None and done < end - start:
                progress(end - start, end - start)
        finally:
            consumer.close()

    def append_control(self, record: JournalRecord, partition: int) -> Marker:
        if record.key_id != CONTROL_KEY:
            raise ValueError("append_control takes control records (key id CONTROL_KEY) only")
        if not 0 <= partition < self.config.partitions:
            raise ValueError(f"topic {self.topic} has no partition {partition}")
        return self.append(record, _partition=partition)

    def delete_below(
        self,
        namespace: str,
        operator_uid: str,
        partition: int,
        position: int,
        progress: Progress | None = None,
    ) -> int | None:
        """``delete_records`` below ``position``: removes EVERY namespace's records there.

        Kafka cannot delete selectively; :attr:`shared_deletes` tells planners so. Returns
        how many offsets the low watermark moved by.
        """
        low, high = self.position_range(partition)
        if position > high:
            raise StoreError(
                f"refusing to delete topic {self.topic} partition {partition} below offset "
                f"{position}: the partition ends at {high}"
            )
        if position <= low:
            if progress is not None:
                progress(1, 1)
            return 0
        try:
            delete_records(self._common, self.config, partition, position)
        finally:
            with self._read_lock:
                self._captured.forget(partition)  # its first offset moved
        if progress is not None:
            progress(1, 1)
        return position - low

    def _watermarks(self, partition: int) -> tuple[int, int]:
        tp = TopicPartition(self.topic, partition)
        low, high = retrying(
            lambda timeout: self._consumer.get_watermark_offsets(tp, timeout, cached=False),
            f"reading the offsets of topic {self.topic} partition {partition}",
            self.config,
            refresh=lambda timeout: self._consumer.list_topics(self.topic, timeout),
        )
        return low, high

    def _scan(
        self, partition: int, start: int, end: int, namespace: str, operator_uid: str
    ) -> Found:
        """Offsets ``[start, end)`` of a partition: the entries of one namespace/uid, by key."""
        place = f"topic {self.topic} partition {partition}"
        sorter = Sorter(namespace, operator_uid, self.codec, place)
        with closing(consume(self._consumer, self.config, partition, start, end)) as batches:
            for messages in batches:
                sorter.add(messages)
        if sorter.foreign:
            self._skipped_foreign(partition, sorter.foreign)
        return sorter.found()

    def _skipped_foreign(self, partition: int, strangers: list[tuple[int, bytes | None]]) -> None:
        """Foreign records are skipped, never silently: a warning (once per record and store)
        and ``actionjournal_foreign_records_total``."""
        seen = self._foreign
        new = [(offset, data) for offset, data in strangers if (partition, offset) not in seen]
        if not new:
            return
        if len(seen) < _REMEMBER_FOREIGN:
            seen.update((partition, offset) for offset, _ in new)
        if self.observer is not None:
            self.observer.foreign(len(new))
        offset, data = new[0]
        log.warning(
            "topic %s partition %d: skipped %d foreign record%s (not written by actionjournal; "
            "the first at offset %d: %s); recovery reads past them. `actionjournal journal "
            "inspect` lists them; find out who writes to the journal topic",
            self.topic, partition, len(new), "" if len(new) == 1 else "s", offset,
            foreign_text(data),
        )  # fmt: skip

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Deliver what is queued (up to ``delivery_timeout_s``), then release the clients."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._poller.join()
        left = self._producer.flush(self.config.delivery_timeout_s)
        if left:
            log.error("Kafka journal closed with %d records not acknowledged", left)
            self._producer.purge()
            self._producer.poll(0)  # their appends raise JournalWriteError now
        self._producer.close()
        with self._read_lock:
            self._consumer.close()


"""The store's name before stores were named by backend: kept for users."""
