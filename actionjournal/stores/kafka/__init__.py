"""The Kafka journal store (:class:`KafkaStore`): one topic, all records of a key in one partition.

Settings (:class:`~actionjournal.stores.kafka.config.KafkaStoreConfig`) and their
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

The package, one job per module: ``store`` (the store: appends, recovery reads, the tools'
operations), ``delivery`` (waiting for delivery reports), ``read`` (the consume loop and
record heads), ``admin`` (the topic), ``errors`` (what an error means, what to do) and
``config`` (the settings, importable without confluent-kafka, as is this package).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.stores.kafka.config import (
        KafkaStoreConfig as KafkaStoreConfig,
    )
    from actionjournal.stores.kafka.store import (
        KafkaStore as KafkaStore,
    )

_LAZY = {
    "actionjournal.stores.kafka.config": ("KafkaStoreConfig",),
    "actionjournal.stores.kafka.store": ("KafkaStore",),
}
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
