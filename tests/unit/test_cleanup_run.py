"""Continuous cleanup (``actionjournal cleanup run``, ``CleanupLoop``) on SQLite.

Beside a LocalRunner job that keeps snapshotting, the cleaner (a real child process) keeps
the journal down to what the retained snapshot needs; a restore from that snapshot repeats
no call (counted by the called HTTP service) and an older one is refused. Stop signals
during a round leave a journal the next round finishes. The same loop on Kafka is in
tests/integration/test_cleanup_run_kafka.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import msgspec
import pytest
from prometheus_client.parser import text_string_to_metric_families

from actionjournal import (
    Agent,
    CleanupBoundaryError,
    ConfigurationError,
    InputEvent,
    LocalRunner,
    OutputEvent,
    action,
)
from actionjournal.operator.local import KeySnapshot, Snapshot
from actionjournal.stores import FlussStoreConfig, SqliteStore, SqliteStoreConfig
from actionjournal.testing import CountingService, call_service
from actionjournal.tools.cleanup import FLINK_METADATA_MAGIC, CleanupLoop, WrongJobError
from actionjournal.tools.cleanup.plan import make_plan
from actionjournal.tools.cleanup.state import load_snapshot
from actionjournal.tools.cli import main as cli
from tests import cleanup_scenario as sc

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
CHILD = Path(__file__).parent.parent / "cleanup_run_child.py"
TIMEOUT_S = 60.0


@pytest.fixture
def journal(tmp_path):
    return sc.build_sqlite(tmp_path)


def sqlite_args(path):
    return ["--store", "sqlite", "--path", str(path)]


def rows(path) -> list[tuple[int, str, int]]:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT pos, key_id, seq FROM journal ORDER BY pos").fetchall()
    finally:
        db.close()


def appended(path) -> int:
    """Rows ever appended (positions are AUTOINCREMENT from 1)."""
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'journal'").fetchone()[0]
    finally:
        db.close()


def wait_until(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.05)


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def snapshot_keys(path: Path) -> list[KeySnapshot]:
    return msgspec.msgpack.decode(path.read_bytes(), type=Snapshot).keys


def sample(port: int, name: str, **labels: str) -> float:
    return scrape(port).get((name, tuple(sorted(labels.items()))), 0.0)


class Cleaner:
    """``actionjournal cleanup run`` in a child process; its stdout lines as they come."""

    def __init__(self, argv: list[str], child: list[str] | None = None) -> None:
        command = child or [sys.executable, "-m", "actionjournal.tools.cli"]
        self.proc = subprocess.Popen(
            [*command, "cleanup", "run", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def metrics_port(self) -> int:
        found: list[int] = []

        def said() -> bool:
            found.extend(
                int(m.group(1))
                for line in self.lines
                if (m := re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", line))
            )
            return bool(found) or self.proc.poll() is not None

        wait_until(said, "the cleaner says where its metrics are")
        assert found, self.stop()
        return found[0]

    def stop(self, signum: int = signal.SIGTERM) -> tuple[int, str]:
        """Send ``signum``; the exit code and stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        try:
            code = self.proc.wait(timeout=TIMEOUT_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self._reader.join(timeout=10)
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read()

    def rounds(self) -> list[str]:
        return [line for line in self.lines if re.search(r"\bround \d+", line)]


class Steps(Agent):
    """Two durable calls per input, to the counting service."""

    uid = "steps"

    def __init__(self, url: str) -> None:
        self.url = url

    @action(InputEvent)
    def handle(self, event, ctx):
        fetched = ctx.durable_execute(call_service, self.url, "fetch", event.input)
        stored = ctx.durable_execute(call_service, self.url, "store", fetched)
        ctx.send_event(OutputEvent(stored))


N_INPUTS = 250
KEYS = 4
SNAPSHOT_EVERY = 20  # the last snapshot at 240, with input 240 in flight; 10 inputs after it
INPUTS = [(f"k{i % KEYS}", i) for i in range(N_INPUTS)]


@pytest.mark.slow
def test_cleanup_run_beside_a_job_keeps_the_journal_to_what_its_snapshot_needs(tmp_path):
    path, snapshot, old = tmp_path / "journal.db", tmp_path / "job.snapshot", tmp_path / "old"
    with CountingService() as service:
        cleaner = Cleaner(
            [
                *sqlite_args(path),
                "--snapshot",
                str(snapshot),
                "--every",
                "1s",
                "--metrics-port",
                "0",
            ]
        )
        try:
            port = cleaner.metrics_port()
            # The job has not started: no journal yet. The round says so and the loop goes on.
            wait_until(
                lambda: sample(port, "actionjournal_cleanup_rounds_total", result="failed") >= 1,
                "a round fails for want of a journal",
            )

            async def job() -> float:
                runner = LocalRunner(Steps(service.url), SqliteStore(path))
                feed = {"snapshot_path": snapshot, "snapshot_every": SNAPSHOT_EVERY, "pace": 0.01}
                await runner.run(INPUTS[:60], **feed)
                shutil.copy(snapshot, old)  # a snapshot the job replaces: no longer retained
                await asyncio.to_thread(
                    wait_until,
                    lambda: sample(port, "actionjournal_cleanup_records_deleted_total") > 0,
                    "a round deletes while the job runs",
                )
                await runner.run(INPUTS[60:], **feed)
                return time.time()

            ended = asyncio.run(job())
            # Two rounds after the job's last snapshot: the first may have planned for an older one.
            total = lambda: sum(  # noqa: E731
                sample(port, "actionjournal_cleanup_rounds_total", result=r)
                for r in ("deleted", "nothing", "failed")
            )
            after_job = total()
            wait_until(lambda: total() >= after_job + 2, "two rounds after the job stopped")
            metrics = scrape(port)
        finally:
            code, err = cleaner.stop(signal.SIGTERM)  # between rounds, or abandoning one
        assert code == 0, err
        assert "stopped by SIGTERM" in cleaner.lines[-1]
        assert err == ""
        assert service.executions() == 2 * N_INPUTS

        # The journal holds what the retained snapshot needs, and no more: planning against it
        # finds nothing left to delete, and most of what the job wrote is gone.
        store = SqliteStore(path)
        state = load_snapshot(snapshot, store)
        plan = make_plan(store, SqliteStoreConfig(path=str(path)), "default", "steps", state)
        assert plan.totals.records_deleted == 0
        kept, written = len(rows(path)), appended(path)
        assert kept < written / 4, (kept, written)
        # The metrics count exactly what went; every line is a round or the start and the end.
        m = {name: v for (name, labels), v in metrics.items() if not labels}
        assert m["actionjournal_cleanup_records_deleted_total"] == written - kept
        assert metrics["actionjournal_cleanup_rounds_total", (("result", "deleted"),)] >= 2
        assert metrics["actionjournal_cleanup_rounds_total", (("result", "failed"),)] >= 1
        assert m["actionjournal_cleanup_consecutive_failures"] == 0
        assert ended < m["actionjournal_cleanup_last_success_timestamp_seconds"] <= time.time()
        assert 0 < m["actionjournal_cleanup_last_error_timestamp_seconds"] < ended
        assert re.search(r"round 1 failed: no SQLite journal", cleaner.rounds()[0])
        assert all(
            re.search(r"round \d+(: deleted| failed|: nothing to delete| abandoned)", line)
            for line in cleaner.rounds()
        ), cleaner.rounds()
        assert len(cleaner.lines) == len(cleaner.rounds()) + 2

        async def restore(snap: Path) -> LocalRunner:
            runner = LocalRunner.restore(snap, Steps(service.url), SqliteStore(path))
            await runner.run_source(INPUTS)
            return runner

        in_flight = sum(len(k.state.pending) for k in snapshot_keys(snapshot))
        restored = asyncio.run(restore(snapshot))
        assert service.executions() == 2 * N_INPUTS, "a call ran again after cleanup"
        assert set(service.counts.values()) == {1}
        assert in_flight >= 1  # the snapshot's runs in flight and those after it: replayed
        assert len(restored.outputs) == in_flight + N_INPUTS - 240
        with pytest.raises(CleanupBoundaryError, match="cleanup deleted"):
            asyncio.run(restore(old))
        assert service.executions() == 2 * N_INPUTS


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_mid_round_leaves_what_the_next_round_finishes(journal, tmp_path, signum):
    path, scenario = journal
    before = rows(path)
    held = tmp_path / "held"
    cleaner = Cleaner(
        [*sqlite_args(path), "--snapshot", str(scenario.s), "--every", "1s"],
        child=[sys.executable, str(CHILD), str(held)],
    )
    try:
        wait_until(lambda: held.exists() or cleaner.proc.poll() is not None, "a round deletes")
    finally:
        code, err = cleaner.stop(signum)
    name = signal.Signals(signum).name
    assert code == 0, err
    assert f"round 1 abandoned at {name}" in "\n".join(cleaner.lines)
    # The boundary was journaled before any delete; nothing was deleted.
    after = rows(path)
    assert after[: len(before)] == before and len(after) == len(before) + 1

    assert cli(["cleanup", "run", *sqlite_args(path), "--snapshot", str(scenario.s), "--once"]) == 0
    assert len(rows(path)) < len(before)
    sc.check_restores(lambda: SqliteStore(path), scenario, "cleanup deleted")


def test_rounds_delete_then_say_nothing_and_show_in_metrics(journal, caplog):
    path, scenario = journal
    caplog.set_level(logging.INFO, "actionjournal.tools.cleanup.loop")
    loop = CleanupLoop(SqliteStoreConfig(path=str(path)), snapshot=scenario.s, every_s=0.01)
    port = loop.serve_metrics()
    before = len(rows(path))
    first = loop.run_round()
    assert first.result == "deleted" and first.records_deleted > 0
    assert len(rows(path)) == before - first.records_deleted + 1  # + its boundary
    second = loop.run_round()
    assert second.result == "nothing" and second.records_deleted == 0
    assert "nothing to delete for snapshot" in second.message
    assert "recovery marker" in second.message  # why: the plan's reason
    assert len(rows(path)) == before - first.records_deleted + 1
    assert [r.getMessage() for r in caplog.records] == [first.message, second.message]
    served = scrape(port)
    for name, labels, value in [
        ("actionjournal_cleanup_rounds_total", {"result": "deleted"}, 1),
        ("actionjournal_cleanup_rounds_total", {"result": "nothing"}, 1),
        ("actionjournal_cleanup_rounds_total", {"result": "failed"}, 0),
        ("actionjournal_cleanup_records_deleted_total", {}, first.records_deleted),
        ("actionjournal_cleanup_bytes_deleted_total", {}, first.bytes_deleted),
        ("actionjournal_cleanup_runs_deleted_total", {}, first.runs_deleted),
        ("actionjournal_cleanup_records_kept", {}, len(rows(path))),
        ("actionjournal_cleanup_bytes_kept", {}, second.bytes_kept),
        ("actionjournal_cleanup_last_success_timestamp_seconds", {}, second.ended_at),
        ("actionjournal_cleanup_last_error_timestamp_seconds", {}, 0),
        ("actionjournal_cleanup_consecutive_failures", {}, 0),
    ]:
        assert loop.metrics.value(name, **labels) == pytest.approx(value), name
        assert served[name, tuple(sorted(labels.items()))] == pytest.approx(value), name
    assert first.bytes_deleted > 0 and first.runs_deleted == 4


def test_a_failed_round_says_why_and_the_next_one_goes_on(journal, tmp_path, caplog):
    path, scenario = journal
    snapshot = tmp_path / "later.snapshot"  # the job has not written it yet
    loop = CleanupLoop(SqliteStoreConfig(path=str(path)), snapshot=snapshot, every_s=0.01)
    failed = loop.run_round()
    assert failed.result == "failed" and not failed.final
    assert failed.message == (
        f"round 1 failed: snapshot {snapshot} does not exist; the next round in 0.01 s tries again"
    )
    assert loop.metrics.value("actionjournal_cleanup_consecutive_failures") == 1
    assert loop.metrics.value(
        "actionjournal_cleanup_last_error_info", error=f"snapshot {snapshot} does not exist"
    )
    assert loop.metrics.value("actionjournal_cleanup_last_error_timestamp_seconds") == (
        pytest.approx(failed.ended_at)
    )
    shutil.copy(scenario.s, snapshot)
    assert loop.run_round().result == "deleted"
    assert loop.metrics.value("actionjournal_cleanup_consecutive_failures") == 0
    assert loop.metrics.value("actionjournal_cleanup_rounds_total", result="failed") == 1
    # run() goes on past failed rounds: it raises only for what no later round can change.
    snapshot.unlink()
    last = loop.run(max_rounds=2)
    assert last is not None and last.result == "failed" and loop.rounds == 4


def test_a_snapshot_of_another_journal_or_job_stops_the_loop(journal, tmp_path, capsys):
    path, scenario = journal
    other = tmp_path / "other"
    other.mkdir()
    store = SqliteStore(other / "j.db")
    foreign = sc.build(store, other).s  # the same job's state, taken with another journal
    store.close()
    before = rows(path)
    for snapshot, extra, says in [
        (foreign, [], "was taken with another journal"),
        (scenario.s, ["--namespace", "billing"], "not of namespace 'billing'"),
        (scenario.s, ["--operator-uid", "agent-two"], "not of operator 'agent-two'"),
    ]:
        argv = [*sqlite_args(path), "--snapshot", str(snapshot), "--every", "10ms", *extra]
        assert cli(["cleanup", "run", *argv]) == 1  # stops by itself: no --max-rounds
        out, err = capsys.readouterr()
        assert err.startswith("error: ") and says in err and len(err.splitlines()) == 1
        assert re.search(r"round 1 failed: .*stopping: no later round can pass", out), out
        assert "round 2" not in out
    assert rows(path) == before
    loop = CleanupLoop(SqliteStoreConfig(path=str(path)), snapshot=foreign)
    with pytest.raises(WrongJobError, match="another journal"):
        loop.run()
    assert loop.rounds == 1 and rows(path) == before


def checkpoint(where: Path, age_s: float) -> Path:
    """A retained checkpoint or savepoint whose _metadata was written ``age_s`` ago."""
    where.mkdir(parents=True)
    metadata = where / "_metadata"
    metadata.write_bytes(FLINK_METADATA_MAGIC.to_bytes(4, "big") + b"state")
    written = time.time() - age_s
    os.utime(metadata, (written, written))
    return metadata


def test_checkpoint_rounds_plan_for_the_oldest_retained_checkpoint_or_savepoint(journal, tmp_path):
    path, _ = journal
    checkpoints, savepoints = tmp_path / "checkpoints", tmp_path / "savepoints"
    checkpoints.mkdir()
    savepoints.mkdir()
    loop = CleanupLoop(
        SqliteStoreConfig(path=str(path)),
        checkpoints=[checkpoints, savepoints],
        safety_margin_s=0,
    )
    before = rows(path)
    empty = loop.run_round()
    assert empty.result == "nothing" and "no completed Flink checkpoint" in empty.message
    checkpoint(checkpoints / "job" / "chk-1", age_s=86400)  # before the journal was written
    assert loop.run_round().result == "nothing"
    # Flink retains a newer checkpoint now, but a savepoint kept for rollbacks is old: it bounds.
    shutil.rmtree(checkpoints / "job" / "chk-1")
    checkpoint(checkpoints / "job" / "chk-2", age_s=-60)
    savepoint = checkpoint(savepoints / "savepoint-1a2b3c-0123456789ab", age_s=86400)
    bounded = loop.run_round()
    assert bounded.result == "nothing" and str(savepoint.resolve()) in bounded.message
    assert rows(path) == before
    shutil.rmtree(savepoints / "savepoint-1a2b3c-0123456789ab")
    deleted = loop.run_round()
    assert deleted.result == "deleted" and "chk-2/_metadata" in deleted.message
    assert deleted.records_deleted == len(before) - len(rows(path)) + 1


def test_stop_ends_run_between_rounds():
    loop = CleanupLoop(SqliteStoreConfig(path="/nonexistent/j.db"), snapshot="s", every_s=3600)
    threading.Timer(0.2, loop.stop).start()
    started = time.monotonic()
    last = loop.run()
    assert time.monotonic() - started < 60
    assert last is not None and last.result == "failed" and loop.rounds == 1
    assert loop.stopped_by == "stop()"


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"store": FlussStoreConfig(bootstrap_servers="h:1")}, "does not apply to Fluss"),
        ({"store": "journal.db"}, "is not a store config"),
        ({}, "snapshot=FILE (a LocalRunner job) or checkpoints=[DIR, ...]"),
        ({"snapshot": "s", "checkpoints": ["c"]}, "not both"),
        ({"snapshot": "s", "every_s": 0}, "every_s=0: Input should be greater than 0"),
        ({"snapshot": "s", "safety_margin_s": float("nan")}, "safety_margin_s=nan"),
        ({"snapshot": "s", "namespace": ""}, "namespace=''"),
    ],
)
def test_bad_options_are_refused_when_the_loop_is_made(options, says):
    options = {"store": SqliteStoreConfig(path="j.db"), **options}
    with pytest.raises(ConfigurationError, match=re.escape(says)):
        CleanupLoop(**options)


def test_the_documented_import_path():
    import actionjournal.tools.cleanup as cleanup

    for name in ("CleanupLoop", "CleanupMetrics", "RoundAbandoned", "RoundResult", "WrongJobError"):
        assert name in cleanup.__all__ and getattr(cleanup, name).__name__ == name
