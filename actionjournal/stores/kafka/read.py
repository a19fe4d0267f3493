"""Reading a range of a journal partition: the one consume loop of recovery and the tools."""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Generator, Iterator
from typing import cast

import msgspec
from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from actionjournal.durable.codec import FLAG_SIGNED, MAGIC, RecordCodec
from actionjournal.durable.errors import RecordError, StoreError
from actionjournal.durable.records import JournalRecord
from actionjournal.durable.store import ScanFilter, ScannedRecord
from actionjournal.stores.kafka.config import KafkaStoreConfig
from actionjournal.stores.kafka.errors import TRANSIENT, advice, describe

_HEADER = 5  # magic, version, type, flags
_MAC = 32
_READ_BATCH = 10_000
_NAMESPACE_AT = 9  # envelope (5), fixarray (1), two-letter tag (3)
_pack = msgspec.msgpack.Encoder().encode
_error = Message.error
_offset = Message.offset
_value = Message.value


NAMESPACE_HEADER = "aj.namespace"
UID_HEADER = "aj.operator_uid"
"""Message headers naming a record's namespace and operator uid (the message key is its key
id): other namespaces' records are recognised without their body, and a record whose body
does not decode is still known to be ours."""


class Head(msgspec.Struct, array_like=True):
    """The identity prefix every record starts with (tag, namespace, uid, epoch, key id).

    Decoding only this lets recovery skip other namespaces without decoding or
    keeping their records; trailing fields are ignored by msgspec.
    """

    tag: str
    namespace: str
    operator_uid: str
    epoch: int
    key_id: str


_decode_head = msgspec.msgpack.Decoder(Head).decode


def headers(namespace: str, operator_uid: str) -> list[tuple[str, bytes]]:
    return [(NAMESPACE_HEADER, namespace.encode()), (UID_HEADER, operator_uid.encode())]


def read_head(message: Message) -> Head | None:
    """Whose record ``message`` is, without decoding its body: its headers and message key,
    or for records written before the headers the identity prefix of the body. ``None``: a
    foreign record (neither headers nor a readable prefix: not written by actionjournal)."""
    found = cast("list[tuple[str, bytes | None]] | None", message.headers())
    if found:
        namespace = uid = None
        for name, value in found:
            if name == NAMESPACE_HEADER:
                namespace = value
            elif name == UID_HEADER:
                uid = value
        if namespace is not None and uid is not None:
            key = message.key() or b""
            return Head(
                "", _text(namespace), _text(uid), 0, key.decode("utf-8", "backslashreplace")
            )
    data = message.value()
    try:
        if data is None or data[:2] != MAGIC:
            return None
        return _decode_head(data[_HEADER:-_MAC] if data[4] & FLAG_SIGNED else data[_HEADER:])
    except (msgspec.DecodeError, IndexError):
        return None


def _text(value: bytes | str | None) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return value or ""


def foreign_text(data: bytes | None) -> str:
    """What a foreign record is, for warnings: its size and first bytes."""
    data = data or b""
    return f"{len(data)} bytes starting {data[:16]!r}"


class Sorter:
    """Sorts the records of one partition by key for one namespace/operator, per batch.

    The header of a record as this codec writes it is fixed bytes: the envelope, a MessagePack
    array, a two-letter tag, then namespace, operator uid, epoch and key id. A record whose
    namespace and uid bytes are ours and whose epoch is a small int is recognised and its key
    id sliced out without decoding anything (the head decoding cost as much as the whole
    record's); any other record is recognised by :func:`read_head` (other namespaces, a large
    epoch, a record whose body does not decode). Foreign records are kept aside in
    ``foreign``, for the store to report.
    """

    def __init__(self, namespace: str, operator_uid: str, codec: RecordCodec, place: str):
        self.namespace, self.operator_uid = namespace, operator_uid
        self.codec, self.place = codec, place
        self._ours = _pack(namespace) + _pack(operator_uid)
        self._epoch = _NAMESPACE_AT + len(self._ours)  # where the epoch is
        self._by_key: dict[bytes, list[tuple[int, bytes]]] = {}
        self.foreign: list[tuple[int, bytes | None]] = []

    def add(self, messages: list[Message]) -> None:
        ours, at, by_key = self._ours, self._epoch, self._by_key
        # The hot loop of recovery: byte comparisons only.
        offsets = cast("Iterator[int]", map(_offset, messages))  # fetched: never None
        at_c_speed = zip(messages, offsets, map(_value, messages), strict=True)
        for message, offset, data in at_c_speed:
            key: bytes | None
            try:
                if (
                    data is not None
                    and data.startswith(ours, _NAMESPACE_AT)
                    and data[5] & 0xF0 == 0x90  # fixarray
                    and data[6] == 0xA2  # a two-letter tag
                    and data[at] < 0x80  # epoch: a positive fixint
                ):
                    size = data[at + 1]
                    if 0xA0 <= size <= 0xBF:  # key id: fixstr
                        begin, stop = at + 2, at + 2 + size - 0xA0
                    elif size == 0xD9:  # key id: str 8
                        begin, stop = at + 3, at + 3 + data[at + 2]
                    else:
                        begin = stop = 0
                    # More fields follow the key id: a record that ends there was cut short.
                    key = data[begin:stop] if begin and len(data) > stop else self._slow(message)
                else:
                    key = self._slow(message)
            except IndexError:  # shorter than a header
                key = self._slow(message)
            if key is not None:
                entries_of = by_key.get(key)
                if entries_of is None:
                    by_key[key] = [(offset, data or b"")]
                else:
                    entries_of.append((offset, data or b""))

    def _slow(self, message: Message) -> bytes | None:
        head = read_head(message)
        if head is None:
            self.foreign.append((offset_of(message), message.value()))
            return None
        if head.namespace == self.namespace and head.operator_uid == self.operator_uid:
            return head.key_id.encode()
        return None

    def found(self) -> dict[str, list[tuple[int, bytes]]]:
        """The entries sorted so far, by key id."""
        found = {}
        for key, entries_of in self._by_key.items():
            try:
                found[key.decode()] = entries_of
            except UnicodeDecodeError:  # not a key id: the codec says why, and where
                offset, data = entries_of[0]
                self.codec.decode(data, f"{self.place} offset {offset}")
                raise
        return found


def consume(
    consumer: Consumer, config: KafkaStoreConfig, partition: int, start: int, end: int
) -> Generator[list[Message]]:
    """The messages at offsets ``[start, end)`` of ``partition``, in order, in batches.

    Assigns ``consumer`` to the partition for the read and unassigns it at the end. A read
    that stops making progress for ``admin_timeout_s``, or a fetch error (records deleted
    meanwhile, topic gone), is a StoreError naming the partition and offset.
    """
    topic = config.topic
    where = f"topic {topic} partition {partition} offsets {start}..{end - 1}"
    consumer.assign([TopicPartition(topic, partition, start)])
    try:
        position = start
        stalled_since = time.monotonic()
        while position < end:
            messages = consumer.consume(min(end - position, _READ_BATCH), timeout=1.0)
            if not messages:
                if time.monotonic() - stalled_since > config.admin_timeout_s:
                    raise StoreError(
                        f"reading {where} made no progress for {config.admin_timeout_s:g} s "
                        f"(stuck at offset {position}); check that the brokers are reachable, "
                        "then restart the job"
                    )
                continue
            stalled_since = time.monotonic()
            if any(map(_error, messages)):  # the end of the partition, or a failed fetch
                messages, position = _until_error(messages, where, position, end, config)
            if messages:
                last = offset_of(messages[-1])
                if last >= end:  # past the range: a gap at its end
                    messages = [message for message in messages if offset_of(message) < end]
                    last = end - 1
                position = max(position, last + 1)
                if messages:
                    yield messages
    finally:
        consumer.unassign()


def _until_error(
    messages: list[Message], where: str, position: int, end: int, config: KafkaStoreConfig
) -> tuple[list[Message], int]:
    """The messages before the first error event; at the partition's end the read is over.
    A leader change on the way (a broker lost) is ridden through: its error events are left
    out, the consumer fetches from the new leader by itself, and a read that stops making
    progress fails after admin_timeout_s."""
    kept: list[Message] = []
    for message in messages:
        error = message.error()
        if error is None:
            kept.append(message)
        elif error.code() == KafkaError._PARTITION_EOF:
            return kept, end
        elif error.code() not in TRANSIENT:
            at = offset_of(kept[-1]) if kept else position - 1
            raise StoreError(
                f"reading {where} failed after offset {at}: {describe(error)}. "
                f"{advice(error, config)}"
            )
    return kept, position


def scanned(
    message: Message,
    wanted: ScanFilter,
    decode: Callable[[bytes, str], JournalRecord],
    place: str,
) -> ScannedRecord | None:
    """What a tools' scan yields for ``message`` (see :meth:`Inspectable.scan`)."""
    offset, value = offset_of(message), message.value() or b""
    head = read_head(message)
    if head is None:
        if not wanted.foreign:
            return None
        error = f"not written by actionjournal ({foreign_text(value)})"
        return ScannedRecord(offset, len(value), "", "", None, error=error, foreign=True)
    if not wanted.ours(head.namespace, head.operator_uid):
        if not wanted.foreign:
            return None
        return ScannedRecord(offset, len(value), head.namespace, head.operator_uid, None)
    try:
        record = decode(value, f"{place} offset {offset}")
    except RecordError as exc:
        if not wanted.foreign:
            raise
        return ScannedRecord(
            offset, len(value), head.namespace, head.operator_uid, None, key_id=head.key_id,
            error=str(exc),
        )  # fmt: skip
    signed = bool(value[4] & FLAG_SIGNED)
    return ScannedRecord(
        offset, len(value), head.namespace, head.operator_uid, record, signed, record.key_id
    )


def scanned_batch(
    messages: list[Message], wanted: ScanFilter, codec: RecordCodec, place: str
) -> Iterator[ScannedRecord]:
    """:func:`scanned` of a fetched batch. Bodies are what a tool reads, and a batch of
    records that decode together (one namespace's, unsigned: the common case) is decoded in
    one call (:meth:`RecordCodec.decode_many`), which costs less than reading each one's
    headers; otherwise each message takes :func:`scanned`, which reads its headers first
    and says which record is bad."""
    values = [message.value() or b"" for message in messages]
    try:
        records = codec.decode_joined(b"".join(values), len(values)) if len(values) > 1 else None
    except RecordError:
        records = None
    if records is None:
        for message in messages:
            item = scanned(message, wanted, codec.decode, place)
            if item is not None:
                yield item
        return
    for message, value, record in zip(messages, values, records, strict=True):
        if wanted.ours(record.namespace, record.operator_uid):
            yield ScannedRecord(
                offset_of(message), len(value), record.namespace, record.operator_uid, record,
                bool(value[4] & FLAG_SIGNED), record.key_id,
            )  # fmt: skip
        elif wanted.foreign:  # another namespace's or operator's: shown undecoded
            yield ScannedRecord(
                offset_of(message), len(value), record.namespace, record.operator_uid, None
            )


def offset_of(message: Message) -> int:
    """The offset of a fetched message (never None: error events were left out)."""
    offset = message.offset()
    assert offset is not None, "consume() yields fetched messages only"
    return offset


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
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
