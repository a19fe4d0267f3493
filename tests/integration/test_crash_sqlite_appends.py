"""Group commit keeps every acknowledged append (issue 21 item 1): a child appends from many
threads at once, sharing commits, and is SIGKILLed while appends are in flight; every record
whose append had returned is in the journal afterwards, at the position it was given."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from actionjournal.stores import SqliteStore

CHILD = Path(__file__).parent.parent / "sqlite_appends_child.py"
THREADS = 32
ACKS_BEFORE_KILL = 2000

pytestmark = pytest.mark.slow


def append_until_killed(journal: Path) -> list[tuple[str, int, int]]:
    """``(key, seq, position)`` of every append the child saw return before its SIGKILL."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(journal), str(THREADS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acked: list[tuple[str, int, int]] = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            key, seq, position = line.split()
            acked.append((key, int(seq), int(position)))
            if len(acked) == ACKS_BEFORE_KILL:
                child.send_signal(signal.SIGKILL)  # commits are in flight now
                break
        # Through the same text stream: communicate() would read the pipe past what this
        # stream has buffered already, and start mid-line.
        rest = child.stdout.read()
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.stderr is not None
    assert child.returncode == -signal.SIGKILL, f"the child ended by itself: {child.stderr.read()}"
    # The kill can cut the last line short: only whole lines are acknowledgements.
    lines = rest.split("\n")[:-1]
    return acked + [(k, int(s), int(p)) for k, s, p in map(str.split, lines)]


@pytest.mark.parametrize("attempt", range(3))  # the kill lands at a different moment each time
def test_every_acknowledged_append_survives_a_sigkill(tmp_path: Path, attempt: int) -> None:
    journal = tmp_path / "journal.db"
    acked = append_until_killed(journal)
    store = SqliteStore(journal)
    try:
        kept = {
            (r.key_id, r.seq)
            for n in range(THREADS)
            for r in store.read_key("ns", "op", f"key-{n}", None)
        }
        positions = dict(store._db.execute("SELECT key_id || ' ' || seq, pos FROM journal"))
    finally:
        store.close()
    missing = [(k, s) for k, s, _ in acked if (k, s) not in kept]
    assert not missing, f"{len(missing)} acknowledged appends lost, e.g. {missing[:5]}"
    moved = [(k, s, p) for k, s, p in acked if positions[f"{k} {s}"] != p]
    assert not moved, f"acknowledged at one position, found at another: {moved[:5]}"
