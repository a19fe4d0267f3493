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


def step_runs(service: CountingService, steps: int) -> list[int]:
    """How many times the service ran each step call (all call ids of a step together)."""
    return [sum(len(a) for a in service.attempts(f"step-{i}").values()) for i in range(steps)]


@pytest.mark.parametrize("policy", ["fail", "dead-letter"])
def test_a_call_over_max_run_records_never_runs_across_restarts(tmp_path, policy):
    """Issue 30, item 1: the budget is checked before a call runs, not when its outcome is
    appended; the 4th of 5 calls has no room for its outcome, so it runs in no process (it
    used to run in every one). The first process is SIGKILLed after the third outcome."""
    flags = ["--steps", "5", "--max-run-records", "3", "--policy", policy]
    with CountingService() as service:
        assert run_child(tmp_path, service.url, *flags, "--crash", "after:CallFinished:3")["killed"]
        results = [run_child(tmp_path, service.url, *flags) for _ in range(3)]
        assert step_runs(service, 5) == [1, 1, 1, 0, 0]
    if policy == "fail":
        for result in results:
            assert "RunJournalTooLongError" in result["error"], result
            assert "was not run" in result["error"]
            assert "journal.max_run_records=3" in result["error"]
    else:
        assert [r["dead_letters"] for r in results] == [[["k", 0, _TOO_LONG]]] * 3
    kinds = [type(r).__name__ for r in records(tmp_path)]
    assert kinds.count("CallFinished") == 3 and "CallStarted" not in kinds


_TOO_LONG = "actionjournal.durable.errors.RunJournalTooLongError"


def test_an_exhausted_round_without_recorded_failures_gets_a_new_round(tmp_path):
    """Issue 30, item 2: record_failures=False with on_unknown='fail'. The round's end is
    journaled, so the next try of the run makes a new round of max_attempts instead of
    raising UnknownOutcomeError (both attempts' failures are in the journal)."""
    flags = ["--attempts", "2", "--record-failures", "false", "--on-unknown", "fail"]
    with CountingService() as service:
        service.fail("charge", times=None)  # 503 forever: ConnectionError
        first = run_child(tmp_path, service.url, *flags)
        assert "ConnectionError" in first["error"] and "record_failures=False" in first["error"]
        assert charge_attempts(service) == [0, 1]
        again = run_child(tmp_path, service.url, *flags)
        assert "UnknownOutcome" not in again["error"], again["error"]
        assert "ConnectionError" in again["error"]
        assert charge_attempts(service) == [0, 1, 2, 3]  # a new round of two attempts
        service.fail("charge", times=0)  # the service is back
        third = run_child(tmp_path, service.url, *flags)
        assert third["error"] is None and third["outputs"] == [["k", "o-1"]]
        assert charge_attempts(service) == [0, 1, 2, 3, 4]


def test_lowering_max_attempts_across_a_sigkill_allows_no_attempt_over_it(tmp_path):
    """Issue 30, item 3: max_attempts=5, SIGKILL in the backoff after 3 failed attempts, a
    restart with max_attempts=2: no 4th attempt runs; the last failure becomes the call's
    journaled final outcome, replayed by later restarts."""
    with CountingService() as service:
        service.fail("charge", times=None)
        flags = ["--interval", "0.01", "--backoff", "1"]
        killed = run_child(
            tmp_path, service.url, *flags, "--attempts", "5", "--crash", "after:CallAttemptFailed:3"
        )
        assert killed["killed"] and charge_attempts(service) == [0, 1, 2]
        lowered = run_child(tmp_path, service.url, *flags, "--attempts", "2")
        assert charge_attempts(service) == [0, 1, 2]  # not run again: no attempt is left
        assert "ConnectionError" in lowered["error"]
        assert "3 attempts are journaled and max_attempts is 2 now" in lowered["error"]
        again = run_child(tmp_path, service.url, *flags, "--attempts", "2")
        assert "replaying its journaled failure" in again["error"]
        assert charge_attempts(service) == [0, 1, 2]
    (final,) = [r for r in records(tmp_path) if isinstance(r, CallFinished) and r.error]
    assert final.attempt == 2 and final.error.type == "builtins.ConnectionError"
