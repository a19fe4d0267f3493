"""RemoteAgentJob against a real remote-agent HTTP service: recovery asks, never re-posts.

Turns and POSTs are counted by the service. The process-kill tests SIGKILL a child
(tests/remote_job_agent.py) in each window of a remote run's life, restore it, and
compare with an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec
import pytest

from actionjournal import Agent, CallInfo, InputEvent, LocalRunner, OutputEvent, action
from actionjournal.durable.errors import ActionFailedError
from actionjournal.operator.local import Snapshot
from actionjournal.reconcilers import (
    Failed,
    NotStarted,
    Recovered,
    RemoteAgentError,
    RemoteAgentJob,
    RemoteJobFailed,
)
from actionjournal.stores import MemoryStore
from actionjournal.testing.remote_agents import RemoteAgentService
from tests.docs import docs_sample

AGENT = "researcher"


@pytest.fixture
def service() -> Iterator[RemoteAgentService]:
    with RemoteAgentService(run_seconds=0.3, progress_events=3) as s:
        yield s


def post(service: RemoteAgentService, thread: str, message: Any) -> dict[str, Any]:
    url = f"{service.url}/api/agents/{AGENT}/threads/{thread}/messages"
    return httpx.post(url, json={"message": message}).json()


def stream(service: RemoteAgentService, thread: str) -> list[str]:
    url = f"{service.url}/api/agents/{AGENT}/threads/{thread}/stream"
    return [line for line in httpx.get(url).text.splitlines() if line.startswith("event:")]


def info(call_id: str, message: str = "q", attempt: int = 1) -> CallInfo:
    """What the engine hands the reconciler for a call whose outcome is unknown."""
    return CallInfo(call_id, None, "f", (AGENT, message), {}, attempt, "key", 1, "ask")


class Asker(Agent):
    """Asks the remote agent once per input; catches nothing."""

    def __init__(self, job: RemoteAgentJob) -> None:
        self.job = job

    @action(InputEvent)
    async def ask(self, event, ctx):
        answer = await self.job.run(ctx, event.input)
        ctx.send_event(OutputEvent(answer))


class SyncAsker(Asker):
    @action(InputEvent)
    def ask(self, event, ctx):
        ctx.send_event(OutputEvent(self.job.run_sync(ctx, event.input)))


def run_agent(agent: Agent, store: MemoryStore, inputs: list[tuple[str, str]]) -> list[Any]:
    runner = LocalRunner(agent, store)
    asyncio.run(runner.run(inputs))
    return sorted(event.output for _, event in runner.outputs)


def failure_of(agent: Agent, store: MemoryStore, inputs: list[tuple[str, str]]) -> BaseException:
    with pytest.raises(ActionFailedError) as failed:
        run_agent(agent, store, inputs)
    assert failed.value.__cause__ is not None
    return failed.value.__cause__


# -- the service: it really has the dangerous behaviour --------------------------------


def test_service_reposting_a_finished_thread_starts_a_second_turn(service):
    service.hold()  # the run is still running at the second POST, however slow the machine
    assert post(service, "t1", "hello") == {"thread_id": "t1", "status": "started"}
    assert post(service, "t1", "hello") == {"thread_id": "t1", "status": "running"}
    service.release()
    assert service.wait_finished(AGENT, "t1")["result"] == f"{AGENT} answered hello"
    assert service.turns == {"t1": 1}
    assert post(service, "t1", "hello")["status"] == "started"  # what a blind retry does
    assert service.turns == {"t1": 2}
    assert service.wait_finished(AGENT, "t1")["result"] == f"{AGENT} answered hello (turn 2)"


def test_service_stream_reattaches_and_reports_status(service):
    assert httpx.get(f"{service.url}/api/agents/{AGENT}/threads/t2").json()["status"] == (
        "not_started"
    )
    post(service, "t2", "hello")
    assert stream(service, "t2") == ["event: progress"] * 3 + ["event: completed"]
    assert stream(service, "t2") == ["event: progress"] * 3 + ["event: completed"]  # again
    post(service, "t3", "please fail")
    assert stream(service, "t3")[-1] == "event: failed"
    assert service.status(AGENT, "t3")["error"] == f"{AGENT} could not answer 'please fail'"


# -- the reconciler's four answers --------------------------------------------------------


def release_after_a_probe(service: RemoteAgentService) -> None:
    deadline = time.monotonic() + 60
    while not service.probes and time.monotonic() < deadline:
        time.sleep(0.01)
    service.release()


def test_reconcile_not_started_lets_the_engine_submit(service):
    job = RemoteAgentJob(service.url, AGENT)
    assert asyncio.run(job.reconcile(info("c0"))) == NotStarted()
    assert service.posts == {}


def test_reconcile_running_reattaches_and_recovers_the_result(service):
    job = RemoteAgentJob(service.url, AGENT)
    service.hold()  # running until the reconciler has seen it running
    post(service, job.thread_for("c1"), "q")
    releaser = threading.Thread(target=release_after_a_probe, args=(service,))
    releaser.start()
    assert asyncio.run(job.reconcile(info("c1"))) == Recovered(f"{AGENT} answered q")
    releaser.join()
    assert service.probes[0] == (job.thread_for("c1"), "running")
    assert service.posts == service.turns == {job.thread_for("c1"): 1}


def test_reconcile_completed_reads_the_result(service):
    job = RemoteAgentJob(service.url, AGENT)
    thread = job.thread_for("c2")
    post(service, thread, "q")
    service.wait_finished(AGENT, thread)
    assert asyncio.run(job.reconcile(info("c2"))) == Recovered(f"{AGENT} answered q")
    assert service.posts == service.turns == {thread: 1}


def test_reconcile_failed_reports_the_services_error(service):
    job = RemoteAgentJob(service.url, AGENT)
    thread = job.thread_for("c3")
    post(service, thread, "fail me")
    service.wait_finished(AGENT, thread)
    outcome = asyncio.run(job.reconcile(info("c3", "fail me")))
    assert isinstance(outcome, Failed) and isinstance(outcome.error, RemoteJobFailed)
    assert (outcome.error.agent, outcome.error.thread) == (AGENT, thread)
    assert outcome.error.error == f"{AGENT} could not answer 'fail me'"
    assert service.posts == {thread: 1}


# -- through the engine ------------------------------------------------------------------


@pytest.mark.parametrize("agent_type", [Asker, SyncAsker], ids=["async", "sync"])
def test_one_turn_per_call_and_a_thread_per_call(service, agent_type):
    seen: list[tuple[str, str]] = []
    job = RemoteAgentJob(service.url, AGENT, on_event=lambda t, e, d: seen.append((t, e)))
    inputs = [("k1", "a"), ("k2", "b"), ("k1", "c")]  # k1's second run is another call
    outputs = run_agent(agent_type(job), MemoryStore(), inputs)
    assert outputs == [f"{AGENT} answered {m}" for m in "abc"]
    assert len(service.turns) == 3 and set(service.turns.values()) == {1}
    assert all(t.startswith("aj-") and len(t) == 35 for t in service.turns)
    assert {e for _, e in seen} == {"progress", "completed"}


@pytest.mark.parametrize("agent_type", [Asker, SyncAsker], ids=["async", "sync"])
def test_unknown_outcome_is_recovered_without_a_second_turn(service, agent_type):
    store = MemoryStore()
    job = RemoteAgentJob(service.url, AGENT)
    assert run_agent(agent_type(job), store, [("k", "a")]) == [f"{AGENT} answered a"]
    # As if the process died after the run completed but before its result was journaled.
    store.entries = [e for e in store.entries if _record_type(store, e) == b"CallStarted"]
    runner = LocalRunner(agent_type(job), store)
    asyncio.run(runner.run([("k", "a")]))
    assert [e.output for _, e in runner.outputs] == [f"{AGENT} answered a"]
    assert runner.counts["reconciled"] == 1 and runner.counts["executed"] == 0
    assert list(service.turns.values()) == [1] and list(service.posts.values()) == [1]


def _record_type(store: MemoryStore, entry: Any) -> bytes:
    return type(store.codec.decode(entry[3])).__name__.encode()


def test_failed_run_raises_then_is_reconciled_and_replayed_without_reposting(service):
    store = MemoryStore()
    job = RemoteAgentJob(service.url, AGENT)
    first = failure_of(Asker(job), store, [("k", "fail this")])
    assert isinstance(first, RemoteJobFailed) and first.agent == AGENT
    assert "could not answer 'fail this'" in str(first) and first.thread in service.turns
    # Recovery: the failure was not journaled (it could have been an outage), so the
    # reconciler asks; the service says failed; that answer is journaled.
    again = failure_of(Asker(job), store, [("k", "fail this")])
    assert isinstance(again, RemoteJobFailed) and again.thread == first.thread
    service.stop()  # from now on the journal alone answers
    replayed = failure_of(Asker(job), store, [("k", "fail this")])
    assert isinstance(replayed, RemoteJobFailed) and replayed.error == first.error
    assert service.turns == service.posts == {first.thread: 1}


# -- retries are safe ----------------------------------------------------------------------


def test_post_whose_reply_was_lost_is_not_posted_again(service):
    service.drop_post_replies = 1  # the run starts, the client hears nothing
    job = RemoteAgentJob(service.url, AGENT, poll_interval=0.01)
    assert run_agent(Asker(job), MemoryStore(), [("k", "a")]) == [f"{AGENT} answered a"]
    assert service.drop_post_replies == 0, "the fault was not hit"
    assert [s for _, s in service.probes] == ["not_started", "running"]  # asked before a retry
    assert list(service.posts.values()) == [1] and list(service.turns.values()) == [1]


def test_cut_stream_is_reattached(service):
    service.cut_streams = 2
    job = RemoteAgentJob(service.url, AGENT, poll_interval=0.01)
    assert run_agent(Asker(job), MemoryStore(), [("k", "a")]) == [f"{AGENT} answered a"]
    assert list(service.posts.values()) == [1] and service.cut_streams == 0


def test_unknown_agent_is_a_clear_error():
    with RemoteAgentService(agents={AGENT}) as service:
        job = RemoteAgentJob(service.url, "reseacher")
        error = failure_of(Asker(job), MemoryStore(), [("k", "a")])
    assert isinstance(error, RemoteAgentError)
    assert "HTTP 404" in str(error) and "'reseacher'" in str(error) and service.url in str(error)
    assert "Check the agent name" in str(error)


def test_unreachable_service_is_a_clear_error_and_not_journaled():
    with RemoteAgentService() as service:
        url = service.url
    store = MemoryStore()
    job = RemoteAgentJob(url, AGENT, retries=1, poll_interval=0.01, timeout=2)
    error = failure_of(Asker(job), store, [("k", "a")])
    assert isinstance(error, RemoteAgentError)
    assert "failed 2 times" in str(error) and "ConnectError" in str(error) and url in str(error)
    assert not any(b"CallFinished" in _record_type(store, e) for e in store.entries)


def test_thread_with_a_run_this_journal_never_submitted_is_refused(service):
    """Same namespace and uid in a fresh journal: the first attempt must not adopt the run."""
    job = RemoteAgentJob(service.url, AGENT)
    run_agent(Asker(job), MemoryStore(), [("k", "a")])
    error = failure_of(Asker(job), MemoryStore(), [("k", "a")])
    assert isinstance(error, RemoteAgentError) and "never submitted" in str(error)
    assert set(service.turns.values()) == {1}


# -- services of another shape: 404 for unknown threads (issue 14, item 19) -----------------

LOG = "actionjournal.reconcilers.remote_job"


@pytest.fixture
def rest_service() -> Iterator[RemoteAgentService]:
    """Answers a status query for a thread without a run with HTTP 404."""
    with RemoteAgentService(unknown_thread_404=True) as s:
        yield s


@pytest.mark.parametrize("agent_type", [Asker, SyncAsker], ids=["async", "sync"])
def test_404_for_a_thread_without_a_run_is_not_started_by_default(rest_service, agent_type):
    job = RemoteAgentJob(rest_service.url, AGENT)
    assert run_agent(agent_type(job), MemoryStore(), [("k", "a")]) == [f"{AGENT} answered a"]
    assert [status for _, status in rest_service.probes] == ["404"]
    assert list(rest_service.turns.values()) == list(rest_service.posts.values()) == [1]


def test_reconcile_takes_404_as_not_started(rest_service):
    job = RemoteAgentJob(rest_service.url, AGENT)
    assert asyncio.run(job.reconcile(info("c4"))) == NotStarted()
    assert rest_service.probes == [(job.thread_for("c4"), "404")] and rest_service.posts == {}


def test_404_as_an_error_by_configuration_says_what_happened(rest_service):
    job = RemoteAgentJob(rest_service.url, AGENT, not_found_is_not_started=False)
    error = failure_of(Asker(job), MemoryStore(), [("k", "a")])
    assert isinstance(error, RemoteAgentError) and rest_service.posts == {}
    (thread, _), *_ = rest_service.probes
    assert f"thread {thread}" in str(error) and "HTTP 404" in str(error)
    assert "no run" in str(error) and "not_found_is_not_started=True" in str(error)


@pytest.mark.parametrize("unknown_thread_404", [False, True], ids=["not_started", "404"])
def test_a_run_lost_by_a_restarted_service_is_posted_again_with_a_warning(
    unknown_thread_404, caplog
):
    store = MemoryStore()
    with RemoteAgentService() as first:
        job = RemoteAgentJob(first.url, AGENT)
        run_agent(Asker(job), store, [("k", "a")])
    (thread,) = first.turns
    # As if the process died during the call, and the service restarted without its threads.
    store.entries = [e for e in store.entries if _record_type(store, e) == b"CallStarted"]
    port = urlsplit(first.url).port
    with (
        RemoteAgentService(port=port, unknown_thread_404=unknown_thread_404) as second,
        caplog.at_level(logging.WARNING, logger=LOG),
    ):
        assert run_agent(Asker(job), store, [("k", "a")]) == [f"{AGENT} answered a"]
    assert second.turns == second.posts == {thread: 1}
    (warning,) = [r.getMessage() for r in caplog.records if r.name == LOG]
    call_id = thread.removeprefix(job.thread_prefix)
    assert f"thread {thread}" in warning and f"call {call_id}" in warning
    assert "action ask" in warning and "lost the run" in warning
    assert ("HTTP 404" in warning) == unknown_thread_404


def test_unknown_agent_is_a_clear_error_on_a_404_service():
    with RemoteAgentService(agents={AGENT}, unknown_thread_404=True) as service:
        job = RemoteAgentJob(service.url, "reseacher")
        error = failure_of(Asker(job), MemoryStore(), [("k", "a")])
    assert isinstance(error, RemoteAgentError) and service.turns == {}
    assert "POST" in str(error) and "no agent named 'reseacher'" in str(error)
    assert "Check the agent name" in str(error) and "Nothing was started" in str(error)


# -- services of another shape: body and end events (issue 14, item 20) ---------------------

DONE_ERROR = {"completed_event": "done", "failed_event": "error"}
SHAPES = {
    "message field": {},
    "input field, done/error events": {"message_field": "input", **DONE_ERROR},
    "message as the body": {"message_field": None},
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("agent_type", [Asker, SyncAsker], ids=["async", "sync"])
def test_a_plain_string_message_in_each_body_shape(shape, agent_type):
    with RemoteAgentService(**SHAPES[shape]) as service:
        job = RemoteAgentJob(service.url, AGENT, **SHAPES[shape])
        assert run_agent(agent_type(job), MemoryStore(), [("k", "a")]) == [f"{AGENT} answered a"]
        (run,) = service.runs.values()
    assert run.message == "a"
    assert [status for _, status in service.probes] == ["not_started"]  # the end event ended it


def test_message_as_the_body_posts_the_message_itself():
    question = {"messages": [{"role": "user", "content": "a"}], "stream": True}
    with RemoteAgentService(message_field=None) as service:
        job = RemoteAgentJob(service.url, AGENT, message_field=None)
        run_agent(Asker(job), MemoryStore(), [("k", question)])
        (run,) = service.runs.values()
    assert run.message == question


def test_configured_failed_event_ends_the_call():
    with RemoteAgentService(**DONE_ERROR) as service:
        job = RemoteAgentJob(service.url, AGENT, **DONE_ERROR)
        error = failure_of(Asker(job), MemoryStore(), [("k", "please fail")])
    assert isinstance(error, RemoteJobFailed)
    assert error.error == f"{AGENT} could not answer 'please fail'"
    assert [status for _, status in service.probes] == ["not_started"]


def test_unconfigured_end_events_are_named_in_a_warning(caplog):
    with (
        RemoteAgentService(**DONE_ERROR) as service,
        caplog.at_level(logging.WARNING, logger=LOG),
    ):
        job = RemoteAgentJob(service.url, AGENT)
        assert run_agent(Asker(job), MemoryStore(), [("k", "a")]) == [f"{AGENT} answered a"]
    assert [status for _, status in service.probes] == ["not_started", "completed"]
    (warning,) = [r.getMessage() for r in caplog.records if r.name == LOG]
    assert "'done'" in warning and "completed_event" in warning


def test_a_body_the_service_refuses_says_so_and_starts_nothing():
    with RemoteAgentService(message_field="input") as service:
        job = RemoteAgentJob(service.url, AGENT)
        error = failure_of(Asker(job), MemoryStore(), [("k", "a")])
    assert isinstance(error, RemoteAgentError) and service.turns == {}
    assert "HTTP 400" in str(error) and "body must be" in str(error) and "input" in str(error)
    assert "message_field" in str(error) and "Nothing was started" in str(error)
    assert "agent name" not in str(error)


def test_docs_samples_run_as_written(service):
    exec(docs_sample("reconcilers.md", "with RemoteAgentService("), {})
    namespace: dict[str, Any] = {}
    exec(docs_sample("reconcilers.md", 'message_field="input"'), namespace)
    assert namespace["research"].completed_event == "done"
    exec(docs_sample("reconcilers.md", "class Assistant"), namespace)
    namespace["research"].base_url = service.url  # the docs' service, here on 127.0.0.1
    runner = LocalRunner(namespace["Assistant"](), MemoryStore())
    inputs = [("u1", {"question": "what is a journal?"}), ("u2", {"question": "fail me"})]
    asyncio.run(runner.run(inputs))
    assert {event.output for _, event in runner.outputs} == {
        f"{AGENT} answered what is a journal?",
        f"no answer: {AGENT} could not answer 'fail me'",
    }


# -- process kills ------------------------------------------------------------------------

CHILD = Path(__file__).parent.parent / "remote_job_agent.py"
N_INPUTS = 3
RUN_SECONDS = 1.0

WINDOWS = {
    "before submit is journaled": ["--crash", "before:CallStarted:1"],
    "after submit is journaled, before the POST": ["--crash", "after:CallStarted:1"],
    "after the POST was answered": ["--kill-after-post"],
    "while streaming": ["--kill-on-progress"],
    "after completion, before the result is journaled": ["--crash", "before:CallFinished:1"],
    "after the result is journaled": ["--crash", "after:CallFinished:1"],
}
# What the restored process must have done for the call that was cut off.
SEEN_ON_RECOVERY = {
    "after submit is journaled, before the POST": ("not_started", "unknown"),
    "after the POST was answered": ("running", "reconciled"),
    "while streaming": ("running", "reconciled"),
    "after completion, before the result is journaled": ("completed", "reconciled"),
    "after the result is journaled": (None, "replayed"),
}


def run_child(
    state: Path, url: str, *extra: str, release: RemoteAgentService | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the child to its end (or its kill).

    ``release``: a service holding its runs; they are released once the child has asked
    about a thread and heard ``running``, so recovery sees a live run however slowly the
    child starts on a loaded machine.
    """
    command = [sys.executable, str(CHILD), str(state), url, str(N_INPUTS), *extra]
    if release is None:
        return subprocess.run(command, capture_output=True, text=True, timeout=120)
    asked = len(release.probes)
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while child.poll() is None and time.monotonic() < deadline:
            if any(status == "running" for _, status in release.probes[asked:]):
                break
            time.sleep(0.05)
        release.release()
        out, err = child.communicate(timeout=120)
    finally:
        child.kill()
    return subprocess.CompletedProcess(command, child.returncode, out, err)


def outputs(state: Path) -> dict[str, Any]:
    lines = (state / "outputs.jsonl").read_text().splitlines()
    return {event_id: out for _, event_id, out in map(json.loads, lines)}


def final_memory(state: Path) -> dict[str, bytes | None]:
    snap = msgspec.msgpack.decode((state / "final").read_bytes(), type=Snapshot)
    return {k.key_id: k.state.memory for k in snap.keys}


def counts(restored: subprocess.CompletedProcess[str]) -> dict[str, int]:
    return json.loads(restored.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("baseline")
    with RemoteAgentService(run_seconds=RUN_SECONDS, progress_events=4) as service:
        done = run_child(state, service.url)
        assert done.returncode == 0, done.stderr[-2000:]
        assert list(service.turns.values()) == [1] * N_INPUTS
    return state


@pytest.mark.slow
@pytest.mark.parametrize("window", list(WINDOWS))
def test_killed_then_restored_exactly_one_turn_per_thread(window, tmp_path, uninterrupted):
    status, counter = SEEN_ON_RECOVERY.get(window, (None, None))
    with RemoteAgentService(run_seconds=RUN_SECONDS, progress_events=4) as service:
        if status == "running":
            service.hold()  # runs go on until the restored process has found one running
        killed = run_child(tmp_path, service.url, *WINDOWS[window])
        assert killed.returncode == -9, killed.stderr[-2000:]
        service.wait_idle()
        probes_before = len(service.probes)
        restored = run_child(tmp_path, service.url, release=service if status else None)
        assert restored.returncode == 0, restored.stderr[-2000:]
        turns, posts = dict(service.turns), dict(service.posts)
        seen = {status for _, status in service.probes[probes_before:]}
    assert len(turns) == N_INPUTS
    assert set(turns.values()) == {1}, f"a thread was run twice: {turns}"
    assert set(posts.values()) == {1}, f"a thread was posted twice: {posts}"
    assert outputs(tmp_path) == outputs(uninterrupted)
    assert final_memory(tmp_path) == final_memory(uninterrupted)
    if counter is not None:
        assert status is None or status in seen, seen
        assert counts(restored)[counter] >= 1, counts(restored)


@pytest.mark.slow
@pytest.mark.parametrize(
    "shape",
    [
        {"unknown_thread_404": True},
        {"message_field": "input", **DONE_ERROR},
        {"message_field": None, "unknown_thread_404": True, **DONE_ERROR},
    ],
    ids=["404 for unknown threads", "input field, done/error", "all of them"],
)
def test_killed_mid_run_on_another_shape_is_asked_not_reposted(shape, tmp_path, uninterrupted):
    job = {k: v for k, v in shape.items() if k != "unknown_thread_404"}
    with RemoteAgentService(run_seconds=RUN_SECONDS, progress_events=4, **shape) as service:
        service.hold()
        killed = run_child(tmp_path, service.url, "--kill-on-progress", "--job", json.dumps(job))
        assert killed.returncode == -9, killed.stderr[-2000:]
        service.wait_idle()
        probes_before = len(service.probes)
        restored = run_child(tmp_path, service.url, "--job", json.dumps(job), release=service)
        assert restored.returncode == 0, restored.stderr[-2000:]
        seen = [status for _, status in service.probes[probes_before:]]
    assert len(service.turns) == N_INPUTS
    assert set(service.turns.values()) == set(service.posts.values()) == {1}
    assert "running" in seen and counts(restored)["reconciled"] >= 1
    # A stream whose configured end event is not recognised settles from the status query
    # and warns; a later status probe answering "completed" is fine (runs are released).
    assert "ended after event" not in restored.stderr, restored.stderr[-2000:]
    assert outputs(tmp_path) == outputs(uninterrupted)


@pytest.mark.slow
def test_run_lost_by_a_restarted_service_is_posted_again_with_a_warning(tmp_path, uninterrupted):
    with RemoteAgentService(run_seconds=RUN_SECONDS, progress_events=4) as first:
        first.hold()
        killed = run_child(tmp_path, first.url, "--kill-on-progress")
        assert killed.returncode == -9, killed.stderr[-2000:]
        first.wait_idle()
    lost = set(first.turns)  # running when the service restarted and forgot them
    port = urlsplit(first.url).port
    with RemoteAgentService(RUN_SECONDS, 4, port=port, unknown_thread_404=True) as second:
        restored = run_child(tmp_path, second.url)
        assert restored.returncode == 0, restored.stderr[-2000:]
    assert len(second.turns) == N_INPUTS
    assert set(second.turns.values()) == set(second.posts.values()) == {1}
    warnings = [line for line in restored.stderr.splitlines() if "lost the run" in line]
    assert lost and len(warnings) >= len(lost), restored.stderr[-2000:]
    for thread in lost:
        assert any(f"thread {thread}" in w and "HTTP 404" in w for w in warnings), warnings
    assert outputs(tmp_path) == outputs(uninterrupted)
