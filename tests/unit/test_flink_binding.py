"""The Python half of the job's journal binding in a Flink job, without a cluster.

The agent operator hands the bindings it restored to ``AgentFunction.open()`` as job
parameters; ``open()`` refuses another journal before the subtask processes anything, and
reports its own binding over the operator's wake-up socket (tests/unit/test_run_wakeups.py).
A fake runtime context plays the operator's part here; tests/e2e/test_flink_binding.py runs
the real one.
"""

from __future__ import annotations

import logging

import msgspec
import pytest

from actionjournal import Agent, InputEvent, JournalConfig, MarkerMismatchError, action
from actionjournal.durable.errors import CorruptRecordError
from actionjournal.durable.records import CONTROL_KEY, JournalBinding, UpgradeSkipped
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import RESTORED, RESTORED_BINDINGS, AgentFunction
from actionjournal.operator.engine import AgentEngine
from actionjournal.stores import SqliteStore


class Echo(Agent):
    uid = "echo"

    @action(InputEvent)
    def handle(self, event, ctx):
        pass


class Context:
    """What ``_bind`` asks of PyFlink's runtime context."""

    def __init__(self, parameters: dict[str, str], subtask: int = 0) -> None:
        self.parameters = parameters
        self.subtask = subtask

    def get_job_parameter(self, key: str, default: str | None) -> str | None:
        return self.parameters.get(key, default)

    def get_index_of_this_subtask(self) -> int:
        return self.subtask


def restored(*bindings: JournalBinding) -> dict[str, str]:
    return {RESTORED: "true", RESTORED_BINDINGS: msgspec.json.encode(list(bindings)).decode()}


def function(store, upgrade: bool = False) -> AgentFunction:
    journal = JournalConfig(upgrade="fresh" if upgrade else "off")
    fn = AgentFunction(Echo(), AgentsConfig(journal=journal))
    fn.engine = AgentEngine(fn.agent, store, journal)  # what open() builds before binding
    return fn


@pytest.fixture
def stores(tmp_path):
    old, new = SqliteStore(tmp_path / "old.db"), SqliteStore(tmp_path / "new.db")
    yield old, new
    old.close()
    new.close()


def test_a_binding_of_another_journal_is_refused_at_open(stores):
    old, new = stores
    fn = function(new)
    with pytest.raises(MarkerMismatchError, match=r"old\.db.*configured store is sqlite.*new\.db"):
        fn._bind(Context(restored(JournalBinding(old.identity, 0, "default"))))


def test_the_binding_to_report_is_the_stores(stores):
    _, new = stores
    report = function(new)._bind(Context(restored(JournalBinding(new.identity, 0, "default"))))
    assert msgspec.json.decode(report, type=JournalBinding) == JournalBinding(
        new.identity, 0, "default"
    )


def test_without_the_agent_operator_nothing_is_checked_or_reported(stores):
    _, new = stores
    assert function(new)._bind(Context({})) is None  # PyFlink's own operator: no parameters


def test_state_without_a_binding_warns_once_per_job(stores, caplog):
    _, new = stores
    with caplog.at_level(logging.WARNING, logger="actionjournal.flink.function"):
        function(new)._bind(Context(restored(), subtask=0))
        function(new)._bind(Context(restored(), subtask=1))
    assert len(caplog.records) == 1 and "names no journal" in caplog.records[0].getMessage()


def test_upgrade_mode_audits_once_for_all_subtasks(stores):
    old, new = stores
    for subtask in (0, 1):
        function(new, upgrade=True)._bind(
            Context(restored(JournalBinding(old.identity, 0, "default")), subtask)
        )
    audits = [
        r
        for r in new.read_key("default", "echo", CONTROL_KEY, None)
        if isinstance(r, UpgradeSkipped)
    ]
    assert [a.old_name for a in audits] == [old.identity.name]


def test_an_undecodable_binding_says_where_it_came_from(stores):
    _, new = stores
    bad = {RESTORED: "true", RESTORED_BINDINGS: "[not json"}
    with pytest.raises(CorruptRecordError, match="operator state of echo"):
        function(new)._bind(Context(bad))
