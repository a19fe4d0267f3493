"""Group commit on SQLite (issue 21 item 1): concurrent appends share transactions, and a
run's last ActionCompleted goes in the RunCompleted's commit.

Commits are counted in the WAL file itself: with ``synchronous=FULL`` each commit is one
commit frame and one fsync of the WAL. Durability when an append returns is tested with a
real SIGKILL in tests/integration/test_crash_sqlite_appends.py.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import struct
import threading
import time
from pathlib import Path

import pytest

from actionjournal import Agent, Event, InputEvent, LocalRunner, OutputEvent, action
from actionjournal.durable.records import ActionCompleted, CallFinished, RunCompleted
from actionjournal.stores import SqliteStore
from actionjournal.testing.crash import CrashingStore

THREADS = 64


def wal_commits(db: Path) -> int:
    """Commit frames in the WAL of ``db`` (frames of the current WAL generation only)."""
    data = Path(f"{db}-wal").read_bytes()
    page_size = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    commits = 0
    for offset in range(32, len(data) - 24, 24 + page_size):
        header = data[offset : offset + 24]
        if header[8:16] != salts:
            break  # a frame left from before the WAL was restarted
        commits += struct.unpack(">I", header[4:8])[0] != 0
    return commits


def rc(key: str, seq: int) -> RunCompleted:
    return RunCompleted("ns", "op", 0, key, seq, at=time.time(), input_digest="d" * 40)


def test_concurrent_appends_of_different_keys_share_commits(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    store = SqliteStore(db)
    before = wal_commits(db)
    # Another connection holds the write lock, so the first commit waits and every other
    # thread's append queues up meanwhile: a store without group commit makes 64 commits.
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    calling = threading.Semaphore(0)
    markers = {}

    def append(n: int) -> None:
        calling.release()
        markers[n] = store.append(rc(f"key-{n}", 0))

    threads = [threading.Thread(target=append, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for _ in threads:
        calling.acquire()
    time.sleep(0.2)  # let the last callers reach the queue (the count below does not need it)
    blocker.execute("ROLLBACK")
    blocker.close()
    for t in threads:
        t.join()
    commits = wal_commits(db) - before
    assert len({m.position for m in markers.values()}) == THREADS
    for n in range(THREADS):
        assert [r.seq for r in store.read_key("ns", "op", f"key-{n}", None)] == [0]
    assert 1 <= commits <= THREADS // 8, f"{THREADS} concurrent appends took {commits} commits"
    store.close()


def test_append_all_is_one_commit_in_order(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    store = SqliteStore(db)
    before = wal_commits(db)
    markers = store.append_all([rc("k", 0), rc("k", 1), rc("k", 2)])
    assert wal_commits(db) - before == 1
    assert [m.position for m in markers] == sorted(m.position for m in markers)
    assert [r.seq for r in store.read_key("ns", "op", "k", None)] == [0, 1, 2]
    store.close()


def lookup(text: str) -> str:
    return text.upper()


class OneStep(Agent):
    uid = "one-step"

    @action(InputEvent)
    def answer(self, event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(lookup, event.input)))


class Asked(Event):
    TYPE = "asked"
    __slots__ = ()

    def __init__(self, text: str) -> None:
        super().__init__(self.TYPE, {"text": text})


class TwoSteps(Agent):
    """``ask`` starts ``answer``: ask's ActionCompleted must be durable before answer runs."""

    uid = "two-steps"

    def __init__(self, db: str) -> None:
        self.db = db
        self.seen_before_answer: list[str] = []

    @action(InputEvent)
    def ask(self, event, ctx):
        ctx.send_event(Asked(event.input))

    @action(Asked)
    def answer(self, event, ctx):
        reader = sqlite3.connect(self.db)
        rows = reader.execute("SELECT body FROM journal ORDER BY pos").fetchall()
        reader.close()
        self.seen_before_answer = [bytes(body).hex() for (body,) in rows]
        ctx.send_event(OutputEvent(ctx.durable_execute(lookup, event.attributes["text"])))


def run_one(agent: Agent, store) -> LocalRunner:
    runner = LocalRunner(agent, store)
    asyncio.run(runner.run([("user-1", "hello")]))
    assert [out.output for _, out in runner.outputs] == ["HELLO"]
    return runner


def journal_types(store: SqliteStore) -> list[str]:
    rows = store._db.execute("SELECT body FROM journal ORDER BY pos").fetchall()
    return [type(store.codec.decode(body)).__name__ for (body,) in rows]


def test_last_action_completed_shares_the_run_completed_commit(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    store = SqliteStore(db)
    before = wal_commits(db)
    run_one(OneStep(), store)
    assert journal_types(store) == ["CallFinished", "ActionCompleted", "RunCompleted"]
    assert wal_commits(db) - before == 2  # CallFinished; ActionCompleted + RunCompleted
    store.close()


def test_action_that_starts_another_is_durable_before_it_runs(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    store = SqliteStore(db)
    before = wal_commits(db)
    agent = TwoSteps(str(db))
    run_one(agent, store)
    decoded = [store.codec.decode(bytes.fromhex(body)) for body in agent.seen_before_answer]
    assert [(type(r).__name__, getattr(r, "action", "")) for r in decoded] == [
        ("ActionCompleted", "ask")
    ]
    assert journal_types(store) == [
        "ActionCompleted",
        "CallFinished",
        "ActionCompleted",
        "RunCompleted",
    ]
    assert wal_commits(db) - before == 3
    store.close()


def test_a_wrapping_store_sees_every_record_through_its_own_append(tmp_path: Path) -> None:
    """Crash tests wrap the store and forward the rest to it: the last ActionCompleted and
    the RunCompleted still go through the wrapper's append, one by one."""
    inner = SqliteStore(tmp_path / "journal.db")
    seen: list[type] = []

    class Watching(CrashingStore):
        def append(self, record):
            seen.append(type(record))
            return super().append(record)

    run_one(OneStep(), Watching(inner, None))
    assert seen == [CallFinished, ActionCompleted, RunCompleted]
    inner.close()


def test_append_all_longer_than_one_insert_is_still_one_commit(tmp_path: Path) -> None:
    """A batch of more rows than one INSERT statement takes is one transaction, the
    positions it returns those of its rows."""
    db = tmp_path / "journal.db"
    store = SqliteStore(db)
    store._rows = 2  # rows per INSERT statement: five records take three statements
    before = wal_commits(db)
    markers = store.append_all([rc("k", seq) for seq in range(5)])
    assert wal_commits(db) - before == 1
    rows = store._db.execute("SELECT pos, seq FROM journal ORDER BY pos").fetchall()
    assert [(m.position, seq) for seq, m in enumerate(markers)] == rows
    store.close()


class Interrupted(Exception):
    pass


def test_an_append_interrupted_while_it_waits_leaves_the_store_usable(tmp_path: Path) -> None:
    """A signal handler's exception ends a waiting append in the main thread; the commit
    under way then finds no one to hand the next commit to, and later appends go on."""
    db = tmp_path / "journal.db"
    store = SqliteStore(db)
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the first commit waits until it is rolled back
    leader = threading.Thread(target=store.append, args=(rc("leader", 0),), daemon=True)
    leader.start()
    while not (store._committing and not store._queue):  # the leader took its batch
        time.sleep(0.01)

    def interrupt(signum, frame):
        raise Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(Interrupted):
            store.append(rc("interrupted", 0))  # queued behind the leader's commit
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    blocker.execute("ROLLBACK")
    blocker.close()
    leader.join()
    later = threading.Thread(target=store.append, args=(rc("later", 0),), daemon=True)
    later.start()
    later.join(30)
    assert not later.is_alive(), "an append after the interrupted one never returned"
    assert [r.seq for r in store.read_key("ns", "op", "later", None)] == [0]
    store.close()


class HandedThenInterrupted:
    """A wake lock whose wait ends with an exception just after its appender was handed the
    next commit or woken in its turn (the moment a signal may also come)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waits = 0

    def acquire(self) -> bool:
        self.waits += 1
        if self.waits == 2:  # the appender's wait (the first holds the lock from the start)
            self.lock.acquire()  # until the hand-over releases it
            self.lock.release()  # an interrupted wait does not hold it
            raise Interrupted
        return self.lock.acquire()

    def release(self) -> None:
        self.lock.release()


def interrupt_the_main_threads_wait(monkeypatch) -> None:
    """Appends from the main thread wait on a :class:`HandedThenInterrupted` wake-up."""
    import actionjournal.stores.sqlite as sqlite_store

    class Waiter(sqlite_store._Waiter):
        def __post_init__(self) -> None:
            if threading.current_thread() is threading.main_thread():
                self.wake = HandedThenInterrupted()  # type: ignore[assignment]
            super().__post_init__()

    monkeypatch.setattr(sqlite_store, "_Waiter", Waiter)


def test_an_append_interrupted_when_handed_a_commit_makes_it(tmp_path, monkeypatch) -> None:
    interrupt_the_main_threads_wait(monkeypatch)
    db = tmp_path / "journal.db"
    store = SqliteStore(db)
    blocker = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")
    leader = threading.Thread(target=store.append, args=(rc("leader", 0),), daemon=True)
    leader.start()
    while not (store._committing and not store._queue):  # the leader took its batch
        time.sleep(0.01)
    threading.Timer(0.3, blocker.execute, args=("ROLLBACK",)).start()
    with pytest.raises(Interrupted):
        store.append(rc("interrupted", 0))  # handed the next commit, then interrupted
    leader.join()
    assert [r.seq for r in store.read_key("ns", "op", "interrupted", None)] == [0]
    later = threading.Thread(target=store.append, args=(rc("later", 0),), daemon=True)
    later.start()
    later.join(30)
    assert not later.is_alive(), "an append after the interrupted one never returned"
    blocker.close()
    store.close()


def queued_behind_a_blocked_commit(store: SqliteStore, blocker: sqlite3.Connection) -> None:
    """A leader's commit waits on ``blocker``'s write lock, and one more append is queued: it
    will be handed the next commit, so the appends queued after it are woken one by one."""
    blocker.execute("BEGIN IMMEDIATE")
    threading.Thread(target=store.append, args=(rc("leader", 0),), daemon=True).start()
    while not (store._committing and not store._queue):  # the leader took its batch
        time.sleep(0.01)
    threading.Thread(target=store.append, args=(rc("handed", 0),), daemon=True).start()
    while len(store._queue) < 1:
        time.sleep(0.01)


def append_once_queued(store: SqliteStore, queued: int, key: str) -> threading.Thread:
    """An append started once ``queued`` appends wait in the queue, so it queues after them."""

    def append() -> None:
        while len(store._queue) < queued:
            time.sleep(0.01)
        store.append(rc(key, 0))

    thread = threading.Thread(target=append, daemon=True)
    thread.start()
    return thread


def test_appends_after_an_interrupted_one_in_a_commit_are_woken(tmp_path: Path) -> None:
    """The appenders of a commit wake one another in turn; one whose wait was interrupted
    before its turn is skipped, and the one after it still returns."""
    db = tmp_path / "journal.db"
    store = SqliteStore(db)
    blocker = sqlite3.connect(db, isolation_level=None)
    queued_behind_a_blocked_commit(store, blocker)
    after = append_once_queued(store, 2, "after")  # behind the interrupted one

    def interrupt(signum, frame):
        raise Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(Interrupted):
            store.append(rc("interrupted", 0))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    blocker.execute("ROLLBACK")
    blocker.close()
    after.join(30)
    assert not after.is_alive(), "the append after the interrupted one never returned"
    assert [r.seq for r in store.read_key("ns", "op", "interrupted", None)] == [0]
    store.close()


def test_an_append_interrupted_when_woken_wakes_the_next(tmp_path, monkeypatch) -> None:
    """An appender whose wait ends with an exception just after its turn came still wakes
    the appender after it in the commit."""
    interrupt_the_main_threads_wait(monkeypatch)
    db = tmp_path / "journal.db"
    store = SqliteStore(db)
    blocker = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    queued_behind_a_blocked_commit(store, blocker)
    after = append_once_queued(store, 2, "after")
    threading.Timer(0.3, blocker.execute, args=("ROLLBACK",)).start()
    with pytest.raises(Interrupted):
        store.append(rc("interrupted", 0))  # woken in its commit, then interrupted
    after.join(30)
    assert not after.is_alive(), "the append after the interrupted one never returned"
    assert [r.seq for r in store.read_key("ns", "op", "interrupted", None)] == [0]
    blocker.close()
    store.close()
