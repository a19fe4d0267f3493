"""The Kafka action state store: one topic, all records of a key in one partition.

Settings (:class:`~actionjournal.stores.kafka_config.KafkaStoreConfig`) and their
Flink Agents counterparts, for users moving a job over:

=======================  ==========================================  ==============
KafkaStoreConfig         Flink Agents option                         default
=======================  ==========================================  ==============
``bootstrap_servers``    ``kafkaBootstrapServers``                   (required)
``topic``                ``kafkaActionStateTopic``                   ``actionjournal``
``partitions``           ``kafkaActionStateTopicNumPartitions``      64
``replication_factor``   ``kafkaActionStateTopicReplicationFactor``  1
``client_config``        (Kafka client properties)                   ``{}``
=======================  ==========================================  ==============

Do not point this store at a Flink Agents topic: the record formats differ. Use a
new topic, or the same name after deleting the old one (recovery then refuses
markers of the old topic, whose topic id differs).

Guarantees and why they hold:

* **An append returns only once acknowledged by all in-sync replicas**
  (``acks=all``, idempotent producer, so retries never duplicate or reorder).
  Every delivery error (record too large, topic gone, broker unreachable until
  ``delivery_timeout_s``) raises :class:`JournalWriteError`; nothing is dropped
  silently.
* **Group commit.** Appends from many threads are queued in librdkafka; records
  of a partition queued while its earlier requests are in flight go out together
  in its next request. Each caller waits only for its own delivery report, which
  a background thread dispatches; nothing flushes per record.
* **What bounds many small concurrent appends** is not this store: librdkafka
  sends one produce request per partition (librdkafka issue #1700) and a broker
  serves a connection's requests one at a time, so with concurrent runs' keys
  spread over many partitions each request carries one or two records and the
  rate is the broker's request rate. Figures and the experiments behind them are
  in docs/kafka.md.
* **A key's records stay in one partition.** We pick the partition ourselves
  (BLAKE2b of the key id modulo ``partitions``), so a marker's partition is known
  without a producer, and refuse an existing topic with another partition count:
  keys would silently move partitions and recovery would read the wrong one.
* **Recreated topics are detected.** The store identity carries the Kafka topic
  id, so a marker taken before the topic was deleted and recreated is refused.
* **Recovery reads each partition range once.** ``read_key`` reads a key's
  partition from its marker to the partition's end offset and keeps the records
  of the same namespace/operator for other keys of that partition, so recovering
  many keys costs one pass per partition. Other namespaces are recognised from the
  record header alone and never kept.
* **A recovery wave asks for a partition's offsets once.** After a restart many
  keys recover at once; one broker round trip per key for its partition's first
  and end offsets cost more than reading their records. Reads (and
  ``earliest_position``) that begin within ``_WAVE_S`` (1 s) of a partition's
  offsets query reuse its answer. Why that is safe:

  - *End offset.* A key's records are appended only by the subtask that owns it,
    after its recovery, so an end captured before a key's first read misses none
    of its records. A key read a second time by the same store may have appended
    since: it always gets the current end.
  - *First offset* (a marker below it is data loss for a pending run). A read
    never starts below its marker, so retention that moved past the marker after
    the offset was captured makes the fetch fail ("Offset out of range", a
    ``StoreError``; the restarted job sees the new offset and decides as usual)
    instead of skipping records; records read into the recovery cache before
    their deletion were real and are handed out. The cost: if retention moves
    within that second, a key that would have read what is left (idle, or
    without a marker) fails the same way.
  - Records written by someone else during the wave (a cleanup boundary, a
    zombie task of the previous attempt) can be missed, as they could a moment
    after any captured end.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from actionjournal.durable.codec import FLAG_SIGNED, MAGIC, RecordCodec
from actionjournal.durable.errors import (
    DataLossError,
    JournalWriteError,
    StoreError,
)
from actionjournal.durable.records import CONTROL_KEY, JournalRecord, Marker, StoreIdentity
from actionjournal.durable.stats import note_append
from actionjournal.stores.base import (
    ActionStateStore,
    Progress,
    RecentProbes,
    ScannedRecord,
    decode_range,
)
from actionjournal.stores.kafka_config import KafkaStoreConfig

__all__ = ["KafkaActionStateStore", "KafkaStoreConfig"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# Kafka's broker default for max.message.bytes; used when the topic's config cannot be read.
_DEFAULT_TOPIC_LIMIT = 1048588
# Record batch header (61 bytes) plus one record's framing, generously: a record this much
# under the topic limit is never refused for size.
_FRAMING = 128
_HEADER = 5  # magic, version, type, flags
_MAC = 32
_READ_BATCH = 10_000
_ENTRY_OVERHEAD = 100  # rough Python cost of one cached (offset, bytes) pair
# Seen for a few hundred ms after a topic is created or a broker restarts; worth a retry.
_TRANSIENT = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
}
_WARN_EVERY_S = 30.0
_client_log = logging.getLogger(f"{__name__}.librdkafka")
# Delivery reports arrive by message.timeout.ms at the latest; past this margin, stop waiting.
_REPORT_MARGIN_S = 5.0
# Reads that begin within this many seconds of a partition's offsets query share it.
_WAVE_S = 1.0


class _Head(msgspec.Struct, array_like=True):
    """The identity prefix every record starts with (tag, namespace, uid, epoch, key id).

    Decoding only this lets recovery skip other namespaces without decoding or
    keeping their records; trailing fields are ignored by msgspec.
    """

    tag: str
    namespace: str
    operator_uid: str
    epoch: int
    key_id: str


_head_decoder = msgspec.msgpack.Decoder(_Head)


class _Delivery:
    """One append's delivery report, set by whichever thread polls the producer."""

    __slots__ = ("_gate", "done", "error", "offset")

    def __init__(self) -> None:
        # Held until the report arrives or the append is promoted to poll for everyone. A
        # bare lock: a threading.Event (a Condition in Python) cost 2 us to create alone.
        self._gate = threading.Lock()
        self._gate.acquire()
        self.done = False
        self.error: KafkaError | None = None
        self.offset = -1

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        self.error = error
        if error is None:
            self.offset = message.offset()
        self.done = True
        self.wake()

    def wake(self) -> None:
        with contextlib.suppress(RuntimeError):  # already woken and not asleep again yet
            self._gate.release()

    def sleep(self, timeout: float) -> None:
        """Until :meth:`wake` (also one that came before) or ``timeout`` seconds."""
        self._gate.acquire(timeout=timeout)


class _Reports:
    """Leader/followers dispatch of delivery reports.

    One waiting append at a time polls the producer (the leader) and so serves
    the reports of everyone; the others sleep on their own event. A lone append
    is therefore woken by its own poll, without a hand-off between threads (the
    hand-off cost about a quarter of a local acks=all round trip). When the
    leader's report is in, it promotes a waiting append to poll in its place.
    """

    def __init__(self, producer: Producer) -> None:
        self._producer = producer
        self._lock = threading.Lock()
        self._leader: _Delivery | None = None
        self._waiting: set[_Delivery] = set()

    def wait(self, delivery: _Delivery, timeout: float) -> bool:
        """Block until ``delivery`` has its report; False after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                with self._lock:
                    if delivery.done:
                        return True
                    if remaining <= 0:
                        return False
                    leading = self._leader is None
                    if leading:
                        self._leader = delivery
                    else:
                        self._waiting.add(delivery)
                if not leading:
                    delivery.sleep(remaining)  # then the loop re-checks done / leadership
                    continue
                try:
                    while not delivery.done and time.monotonic() < deadline:
                        self._producer.poll(min(0.1, max(0.0, deadline - time.monotonic())))
                finally:
                    with self._lock:
                        self._leader = None
                        self._promote()
        finally:
            with self._lock:
                self._waiting.discard(delivery)
                self._promote()

    def poll_if_idle(self) -> None:
        """Serve client errors and logs while nobody appends."""
        with self._lock:
            if self._leader is not None or self._waiting:
                return
            self._leader = idle = _Delivery()
        try:
            self._producer.poll(0)
        finally:
            with self._lock:
                if self._leader is idle:
                    self._leader = None
                self._promote()

    def _promote(self) -> None:
        # Called with the lock held whenever a thread stops waiting: no follower may be
        # left sleeping while nobody polls.
        if self._leader is None:
            for waiting in self._waiting:
                if not waiting.done:
                    waiting.wake()
                    return


@dataclass
class _Span:
    """Records of one namespace/operator in one partition, offsets ``[start, end)``, by key.

    A key's entries are handed out once and then dropped, so memory holds only keys
    that have not recovered yet.
    """

    start: int
    end: int
    keys: dict[str, list[tuple[int, bytes]]] = field(default_factory=dict)
    size: int = 0

    def add(
        self, found: dict[str, list[tuple[int, bytes]]], before: bool, served: set[str]
    ) -> None:
        """Merge a scan's entries, leaving out keys already handed out (``served``)."""
        for key_id, entries in found.items():
            if key_id in served:
                continue
            self.size += _cost(entries)
            current = self.keys.get(key_id)
            if current is None:
                self.keys[key_id] = entries
            else:
                self.keys[key_id] = entries + current if before else current + entries

    def take(self, key_id: str) -> list[tuple[int, bytes]]:
        if key_id == CONTROL_KEY:  # control records are for every key: never handed out
            return []
        entries = self.keys.pop(key_id, [])
        self.size -= _cost(entries)
        return entries


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


def _with_control(
    entries: list[tuple[int, bytes]], found: dict[str, list[tuple[int, bytes]]], key_id: str
) -> list[tuple[int, bytes]]:
    """A key's entries with its partition's control records among them, in offset order."""
    control = found.get(CONTROL_KEY)
    if not control:
        return entries
    if key_id == CONTROL_KEY:
        return list(control)
    return sorted(entries + control, key=lambda entry: entry[0])


def _cost(entries: list[tuple[int, bytes]]) -> int:
    return sum([len(data) for _, data in entries]) + _ENTRY_OVERHEAD * len(entries)


class KafkaActionStateStore(ActionStateStore):
    """Journal in a Kafka topic. Thread-safe; one instance per process is enough."""

    def __init__(self, config: KafkaStoreConfig, codec: RecordCodec | None = None) -> None:
        self.config = config
        self.codec = codec or RecordCodec()
        self.topic = config.topic
        common = {
            "bootstrap.servers": config.bootstrap_servers,
            "client.id": "actionjournal",
            **config.client_config,
        }
        self._common = common
        self._admin = AdminClient(common)
        try:
            topic_id, topic_limit = self._prepare_topic()
        finally:
            # Only needed at start; left alive, its threads would keep reconnecting.
            self._admin.poll(0)
            del self._admin
        self.identity = StoreIdentity("kafka", self.topic, topic_id)
        limits = [topic_limit - _FRAMING]
        if config.max_record_bytes is not None:
            limits.append(config.max_record_bytes)
        self.max_record_bytes = min(limits)
        self._limit_source = (
            f"max_record_bytes={config.max_record_bytes}"
            if self.max_record_bytes == config.max_record_bytes
            else f"topic max.message.bytes={topic_limit}"
        )
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
            "logger": _client_log,
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
                "logger": _client_log,
            }
        )
        self._closed = False
        self._reports = _Reports(self._producer)
        self._stop = threading.Event()
        self._poller = threading.Thread(
            target=self._poll_reports, name=f"actionjournal-kafka-{self.topic}", daemon=True
        )
        self._poller.start()
        self._read_lock = threading.Lock()
        self._spans: dict[tuple[int, str, str], _Span] = {}
        # Keys already read, by namespace/operator: read again, they need the current end.
        self._served: dict[tuple[str, str], set[str]] = {}
        self._captured: RecentProbes[tuple[int, int]] = RecentProbes()  # see _offsets
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
        if len(data) + len(key) > self.max_record_bytes:
            raise JournalWriteError(
                f"{what} is {len(data) + len(key)} bytes, over the limit of "
                f"{self.max_record_bytes} bytes ({self._limit_source}); the record is not "
                "kept. Lower journal.max_payload_bytes below it, or raise the topic's "
                "max.message.bytes"
            )
        delivery = _Delivery()
        deadline = time.monotonic() + self.config.delivery_timeout_s
        while True:
            try:
                self._producer.produce(
                    self.topic, data, key, partition=partition, on_delivery=delivery
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
                raise JournalWriteError(
                    f"{what} was refused by the Kafka client: {_describe(exc.args[0])}; the "
                    f"record is not kept. {_advice(exc.args[0], self.config)}"
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
            raise JournalWriteError(
                f"Kafka did not acknowledge {what}, {len(data)} bytes: "
                f"{_describe(delivery.error)}; {fate}. {_advice(delivery.error, self.config)}"
            )
        note_append("kafka", len(data), started)
        return Marker(self.identity, record.epoch, partition, delivery.offset)

    def _poll_reports(self) -> None:
        while not self._stop.wait(0.1):
            self._reports.poll_if_idle()

    def _on_client_error(self, error: KafkaError) -> None:
        # Connection trouble is reported here as well as through the affected appends; a
        # broker that is down reports every reconnect attempt, so say it once in a while.
        if error.fatal():
            self._fatal = error
            log.error("Kafka producer fatal error: %s", _describe(error))
            return
        now = time.monotonic()
        if now - self._last_warning.get(error.code(), -1e9) >= _WARN_EVERY_S:
            self._last_warning[error.code()] = now
            log.warning("Kafka client (topic %s): %s", self.topic, _describe(error))

    # -- recovery -------------------------------------------------------------------------

    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        with _gc_paused():
            return self._read_key(namespace, operator_uid, key_id, after)

    def _read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        partition = self.partition_of(key_id)
        with self._read_lock:
            served = self._served.setdefault((namespace, operator_uid), set())
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
            slot = (partition, namespace, operator_uid)
            span = self._spans.get(slot)
            if self.config.recovery_cache_bytes == 0 or again:
                found = self._scan(partition, start, high, namespace, operator_uid)
                entries = _with_control(found.get(key_id, []), found, key_id)
            else:
                if span is None:
                    span = self._spans[slot] = _Span(start, start)
                if start < span.start:  # a marker older than what we read so far
                    found = self._scan(partition, start, span.start, namespace, operator_uid)
                    span.add(found, before=True, served=served)
                    span.start = start
                if high > span.end:  # written since the last read
                    found = self._scan(partition, span.end, high, namespace, operator_uid)
                    span.add(found, before=False, served=served)
                    span.end = high
                entries = _with_control(span.take(key_id), span.keys, key_id)
                if sum(s.size for s in self._spans.values()) > self.config.recovery_cache_bytes:
                    # Over budget: drop everything; keys not yet recovered read their
                    # partition again (correct, only slower).
                    self._spans.clear()
            served.add(key_id)
        return decode_range(
            self.codec, entries, start, high, f"topic {self.topic} partition {partition}"
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
        bootstrap_servers: str,
        topic: str,
        client_config: dict[str, str] | None = None,
        codec: RecordCodec | None = None,
        admin_timeout_s: float = 30.0,
    ) -> KafkaActionStateStore:
        """Open an existing journal topic with whatever partition count it has; never creates.

        For the operator tools, which are told a topic, not how it was configured.
        """
        settings = {
            "bootstrap.servers": bootstrap_servers,
            "client.id": "actionjournal-tools",
            **(client_config or {}),
        }
        admin = AdminClient(settings)
        try:
            futures = admin.describe_topics(
                TopicCollection([topic]), request_timeout=admin_timeout_s
            )
            description = futures[topic].result()
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise StoreError(
                    f"Kafka topic {topic!r} does not exist on {bootstrap_servers}"
                ) from None
            raise StoreError(
                f"cannot describe Kafka topic {topic!r} on {bootstrap_servers}: "
                f"{_describe(error)}; check the address and client settings"
            ) from exc
        finally:
            admin.poll(0)
            del admin
        config = KafkaStoreConfig(
            bootstrap_servers=bootstrap_servers,
            topic=topic,
            partitions=len(description.partitions),
            create_topic=False,
            client_config=client_config or {},
            admin_timeout_s=admin_timeout_s,
            recovery_cache_bytes=0,
        )
        return cls(config, codec)

    def partitions(self) -> list[int]:
        return list(range(self.config.partitions))

    def position_range(self, partition: int) -> tuple[int, int]:
        with self._read_lock:
            return self._watermarks(partition)

    def scan(
        self,
        partition: int,
        namespace: str,
        operator_uid: str | None = None,
        *,
        start: int | None = None,
        end: int | None = None,
        foreign: bool = False,
        progress: Progress | None = None,
    ) -> Iterator[ScannedRecord]:
        start, end = self.scan_bounds(partition, start, end)
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
                "logger": _client_log,
            }
        )
        where = f"topic {self.topic} partition {partition} offsets {start}..{end - 1}"
        decode, decode_head = self.codec.decode, _head_decoder.decode
        try:
            consumer.assign([TopicPartition(self.topic, partition, start)])
            position = start
            stalled_since = time.monotonic()
            while position < end:
                messages = consumer.consume(min(end - position, _READ_BATCH), timeout=1.0)
                if not messages:
                    if time.monotonic() - stalled_since > self.config.admin_timeout_s:
                        raise StoreError(
                            f"reading {where} made no progress for "
                            f"{self.config.admin_timeout_s:g} s (stuck at offset {position})"
                        )
                    continue
                stalled_since = time.monotonic()
                for message in messages:
                    error = message.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            position = end
                            break
                        raise StoreError(
                            f"reading {where} failed after offset {position - 1}: "
                            f"{_describe(error)}. {_advice(error, self.config)}"
                        )
                    offset = message.offset()
                    position = offset + 1
                    if offset >= end:
                        position = end
                        break
                    data = message.value() or b""
                    try:
                        if data[:2] != MAGIC:
                            raise ValueError
                        head = decode_head(
                            data[_HEADER:-_MAC] if data[4] & FLAG_SIGNED else data[_HEADER:]
                        )
                    except (msgspec.DecodeError, ValueError, IndexError, TypeError):
                        head = self._attribute(data, offset, partition)
                    ours = head.namespace == namespace and (
                        operator_uid is None or head.operator_uid == operator_uid
                    )
                    if ours:
                        where_one = f"topic {self.topic} partition {partition} offset {offset}"
                        record = decode(data, where_one)
                        signed = bool(data[4] & FLAG_SIGNED)
                        yield ScannedRecord(
                            offset, len(data), head.namespace, head.operator_uid, record, signed
                        )
                    elif foreign:
                        yield ScannedRecord(
                            offset, len(data), head.namespace, head.operator_uid, None
                        )
                if progress is not None:
                    progress(position - start, end - start)
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
        admin = AdminClient(self._common)
        try:
            futures = admin.delete_records(
                [TopicPartition(self.topic, partition, position)],
                request_timeout=self.config.admin_timeout_s,
                operation_timeout=self.config.admin_timeout_s,
            )
            for future in futures.values():
                future.result()
        except KafkaException as exc:
            error = exc.args[0]
            raise StoreError(
                f"deleting topic {self.topic} partition {partition} below offset {position} "
                f"failed: {_describe(error)}. {_advice(error, self.config)}"
            ) from exc
        finally:
            admin.poll(0)
            del admin
            with self._read_lock:
                self._captured.forget(partition)  # its first offset moved
        if progress is not None:
            progress(1, 1)
        return position - low

    def _watermarks(self, partition: int) -> tuple[int, int]:
        tp = TopicPartition(self.topic, partition)
        return self._retrying(
            lambda: self._consumer.get_watermark_offsets(
                tp, timeout=self.config.admin_timeout_s, cached=False
            ),
            f"reading the offsets of topic {self.topic} partition {partition}",
        )

    def _scan(
        self, partition: int, start: int, end: int, namespace: str, operator_uid: str
    ) -> dict[str, list[tuple[int, bytes]]]:
        """Offsets ``[start, end)`` of a partition: the entries of one namespace/uid, by key."""
        found: dict[str, list[tuple[int, bytes]]] = {}
        decode_head = _head_decoder.decode
        where = f"topic {self.topic} partition {partition} offsets {start}..{end - 1}"
        self._consumer.assign([TopicPartition(self.topic, partition, start)])
        try:
            position = start
            stalled_since = time.monotonic()
            while position < end:
                messages = self._consumer.consume(min(end - position, _READ_BATCH), timeout=1.0)
                if not messages:
                    if time.monotonic() - stalled_since > self.config.admin_timeout_s:
                        raise StoreError(
                            f"reading {where} made no progress for "
                            f"{self.config.admin_timeout_s:g} s (stuck at offset {position}); "
                            "check that the brokers are reachable, then restart the job"
                        )
                    continue
                stalled_since = time.monotonic()
                # The hot loop of recovery: keep it free of calls that are not needed.
                for message in messages:
                    if message.error() is not None:
                        error = message.error()
                        if error.code() == KafkaError._PARTITION_EOF:
                            position = end
                            break
                        raise StoreError(
                            f"reading {where} failed after offset {position - 1}: "
                            f"{_describe(error)}. {_advice(error, self.config)}"
                        )
                    data = message.value()
                    try:
                        if data[:2] != MAGIC:
                            raise ValueError
                        head = decode_head(
                            data[_HEADER:-_MAC] if data[4] & FLAG_SIGNED else data[_HEADER:]
                        )
                    except (msgspec.DecodeError, ValueError, IndexError, TypeError):
                        head = self._attribute(data, message.offset(), partition)
                    if head.namespace == namespace and head.operator_uid == operator_uid:
                        offset = message.offset()
                        if offset < end:
                            found.setdefault(head.key_id, []).append((offset, data))
                else:
                    position = messages[-1].offset() + 1
        finally:
            self._consumer.unassign()
        return found

    def _attribute(self, data: bytes | None, offset: int, partition: int) -> _Head:
        """Bytes whose header does not parse: let the codec raise its precise error."""
        where = f"topic {self.topic} partition {partition} offset {offset}"
        record = self.codec.decode(data or b"", where)
        return _Head("", record.namespace, record.operator_uid, record.epoch, record.key_id)

    # -- topic ----------------------------------------------------------------------------

    def _prepare_topic(self) -> tuple[str, int]:
        """Create or validate the topic; return its topic id and max.message.bytes."""
        config = self.config
        description = self._describe_topic()
        if description is None:
            if not config.create_topic:
                raise StoreError(
                    f"Kafka journal topic {self.topic!r} does not exist on "
                    f"{config.bootstrap_servers} and create_topic is false; create it with "
                    f"{config.partitions} partitions, or set create_topic"
                )
            self._create_topic()
            description = self._wait_for_leaders()
        found = len(description.partitions)
        if found != config.partitions:
            raise StoreError(
                f"Kafka journal topic {self.topic!r} has {found} partitions but the store is "
                f"configured with partitions={config.partitions}. A key's records must stay in "
                f"one partition: set partitions={found} to use this topic, or use a new topic "
                "(restore in upgrade mode). Never add partitions to a journal topic"
            )
        replicas = {len(p.replicas) for p in description.partitions}
        if replicas != {config.replication_factor}:
            log.warning(
                "Kafka journal topic %s has replication factor %s, configured %d",
                self.topic, sorted(replicas), config.replication_factor,
            )  # fmt: skip
        return str(description.topic_id), self._topic_limit()

    def _describe_topic(self) -> Any:
        def describe() -> Any:
            futures = self._admin.describe_topics(
                TopicCollection([self.topic]), request_timeout=self.config.admin_timeout_s
            )
            try:
                return futures[self.topic].result()
            except KafkaException as exc:
                if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    return None
                raise

        return self._retrying(describe, f"describing topic {self.topic}")

    def _create_topic(self) -> None:
        config = self.config
        new = NewTopic(self.topic, config.partitions, config.replication_factor)
        futures = self._admin.create_topics(
            [new],
            request_timeout=config.admin_timeout_s,
            operation_timeout=config.admin_timeout_s,
        )
        try:
            futures[self.topic].result()
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return  # created concurrently by another subtask: validated next
            raise StoreError(
                f"cannot create Kafka journal topic {self.topic!r} ({config.partitions} "
                f"partitions, replication factor {config.replication_factor}) on "
                f"{config.bootstrap_servers}: {_describe(error)}. {_advice(error, config)}"
            ) from exc
        log.info(
            "created Kafka journal topic %s: %d partitions, replication factor %d",
            self.topic, config.partitions, config.replication_factor,
        )  # fmt: skip

    def _wait_for_leaders(self) -> Any:
        """A new topic's partitions get leaders shortly after creation; reads need them."""
        deadline = time.monotonic() + self.config.admin_timeout_s
        while True:
            description = self._describe_topic()
            if description is not None and all(p.leader for p in description.partitions):
                return description
            if time.monotonic() > deadline:
                raise StoreError(
                    f"Kafka journal topic {self.topic!r} was created but its partitions have "
                    f"no leader after {self.config.admin_timeout_s:g} s; check the brokers' "
                    "health"
                )
            time.sleep(0.1)

    def _topic_limit(self) -> int:
        resource = ConfigResource(ConfigResource.Type.TOPIC, self.topic)
        try:
            futures = self._admin.describe_configs(
                [resource], request_timeout=self.config.admin_timeout_s
            )
            entry = futures[resource].result()["max.message.bytes"]
            return int(entry.value)
        except (KafkaException, KeyError, ValueError, TypeError) as exc:
            log.warning(
                "cannot read max.message.bytes of topic %s (%s); assuming the default %d",
                self.topic, exc, _DEFAULT_TOPIC_LIMIT,
            )  # fmt: skip
            return _DEFAULT_TOPIC_LIMIT

    def _retrying(self, fn: Callable[[], T], what: str) -> T:
        """Run an admin/metadata request, retrying transient errors (new leaders, startup)."""
        deadline = time.monotonic() + self.config.admin_timeout_s
        while True:
            try:
                return fn()
            except KafkaException as exc:
                error = exc.args[0]
                transient = error.retriable() or error.code() in _TRANSIENT
                if transient and time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                raise StoreError(
                    f"{what} on {self.config.bootstrap_servers} failed: {_describe(error)}. "
                    f"{_advice(error, self.config)}"
                ) from exc

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


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a read allocates many small objects.

    A scan creates a message object, a bytes object and an index entry per record;
    the collections they trigger (each one walking every tracked object) took half
    of a partition scan's time. Reference counting still frees everything; the
    collector runs again right after.
    """
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _describe(error: KafkaError) -> str:
    return f"{error.name()} ({error.str()})"


def _advice(error: KafkaError, config: KafkaStoreConfig) -> str:
    """What to do about a Kafka error, in the user's terms."""
    code = error.code()
    if code in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE):
        return (
            "The record is larger than the topic's max.message.bytes (or the producer's "
            "message.max.bytes): lower journal.max_payload_bytes, or raise max.message.bytes"
        )
    if code in (KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError._TRANSPORT,
                KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE):  # fmt: skip
        return (
            f"The brokers at {config.bootstrap_servers} did not answer in time "
            f"(delivery_timeout_s={config.delivery_timeout_s:g}, "
            f"admin_timeout_s={config.admin_timeout_s:g}): check that they are up and "
            "reachable, and the client_config security settings"
        )
    if code in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC,
                KafkaError._UNKNOWN_PARTITION):  # fmt: skip
        return (
            f"The topic {config.topic!r} or its partition is gone (deleted?). A recreated topic "
            "is a new journal: restore in upgrade mode"
        )
    if code in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._AUTHENTICATION,
                KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED):  # fmt: skip
        return (
            "Check the credentials in client_config and the ACLs: the store needs Describe, "
            "Create (if create_topic), Write, Read and DescribeConfigs on the topic and "
            "IdempotentWrite on the cluster"
        )
    if code in (KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return "Too few in-sync replicas for acks=all: bring the brokers back"
    if code in (KafkaError.INVALID_REPLICATION_FACTOR, KafkaError.INVALID_PARTITIONS):
        return (
            f"partitions={config.partitions}, replication_factor={config.replication_factor}: "
            "the replication factor cannot exceed the number of brokers"
        )
    if code == KafkaError.OFFSET_OUT_OF_RANGE or code == KafkaError._AUTO_OFFSET_RESET:
        return "Records were deleted while being read (retention or cleanup): restart the job"
    return "Check the broker logs and the client_config settings"
