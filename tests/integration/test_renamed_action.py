"""A run killed inside an action, restored with that action renamed or removed: divergence,
decided by journal.on_divergence, never a silent re-run of its calls (issue 14 item 4)."""

from __future__ import annotations

import pytest

from actionjournal import Agent, DivergenceError, InputEvent, JournalConfig, OutputEvent, action
from actionjournal.testing.harness import call_service

pytestmark = pytest.mark.slow


class Checkout(Agent):
    uid = "checkout"

    def __init__(self, url):
        self.url = url

    @action(InputEvent)
    def act(self, event, ctx):
        paid = ctx.durable_execute(call_service, self.url, "charge", event.input)
        ctx.send_event(OutputEvent(ctx.durable_execute(call_service, self.url, "email", paid)))


class Renamed(Agent):
    uid = "checkout"  # same operator, same journal

    def __init__(self, url):
        self.url = url

    @action(InputEvent)
    def pay_and_mail(self, event, ctx):
        paid = ctx.durable_execute(call_service, self.url, "charge", event.input)
        ctx.send_event(OutputEvent(ctx.durable_execute(call_service, self.url, "email", paid)))


def test_a_renamed_action_is_divergence_not_a_silent_rerun(restore_scenario, aj_sqlite):
    sc = restore_scenario(Checkout, aj_sqlite)
    step = sc.crash([("ann", "o-1")], at="after:CallFinished:1")  # killed inside act
    assert step.crashed and sc.calls() == {"charge": 1}
    with pytest.raises(DivergenceError, match=r"holds action\(s\) act that agent Renamed"):
        sc.restore(None, agent=Renamed)
    assert sc.calls() == {"charge": 1}  # nothing ran before the error
    # The operator decides to go on: the run re-runs without the journaled action.
    step = sc.restore(None, config=JournalConfig(on_divergence="rerun"))
    assert step.calls == {"charge": 1, "email": 1}
    assert [o.value for o in step.outputs] == ["o-1"]


def test_the_old_name_back_replays(restore_scenario, aj_sqlite):
    sc = restore_scenario(Checkout, aj_sqlite)
    sc.crash([("ann", "o-1")], at="after:CallFinished:1")
    with pytest.raises(DivergenceError):
        sc.restore(None, agent=Renamed)
    step = sc.restore(None, agent=Checkout)  # the rename reverted
    assert step.calls == {"email": 1}  # the journaled charge replays
    assert sc.duplicates() == {}
