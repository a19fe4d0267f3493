"""The contract every action state store keeps (parametrized over stores in conftest)."""

from __future__ import annotations

import threading

from actionjournal.durable.records import CallFinished, RunCompleted
from tests.sizes import reachable_bytes


def rc(key: str, seq: int, namespace: str = "ns", uid: str = "op") -> RunCompleted:
    return RunCompleted(namespace, uid, 0, key, seq, at=1.0, input_digest="d")


def test_append_returns_increasing_positions_of_the_key_partition(store):
    m1 = store.append(rc("k", 0))
    m2 = store.append(rc("k", 1))
    assert m2.position > m1.position
    assert m1.store == store.identity and m1.partition == store.partition_of("k")


def test_read_key_returns_only_that_key_and_namespace_in_order(store):
    store.append(rc("k", 0))
    store.append(rc("other", 0))
    store.append(rc("k", 0, namespace="ns2"))
    store.append(rc("k", 0, uid="op2"))
    store.append(rc("k", 1))
    records = store.read_key("ns", "op", "k", None)
    assert [(r.key_id, r.seq) for r in records] == [("k", 0), ("k", 1)]


def test_read_key_after_marker(store):
    store.append(rc("k", 0))
    marker = store.append(rc("k", 1))
    store.append(rc("k", 2))
    assert [r.seq for r in store.read_key("ns", "op", "k", marker)] == [2]


def test_values_and_none_survive(store):
    record = CallFinished(
        "ns", "op", 0, "k", 0, action_id="a", index=0, call_id="c", function_id="m:f",
        durable_id=None, arg_digest="x", value=b"\xc0", error=None, at=1.0, duration=0.1,
    )  # fmt: skip
    store.append(record)
    assert store.read_key("ns", "op", "k", None) == [record]


def test_concurrent_appends_are_all_kept(store):
    def writer(n: int) -> None:
        for seq in range(50):
            store.append(rc(f"key-{n}", seq))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n in range(8):
        assert [r.seq for r in store.read_key("ns", "op", f"key-{n}", None)] == list(range(50))


def test_earliest_position_is_at_most_the_first_record(store):
    marker = store.append(rc("k", 0))
    assert store.earliest_position("k") <= marker.position


def test_append_all_keeps_the_order_given(store):
    markers = store.append_all([rc("k", 0), rc("other", 0), rc("k", 1)])
    assert markers[0].position < markers[2].position
    assert [m.partition for m in markers] == [store.partition_of(k) for k in ("k", "other", "k")]
    assert [r.seq for r in store.read_key("ns", "op", "k", None)] == [0, 1]
    assert [r.seq for r in store.read_key("ns", "op", "other", None)] == [0]


def test_reading_many_keys_keeps_no_memory_per_key(store):
    # A job reads the journal of every key it ever sees (its first touch after a start).
    store.append(rc("k", 0))
    for i in range(300):
        store.read_key("ns", "op", f"warm-{i}", None)
    before = reachable_bytes(store)
    for i in range(4000):
        store.read_key("ns", "op", f"key-{i}", None)
    grown = reachable_bytes(store) - before
    # A set of key ids would keep over 100 bytes a key; caches of a fixed size move a little.
    assert grown / 4000 < 10, f"{grown / 4000:.0f} bytes kept per key read"
    assert [r.seq for r in store.read_key("ns", "op", "k", None)] == [0]
