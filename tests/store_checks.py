"""Checks the Kafka and Fluss store tests share: the same scenario on either backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actionjournal.durable.records import RunCompleted


def rc(key: str, seq: int, namespace: str = "ns", digest: str = "d") -> RunCompleted:
    return RunCompleted(namespace, "op", 0, key, seq, at=1.0, input_digest=digest)


def seqs(store: Any, key: str, namespace: str = "ns", after=None) -> list[int]:
    return [r.seq for r in store.read_key(namespace, "op", key, after)]


def check_one_pass_per_partition(
    writer: Any, open_reader: Callable[[], Any], store_module: Any, probe: str, monkeypatch: Any
) -> None:
    """30 keys x 3 runs over 2 partitions, recovered in one wave by a reader opened after
    they were written: each
    partition's records are read once and its offsets probed once (``reader.<probe>``); a key
    asked again sees its new records; after the wave, only records written since are read."""
    monkeypatch.setattr(store_module, "_WAVE_S", 3600.0)  # all the reads below are one wave
    keys = [f"key-{n}" for n in range(30)]
    markers = {}
    for seq in range(3):
        for key in keys:
            markers[key, seq] = writer.append(rc(key, seq))
    reader = open_reader()
    scans: list[tuple[int, int, int]] = []
    probes: list[int] = []
    scan, probed = reader._scan, getattr(reader, probe)

    def counting_scan(partition, start, end, *args, **kwargs):
        scans.append((partition, start, end))
        return scan(partition, start, end, *args, **kwargs)

    def counting_probe(partition):
        probes.append(partition)
        return probed(partition)

    reader._scan = counting_scan
    setattr(reader, probe, counting_probe)
    # The first key's marker is late in its partition; the others start from the beginning.
    first = keys[0]
    assert seqs(reader, first, after=markers[first, 1]) == [2]
    for key in keys[1:]:
        assert seqs(reader, key) == [0, 1, 2]
    read = {p: sum(end - start for q, start, end in scans if q == p) for p in (0, 1)}
    total = {p: sum(1 for k in keys if writer.partition_of(k) == p) * 3 for p in (0, 1)}
    assert read == total, f"offsets read more than once: {scans}"
    assert sorted(probes) == [0, 1], "one offsets probe per partition for the whole wave"
    # A key already handed out may have appended since: it is read again from the store,
    # completely, up to the current end.
    writer.append(rc(keys[1], 3))
    assert seqs(reader, keys[1]) == [0, 1, 2, 3]
    # Once the wave is over, new records after the cached range: only they are read.
    monkeypatch.setattr(store_module, "_WAVE_S", 0.0)
    writer.append(rc("late", 0))
    scans.clear()
    assert seqs(reader, "late") == [0]
    assert sum(end - start for _, start, end in scans) <= 2
