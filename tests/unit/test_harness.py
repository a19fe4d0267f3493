"""The restore-scenario harness itself: misuse and child failures are reported clearly."""

from __future__ import annotations

import pytest

from actionjournal import Agent, InputEvent, MarkerMismatchError, OutputEvent, action
from actionjournal.testing.harness import (
    CrashNotReachedError,
    HarnessError,
    RestoreMode,
    call_service,
)


class Echo(Agent):
    uid = "echo"

    def __init__(self, url: str) -> None:
        self.url = url

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(
            OutputEvent(ctx.durable_execute(call_service, self.url, "echo", event.input))
        )


class NoUrl(Agent):
    uid = "no-url"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(OutputEvent(event.input))


def test_counts_outputs_and_engine_counts_per_step(restore_scenario):
    sc = restore_scenario(Echo)
    step = sc.run([("a", 1), ("b", 2), ("a", 3)])
    assert step.kind == "run" and not step.crashed
    assert step.calls == {"echo": 3} and step.actions == {"handle": 3}
    assert sorted(o.value for o in step.outputs) == [1, 2, 3]
    assert step.engine["executed"] == 3
    assert sc.calls() == {"echo": 3} and sc.duplicates() == {}


def test_a_factory_without_arguments_is_called_without_the_url(restore_scenario):
    sc = restore_scenario(NoUrl)
    assert sc.run([("a", 1)]).actions == {"handle": 1}


def test_a_crash_point_that_is_never_reached_fails_the_step(restore_scenario):
    sc = restore_scenario(Echo)
    with pytest.raises(CrashNotReachedError, match="after:RunCompleted:9"):
        sc.crash([("a", 1)], at="after:RunCompleted:9")
    assert sc.steps[-1].calls == {"echo": 1}  # what the child did is still counted
    with pytest.raises(ValueError, match="crash point"):
        sc.crash([("a", 2)], at="during:RunCompleted:1")


def test_an_unpicklable_factory_is_refused_for_crash_steps(restore_scenario):
    sc = restore_scenario(lambda url: Echo(url))
    sc.run([("a", 1)])  # in-process steps do not need pickling
    with pytest.raises(HarnessError, match="must be picklable"):
        sc.crash([("a", 2)], at="after:RunCompleted:1")


def test_after_a_crash_only_a_restore_goes_on(restore_scenario):
    sc = restore_scenario(Echo)
    sc.run([("a", 1)])
    cp = sc.checkpoint()
    assert sc.crash([("a", 2)], at="after:RunCompleted:1").crashed
    assert not sc.running
    with pytest.raises(HarnessError, match="restore first"):
        sc.run([("a", 3)])
    with pytest.raises(HarnessError, match="nothing to checkpoint"):
        sc.checkpoint()
    assert sc.restore(cp).calls == {}


def test_errors_in_a_child_step_are_raised_with_their_type(restore_scenario):
    sc = restore_scenario(Echo)
    sc.run([("a", 1)])
    cp = sc.checkpoint()
    sc.abandon()
    with pytest.raises(MarkerMismatchError) as caught:
        sc.restore(cp, RestoreMode.NEW, inputs=[("a", 2)], crash_at="after:RunCompleted:1")
    assert any("child process" in note for note in caught.value.__notes__)


def test_periodic_checkpoints_hold_runs_in_flight(restore_scenario):
    sc = restore_scenario(Echo)
    sc.run([(f"k{i % 2}", i) for i in range(8)], checkpoint_every=4)
    cp = sc.last_checkpoint()
    assert cp.inputs_consumed == 8 and cp.pending > 0
    assert set(cp.markers()) <= {"k0", "k1"}
    sc.abandon()
    assert sc.restore(cp).calls == {}  # every run finished after it is replayed
