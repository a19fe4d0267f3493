"""Write the golden compatibility files of the current format version.

    .venv/bin/python -m tests.compat.generate              # tests/compat/<FORMAT_VERSION>/
    .venv/bin/python -m tests.compat.generate --only records,state --force
    .venv/bin/python -m tests.compat.generate --only records --add   # new record types only

Run it when ``FORMAT_VERSION`` changes (records, markers, keyed state or
snapshot layout): it writes a new directory and never touches older ones,
which must keep passing (docs/compatibility.md). It refuses to overwrite an
existing directory without ``--force``; regenerating a released version's
files hides exactly the breakage these tests exist to catch. A record type added
within a format version gets its golden files with ``--add``, which writes only
samples whose files are missing and leaves every existing file as it is.

Parts (``--only``):

``records``  every journal record type, encoded unsigned and signed, and values
             (plain data, a pydantic model, an error with its cause chain)
``state``    recovery markers and per-key state (``KeyState``) as Flink keyed state holds them
``local``    a LocalRunner snapshot with pending inputs, its journal, and what restoring it gave
``flink``    a PyFlink savepoint taken with runs in flight, its journal, and what restoring it
             gave (needs PyFlink; takes a minute)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from actionjournal import LocalRunner
from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.error_records import capture_error
from actionjournal.durable.errors import JournalWriteError
from actionjournal.durable.records import (
    CONTROL_KEY,
    FORMAT_VERSION,
    ActionCompleted,
    CallAttemptFailed,
    CallFinished,
    CallsDropped,
    CallStarted,
    CleanupBoundary,
    EventData,
    JournalRecord,
    Marker,
    MemoryOp,
    Quarantined,
    RunCompleted,
    RunFailed,
    RunInput,
    StoreIdentity,
    UpgradeSkipped,
    WaitOp,
)
from actionjournal.durable.values import ValueCodec
from actionjournal.operator.engine import KeyState, PendingInput
from actionjournal.stores.sqlite import SqliteStore
from actionjournal.testing.service import CountingService
from tests.compat import restore
from tests.compat.agents import CompatAgent, Receipt, inputs, sqlite

HERE = Path(__file__).resolve().parent
SIGNING_KEY = b"actionjournal-compat-signing-key"
PARTS = ("records", "state", "local", "flink")
AT = 1_767_225_600.0  # 2026-01-01T00:00:00Z: timestamps are fixed so files are reproducible


# -- records ---------------------------------------------------------------------------------


def sample_values(values: ValueCodec) -> dict[str, bytes]:
    """ValueCodec encodings of the kinds of values a journal holds."""
    receipt = Receipt(order=3, amount=30)
    return {
        "plain": values.encode(
            {"text": "ünïcode", "n": 7, "x": 1.5, "ok": True, "none": None, "list": [1, "2"]}
        ),
        "none": values.encode(None),
        "bytes": values.encode(b"\x00\xff"),
        "tuple": values.encode((1, 2)),
        "pydantic": values.encode(receipt),
        "nested": values.encode({"r": [receipt], "big": 2**63 - 1, "neg": -(2**63)}),
    }


def sample_error(values: ValueCodec):
    try:
        try:
            raise KeyError("missing")
        except KeyError as inner:
            raise ValueError("bad order", 42) from inner
    except ValueError as exc:
        return capture_error(values, exc)


def sample_records(values: ValueCodec) -> dict[str, JournalRecord]:
    head = {"namespace": "compat", "operator_uid": "compat-agent", "epoch": 2}
    run = {**head, "key_id": "a1b2c3d4e5f60718293a4b5c6d7e8f90", "seq": 5}
    call = {
        "action_id": "action-0001",
        "index": 1,
        "call_id": "call-0001",
        "function_id": "tests.compat.agents:remote",
        "durable_id": None,
        "arg_digest": "digest-0001",
    }
    receipt = values.encode(Receipt(order=5, amount=50))
    return {
        "CallStarted": CallStarted(**run, **call, attempt=2, at=AT),
        "CallFinished.value": CallFinished(
            **run, **call, value=receipt, error=None, at=AT, duration=0.25
        ),
        "CallFinished.none": CallFinished(
            **run,
            **{**call, "durable_id": "pay-5"},
            value=values.encode(None),
            error=None,
            at=AT,
            duration=0.0,
            reconciled=True,
        ),
        "CallFinished.error": CallFinished(
            **run, **call, value=None, error=sample_error(values), at=AT, duration=1.0
        ),
        "CallsDropped": CallsDropped(**run, action_id="action-0001", index=2),
        "ActionCompleted": ActionCompleted(
            **run,
            action_id="action-0001",
            action="charge",
            memory_ops=[
                MemoryOp("short_term", "set", "order.last", receipt),
                MemoryOp("short_term", "delete", "order.old"),
                MemoryOp("sensory", "new_object", "scratch"),
            ],
            outputs=[EventData("event-0001", "charged", values.encode({"receipt": 1}))],
            at=AT,
        ),
        "ActionCompleted.waits": ActionCompleted(
            **run,
            action_id="action-0002",
            action="propose",
            memory_ops=[],
            outputs=[],
            at=AT,
            trigger_event_id="event-0000",
            waits=[
                WaitOp(
                    "schedule",
                    "followup",
                    AT + 3600,
                    EventData("", "followup", values.encode({"order": 5})),
                    token="token-0001",
                ),
                WaitOp("cancel", "timer-0002", 0.0),
                WaitOp(
                    "expect",
                    "signal-0001",
                    AT + 86400,
                    EventData("", "escalate", values.encode({"order": 5})),
                    name="approval",
                ),
            ],
        ),
        "RunInput": RunInput(
            **run,
            kind="answer",
            id="signal-0001",
            token="",
            name="approval",
            due=AT + 86400,
            delivered=True,
            at=AT,
            event_type="signal_received",
            value=values.encode({"approved": True}),
        ),
        "RunCompleted": RunCompleted(**run, at=AT, input_digest="input-digest-5"),
        "UpgradeSkipped": UpgradeSkipped(
            **head,
            key_id=CONTROL_KEY,
            seq=0,
            old_backend="kafka",
            old_name="old-topic",
            old_uid="OldTopicId",
            old_epoch=1,
            reason="recovery marker references ...",
            at=AT,
        ),
        "CleanupBoundary": CleanupBoundary(
            **head, key_id=CONTROL_KEY, seq=0, partition=3, position=1234, at=AT
        ),
        "RunFailed": RunFailed(
            **run,
            error=sample_error(values),
            at=AT,
            input_digest="input-digest-5",
            final=True,
            input=values.encode({"order": 5}),
            key=values.encode("customer-5"),
        ),
        "CallAttemptFailed": CallAttemptFailed(
            **run, **call, attempt=1, error=sample_error(values), at=AT, retry_at=AT + 2.0
        ),
        "Quarantined": Quarantined(
            **head,
            key_id="key-5",
            seq=0,
            partition=3,
            position=1200,
            size=57,
            reason="record payload does not decode",
            at=AT,
        ),
    }


def write_records(out: Path, add: bool = False) -> None:
    """Every sample record; with ``add``, only those without a file yet (others untouched)."""
    values = ValueCodec()
    directory = out / "records"
    directory.mkdir(parents=True, exist_ok=add)
    previous = json.loads((out / "records.json").read_text()) if add else {"records": []}
    manifest = previous["records"]
    for name, record in sample_records(values).items():
        for signed, codec in (("unsigned", RecordCodec()), ("signed", RecordCodec(SIGNING_KEY))):
            file = f"{name}.{signed}.bin"
            if (directory / file).exists():
                continue
            (directory / file).write_bytes(codec.encode(record))
            manifest.append(
                {
                    "file": f"records/{file}",
                    "type": type(record).__name__,
                    "signed": signed == "signed",
                    "fields": msgspec.to_builtins(record),
                }
            )
    if add:
        write_json(out / "records.json", {**previous, "records": manifest})
        return
    samples = []
    for name, data in sample_values(values).items():
        file = f"value.{name}.bin"
        (directory / file).write_bytes(data)
        decoded = restore.describe(values.decode(data))
        samples.append({"file": f"records/{file}", "name": name, "decodes_to": decoded})
    error = sample_error(values)
    write_json(
        out / "records.json",
        {
            "signing_key": SIGNING_KEY.decode(),
            "records": manifest,
            "values": samples,
            "error": {"type": error.type, "message": error.message, "cause": error.cause.type},
        },
    )


# -- keyed state and markers -----------------------------------------------------------------


def sample_state(values: ValueCodec) -> dict[str, Any]:
    sqlite_marker = Marker(StoreIdentity("sqlite", "/var/lib/job/journal.db", "f" * 32), 0, 0, 17)
    kafka_marker = Marker(StoreIdentity("kafka", "journal-topic", "A" * 22), 3, 5, 9)
    memory = values.encode({"count": 2, "last": Receipt(order=4, amount=40)})
    return {
        "marker.sqlite": sqlite_marker,
        "marker.kafka": kafka_marker,
        "keystate.empty": KeyState(),
        "keystate.pending": KeyState(
            next_seq=6,
            pending=[PendingInput(4, values.encode('{"k": 1, "i": 4}')), PendingInput(5, b"\xc0")],
            memory=memory,
            marker=kafka_marker,
        ),
        "keystate.idle": KeyState(next_seq=3, pending=[], memory=memory, marker=sqlite_marker),
    }


def write_state(out: Path) -> None:
    directory = out / "state"
    directory.mkdir(parents=True)
    manifest = []
    for name, obj in sample_state(ValueCodec()).items():
        file = f"{name}.bin"
        (directory / file).write_bytes(msgspec.msgpack.encode(obj))
        fields = msgspec.to_builtins(obj)
        manifest.append({"file": f"state/{file}", "type": type(obj).__name__, "fields": fields})
    write_json(out / "state.json", {"state": manifest})


# -- a LocalRunner snapshot ------------------------------------------------------------------


class _Severable:
    """A store that refuses appends once ``dead``: the process 'died' right after a snapshot."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store
        self.dead = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def append(self, record: JournalRecord) -> Marker:
        if self.dead:
            raise JournalWriteError("the generating process is gone")
        return self._store.append(record)


def write_local(out: Path, work: Path) -> None:
    """Runs for 3 inputs finish; 3 more are in flight (charged, ship held at the service) when
    the snapshot is taken; 3 more inputs come after it. Restoring replays charge, reconciles
    ship with the service and executes notify."""
    directory = out / "local"
    directory.mkdir(parents=True)
    journal = work / "local-journal.db"
    source = [(i % 3, element) for i, element in enumerate(inputs(9))]
    with CountingService() as service:
        store = SqliteStore(journal)
        severable = _Severable(store)

        async def go() -> None:
            runner = LocalRunner(CompatAgent(service.url), severable)
            for key, value in source[:3]:
                runner.submit(key, value)
            await runner.drain()
            service.hold("ship")
            for key, value in source[3:6]:
                runner.submit(key, value)
            deadline = time.monotonic() + 30
            while service.waiting() < 3:
                assert time.monotonic() < deadline, "runs did not reach the held call"
                await asyncio.sleep(0.01)
            runner.snapshot(directory / "snapshot")
            severable.dead = True
            service.release("ship")
            with contextlib.suppress(Exception):
                await runner.drain()

        asyncio.run(go())
        store.close()
        service.wait_idle()
        restore.dump_service(service, directory / "service.json")
    compact(journal, directory / "journal.db")
    expected = {
        "journal_name": str(journal.resolve()),
        "source": source,
        "pending_inputs": 3,
    }
    write_json(directory / "expected.json", expected)
    restored = restore.restore_local(directory, work / "local-restore")
    write_json(directory / "expected.json", {**expected, "restore": restored.summary()})


# -- a PyFlink savepoint ---------------------------------------------------------------------


def write_flink(out: Path, work: Path) -> None:
    """A job at parallelism 1 whose runs are held at ``ship`` is stopped with a savepoint while
    the paced source is part way through; restoring it finishes the pending runs and the rest."""
    from actionjournal.flink.function import stop_with_savepoint
    from actionjournal.testing.flink import local_env
    from tests.compat.agents import AppendTo

    directory = out / "flink"
    directory.mkdir(parents=True)
    journal = work / "flink-journal.db"
    source, rate = inputs(12), 1.5
    with CountingService() as service:
        service.hold("ship")
        env = local_env(work / "flink-checkpoints", parallelism=1)
        factory = functools.partial(sqlite, str(journal))
        sink = AppendTo(str(work / "flink-outputs.jsonl"))
        restore.build_flink_job(env, service.url, source, rate, factory, sink)
        client = env.execute_async("compat-generate")
        deadline = time.monotonic() + 180
        while service.waiting() < 3:  # every key has a run in flight, held at ship
            assert time.monotonic() < deadline, "runs did not reach the held call"
            time.sleep(0.05)
        savepoint = Path(stop_with_savepoint(client, work / "flink-savepoints").split(":", 1)[1])
        service.release("ship")
        service.wait_idle(quiet=1.0)
        restore.dump_service(service, directory / "service.json")
    shutil.copytree(savepoint, directory / "savepoint")
    compact(journal, directory / "journal.db")
    expected = {"journal_name": str(journal.resolve()), "source": source, "rate": rate}
    write_json(directory / "expected.json", expected)
    restored = restore.restore_flink(directory, work / "flink-restore")
    write_json(directory / "expected.json", {**expected, "restore": restored.summary()})


# -- helpers ---------------------------------------------------------------------------------


def compact(journal: Path, dest: Path) -> None:
    """A self-contained copy of a SQLite journal: WAL folded in, rollback journal mode."""
    db = sqlite3.connect(journal)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA journal_mode=DELETE")
    db.close()
    db = sqlite3.connect(journal)
    db.execute(f"VACUUM INTO '{dest}'")
    db.close()


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts")
    parser.add_argument("--force", action="store_true", help="replace existing parts")
    parser.add_argument(
        "--add", action="store_true", help="records: write only the samples that have no file"
    )
    args = parser.parse_args(argv)
    if args.add:
        if args.only != "records":
            parser.error("--add goes with --only records")
        write_records(HERE / str(FORMAT_VERSION), add=True)
        return 0
    parts = [p for p in args.only.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    out = HERE / str(FORMAT_VERSION)
    for part in parts:
        existing = [out / part, out / f"{part}.json"]
        if any(p.exists() for p in existing) and not args.force:
            print(
                f"{out.relative_to(HERE.parent.parent)} already has {part!r}: golden files of a "
                "format version are not regenerated (pass --force only for a version that was "
                "never released)",
                file=sys.stderr,
            )
            return 1
        for p in existing:
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="aj-compat-") as tmp:
        work = Path(tmp)
        for part in parts:
            started = time.monotonic()
            if part == "records":
                write_records(out)
            elif part == "state":
                write_state(out)
            elif part == "local":
                write_local(out, work)
            else:
                write_flink(out, work)
            print(f"{part}: written to {out / part} in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
