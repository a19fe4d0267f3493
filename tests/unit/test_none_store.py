"""NoStore: durability off, said once; restored markers are ignored; its state needs an upgrade."""

from __future__ import annotations

import logging

import pytest
from pydantic import TypeAdapter

from actionjournal import Agent, InputEvent, MarkerMismatchError, OutputEvent, action
from actionjournal.durable.records import RunCompleted
from actionjournal.flink import AgentsConfig
from actionjournal.stores import NoStoreConfig, StoreConfig, none, open_store
from actionjournal.stores.none import NoStore
from actionjournal.testing.harness import RestoreMode, call_service


class Worker(Agent):
    uid = "worker"

    def __init__(self, url: str) -> None:
        self.url = url

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(
            OutputEvent(ctx.durable_execute(call_service, self.url, "work", event.input))
        )


def test_journals_nothing_and_warns_once(monkeypatch, caplog):
    monkeypatch.setattr(none, "_warned", False)
    with caplog.at_level(logging.WARNING, logger="actionjournal.stores.none"):
        store = NoStore()
        NoStore()
    assert len(caplog.records) == 1 and "durability is off" in caplog.records[0].getMessage()
    marker = store.append(RunCompleted("ns", "op", 0, "k", 0, at=1.0, input_digest="d"))
    assert marker.store.backend == "none"
    assert store.read_key("ns", "op", "k", None) == []
    assert store.read_key("ns", "op", "k", marker) == []
    assert store.earliest_position("k") == 0


def test_is_a_configurable_backend():
    config = AgentsConfig.model_validate({"store": {"backend": "none"}})
    assert isinstance(config.store, NoStoreConfig)
    assert TypeAdapter(StoreConfig).validate_python({"backend": "none"}) == NoStoreConfig()
    assert isinstance(open_store(config.store, None), NoStore)


def test_restoring_with_no_store_ignores_markers_and_reruns(restore_scenario, aj_sqlite):
    sc = restore_scenario(Worker, aj_sqlite)
    sc.run([("a", 1)])
    cp = sc.checkpoint()
    sc.run([("a", 2)])
    sc.abandon()
    assert sc.restore(cp, RestoreMode.NO_STORE).calls == {"work": 1}


def test_state_taken_without_a_store_needs_upgrade_mode_for_a_real_one(restore_scenario, aj_sqlite):
    sc = restore_scenario(Worker, aj_sqlite)
    sc.run([("a", 1)])
    sc.abandon()
    sc.restore(None, RestoreMode.NO_STORE)  # start over without a store
    cp = sc.checkpoint()
    sc.abandon()
    with pytest.raises(MarkerMismatchError, match="references none journal"):
        sc.restore(cp, RestoreMode.NEW, inputs=[("a", 2)])
    assert sc.restore(cp, RestoreMode.UPGRADE_NEW).calls == {"work": 1}
