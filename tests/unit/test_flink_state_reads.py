"""Which keys' Flink state the agent function reads.

Reading a key's state that the Python side has not cached asks the Java side (about 3 ms a
key on a MiniCluster): in a job that restored no state, a key the function never saved has
none, so its first input must not pay that. A restored job reads every key's state.
"""

from __future__ import annotations

import msgspec

from actionjournal import Agent, InputEvent, action
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentFunction
from actionjournal.operator.engine import KeyState
from actionjournal.stores.seen import SeenKeys


class Echo(Agent):
    uid = "echo"

    @action(InputEvent)
    def handle(self, event, ctx):
        pass


class CountingState:
    """A key's ValueState as PyFlink gives it, counting reads (one key at a time)."""

    def __init__(self, data: bytes | None = None) -> None:
        self.data, self.reads = data, 0

    def value(self) -> bytes | None:
        self.reads += 1
        return self.data

    def update(self, data: bytes) -> None:
        self.data = data


def function(saved: SeenKeys | None, state: CountingState) -> AgentFunction:
    fn = AgentFunction(Echo(), AgentsConfig())
    fn._state = state  # what open() sets, with _saved (None: the job restored state)
    fn._saved = saved
    return fn


def test_a_fresh_job_reads_no_state_for_a_key_it_never_saved():
    state = CountingState()
    fn = function(SeenKeys(), state)
    assert fn._load("k") == KeyState()
    assert state.reads == 0
    fn._save("k", KeyState(next_seq=3))
    assert fn._load("k").next_seq == 3
    assert state.reads == 1


def test_a_restored_job_reads_every_keys_state():
    state = CountingState(msgspec.msgpack.encode(KeyState(next_seq=7)))
    fn = function(None, state)
    assert fn._load("k").next_seq == 7
    assert state.reads == 1
