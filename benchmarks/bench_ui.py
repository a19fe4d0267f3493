"""The journal explorer's benchmarks (``actionjournal ui``, docs/ui.md).

* ``ui.runs.first_page``: ms to the first runs page (HTML, over HTTP from the real
  ``actionjournal ui`` process) on a 1,000,000-record SQLite journal once its index is built,
  against a raw ``SELECT`` of the same 50 runs' records from the journal (by key and seq,
  on the journal's own key index). Target: ratio at most 5. The first index build's time
  is printed beside it.
* ``ui.index.kafka``: records/s the explorer's indexer reads, folds and writes from a Kafka
  journal (200,000 records, 4 partitions, 1,000 keys), against the recovery read of the
  same records (``read_key`` of every key, as a restart does). Target: ratio at least 0.5.
"""

from __future__ import annotations

import gc
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import msgspec

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.identity import key_id
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.tools.ui.indexer import build
from actionjournal.tools.ui.journal import Journal
from benchmarks.common import BenchContext, entry
from benchmarks.ui_journal import NAMESPACE, OPERATOR, START, run_records
from benchmarks.ui_journal import build as build_journal

ROOT = Path(__file__).resolve().parent.parent


def bench_first_page(records: int = 1_000_000, rounds: int = 7) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.db"
        written = build_journal(path, records)
        index = Path(tmp) / "index.sqlite"
        journal = Journal(SqliteStoreConfig(path=str(path)), RecordCodec(), NAMESPACE, None)
        read, took = build(journal, index)
        print(f"ui: first index build of {read} records took {took:.1f} s ({read / took:,.0f}/s)")
        proc = subprocess.Popen(
            [sys.executable, "-m", "actionjournal.tools.cli", "ui", "--store", "sqlite",
             "--path", str(path), "--namespace", NAMESPACE, "--port", "0",
             "--index", str(index)],
            stdout=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip
        try:
            line = proc.stdout.readline() if proc.stdout else ""
            url = "http://" + line.split("http://", 1)[1].split()[0].rstrip("/")
            with httpx.Client(base_url=url, timeout=60) as client:
                while not client.get("/api/status").json()["indexed"]:
                    time.sleep(0.05)
                first = client.get("/api/runs").json()["page"]["runs"]
                runs = [(r["key_id"], r["seq"]) for r in first]
                ours, base = [], []
                for _ in range(rounds):
                    start = time.perf_counter()
                    page = client.get("/runs")
                    ours.append(time.perf_counter() - start)
                    assert page.status_code == 200 and page.text.count("<tr class=") == 50
                    base.append(_raw_select(path, runs))
        finally:
            proc.terminate()
            proc.wait(30)
    o, b = statistics.median(ours) * 1000, statistics.median(base) * 1000
    print(
        f"ui: first runs page on {written} records: {o:.1f} ms (rounds "
        f"{[round(x * 1000, 1) for x in ours]}), raw SELECT of the same 50 runs' records "
        f"{b:.1f} ms"
    )
    return entry("ui.runs.first_page", "ms", o, b, 5)


def _raw_select(path: Path, runs: list[tuple[str, int]]) -> float:
    db = sqlite3.connect(path)
    start = time.perf_counter()
    got = 0
    for key, seq in runs:
        got += len(
            db.execute(
                "SELECT pos, body FROM journal WHERE namespace = ? AND operator_uid = ? AND "
                "key_id = ? AND seq = ?",
                (NAMESPACE, OPERATOR, key, seq),
            ).fetchall()
        )
    took = time.perf_counter() - start
    db.close()
    assert got >= 4 * len(runs)
    return took


def bench_index_kafka(bootstrap: str, records: int = 200_000, keys: int = 1_000) -> dict:
    from confluent_kafka import Producer

    from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig

    topic = f"aj-bench-ui-{uuid.uuid4().hex[:12]}"
    config = KafkaStoreConfig(bootstrap_servers=bootstrap, topic=topic, partitions=4)
    writer = KafkaStore(config)
    codec = RecordCodec()
    raw = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    value = msgspec.msgpack.encode({"text": "x" * 60})
    names = [f"user-{k}" for k in range(keys)]
    ids = [key_id(name) for name in names]
    written = run = 0
    while written < records:
        seq, k = divmod(run, keys)
        for record in run_records(names[k], ids[k], seq, START + run * 0.01, value):
            data, partition = codec.encode(record), writer.partition_of(ids[k])
            while True:
                try:
                    raw.produce(topic, data, ids[k].encode(), partition=partition)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    raw.poll(0.5)
            written += 1
            if written % 1000 == 0:
                raw.poll(0)
        run += 1
    raw.flush(60)
    writer.close()
    tool = config.model_copy(update={"create_topic": False, "recovery_cache_bytes": 0})
    journal = Journal(tool, codec, NAMESPACE, None)
    with tempfile.TemporaryDirectory() as tmp:
        ours_s, base_s = [], []
        for n in range(3):
            gc.collect()
            start = time.perf_counter()
            read, _ = build(journal, Path(tmp) / f"index-{n}.sqlite")
            ours_s.append(time.perf_counter() - start)
            assert read == written
            reader = KafkaStore(config)
            gc.collect()
            start = time.perf_counter()
            got = sum(len(reader.read_key(NAMESPACE, OPERATOR, k, None)) for k in ids)
            base_s.append(time.perf_counter() - start)
            reader.close()
            assert got == written
    o, b = written / statistics.median(ours_s), written / statistics.median(base_s)
    print(
        f"ui: indexed {written} Kafka records at {o:,.0f}/s (rounds "
        f"{[round(x, 2) for x in ours_s]} s); recovery read {b:,.0f}/s (rounds "
        f"{[round(x, 2) for x in base_s]} s)"
    )
    return entry("ui.index.kafka", "records/s", o, b, 0.5)


BENCHMARKS = {
    "ui.runs.first_page": lambda ctx: bench_first_page(),
    "ui.index.kafka": lambda ctx: bench_index_kafka(ctx.kafka),
}


if __name__ == "__main__":  # quick runs: python -m benchmarks.bench_ui first_page|kafka
    which = sys.argv[1] if len(sys.argv) > 1 else "first_page"
    if which == "first_page":
        print(bench_first_page(int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000))
    else:
        with BenchContext() as context:
            print(bench_index_kafka(sys.argv[2] if len(sys.argv) > 2 else context.kafka))
