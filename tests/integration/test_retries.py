"""Retries of durable calls with real processes: a child runs the agent, a real HTTP service
counts every attempt (its ``attempt`` field included), and crashes are real SIGKILLs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actionjournal.durable.identity import key_id
from actionjournal.durable.records import CallAttemptFailed, CallFinished
from actionjournal.stores import SqliteStore
from actionjournal.testing.service import CountingService

CHILD = Path(__file__).parent.parent / "retry_agent.py"
ONE = json.dumps([["k", "o-1"]])

pytestmark = pytest.mark.slow


def run_child(state: Path, url: str, *extra: str, inputs: str = ONE) -> dict:
    done = subprocess.run(
        [sys.executable, str(CHILD), str(state), url, inputs, *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, -9), done.stderr[-3000:]
    if done.returncode == -9:
        return {"killed": True}
    return json.loads(done.stdout.strip().splitlines()[-1])


def records(state: Path, key: str = "k") -> list:
    store = SqliteStore(state / "journal.db")
    try:
        return store.read_key("default", "checkout", key_id(key), None)
    finally:
        store.close()


def charge_attempts(service: CountingService) -> list:
    """The attempts of the one charge call, as the service saw them."""
    (attempts,) = service.attempts("charge").values()
    return attempts


def test_two_connection_errors_then_success_complete_on_the_third_attempt(tmp_path):
    with CountingService() as service:
        service.fail("charge", times=2)  # 503 twice: ConnectionError, retried
        result = run_child(tmp_path, service.url)
        assert result["error"] is None
        assert result["outputs"] == [["k", "o-1"]]  # one output
        assert charge_attempts(service) == [0, 1, 2]  # third attempt, counted by the service
        assert sorted(service.counts.values()) == [1, 1]  # reserve and charge executed once
    failed = [r for r in records(tmp_path) if isinstance(r, CallAttemptFailed)]
    assert [r.attempt for r in failed] == [0, 1]
    assert [r.error.type for r in failed] == ["builtins.ConnectionError"] * 2
    assert result["metrics"]["retried"] == 2 and result["metrics"]["retries"] == 2


@pytest.mark.parametrize("restart", ["at once", "after the backoff"])
def test_sigkill_during_the_backoff_resumes_at_attempt_3(tmp_path, restart):
    interval = 4.0  # the first wait; the second (after attempt 2) is 8 s
    flags = ["--interval", str(interval), "--attempts", "5"]
    with CountingService() as service:
        service.fail("charge", times=2)
        # Killed right after the second failure was journaled: inside the 8 s backoff.
        assert run_child(tmp_path, service.url, *flags, "--crash", "after:CallAttemptFailed:2")[
            "killed"
        ]
        assert charge_attempts(service) == [0, 1]
        (second,) = [
            r for r in records(tmp_path) if isinstance(r, CallAttemptFailed) and r.attempt == 1
        ]
        assert second.retry_at == pytest.approx(second.at + 2 * interval, abs=0.01)
        if restart == "after the backoff":
            time.sleep(max(0.0, second.retry_at - time.time()) + 0.1)
        restarted = time.time()
        result = run_child(tmp_path, service.url, *flags)
        assert result["error"] is None and result["outputs"] == [["k", "o-1"]]
        assert charge_attempts(service) == [0, 1, 2]  # resumed at attempt 3, not 1
        third_at = [a.at for a in service.arrivals if a.name == "charge"][2]
    assert third_at >= second.retry_at  # never before the journaled time
    waited = result["metrics"]["backoff_s"]
    if restart == "after the backoff":
        assert waited == 0  # nothing was left to wait
    else:
        # Only what was left: the restart came after the failure, so less than the full 8 s.
        assert 0 < waited <= second.retry_at - restarted


def test_a_non_retryable_error_is_journaled_at_once_and_replayed(tmp_path):
    with CountingService() as service:
        service.fail("charge", times=None, status=400)  # ValueError: not retried
        first = run_child(tmp_path, service.url)
        assert "ValueError(\"charge refused 'o-1'\")" in first["error"]
        assert "attempt 1 of 3 (not retryable: journaled as its final outcome)" in first["error"]
        assert charge_attempts(service) == [0]
        # The restored run replays the failure: the service is not asked again.
        again = run_child(tmp_path, service.url)
        assert "replaying its journaled failure" in again["error"]
        assert charge_attempts(service) == [0]
        assert sorted(service.counts.values()) == [1]  # reserve ran once, across both
    (finished,) = [r for r in records(tmp_path) if isinstance(r, CallFinished) and r.error]
    assert finished.error.type == "builtins.ValueError" and finished.attempt == 0


def test_exhausted_attempts_journal_the_final_failure(tmp_path):
    with CountingService() as service:
        service.fail("charge", times=None)  # 503 forever
        first = run_child(tmp_path, service.url, "--attempts", "3")
        assert "attempt 3 of 3 (the last attempt: journaled as its final outcome)" in first["error"]
        assert charge_attempts(service) == [0, 1, 2]
        again = run_child(tmp_path, service.url, "--attempts", "3")
        assert "ConnectionError('api temporarily unavailable')" in again["error"]
        assert charge_attempts(service) == [0, 1, 2]  # never retried past the last attempt
    kinds = [type(r).__name__ for r in records(tmp_path)]
    assert kinds.count("CallAttemptFailed") == 2
    (final,) = [r for r in records(tmp_path) if isinstance(r, CallFinished) and r.error]
    assert final.attempt == 2 and final.error.type == "builtins.ConnectionError"
