"""The local environment: an agent over a list of inputs, in this process, journaled.

It runs on the engine's local runner with the configured journal (SQLite by default),
one input at a time in list order, as Flink Agents' local environment does, so outputs
come back in input order. Run the same script again after it was stopped and the journal
replays the runs it had finished: their calls are not made again. An input without a key
gets one from its position in the list, so it replays too.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from actionjournal.durable.errors import ConfigurationError
from actionjournal.durable.stats import JournalMetrics
from actionjournal.flink_agents.api.agents.agent import Agent
from actionjournal.flink_agents.api.events.tool_event import ToolRequestEvent
from actionjournal.flink_agents.api.execution_environment import (
    AgentBuilder,
    AgentsExecutionEnvironment,
)
from actionjournal.flink_agents.runtime import rows
from actionjournal.flink_agents.runtime.configuration import (
    AgentConfiguration,
    journal_config,
    store_config,
)
from actionjournal.flink_agents.runtime.plan import EngineAgent
from actionjournal.operator.local import LocalRunner
from actionjournal.stores.factory import open_store


class LocalAgentBuilder(AgentBuilder):
    def __init__(self, env: LocalExecutionEnvironment, inputs: list[dict[str, Any]]) -> None:
        self._env = env
        self.inputs = inputs
        self.outputs: list[dict[str, Any]] = []
        self.agent: EngineAgent | None = None

    def apply(self, agent: Agent) -> AgentBuilder:
        if self.agent is not None:
            raise RuntimeError("LocalAgentBuilder doesn't support apply multiple agents.")
        self.agent = EngineAgent(agent, self._env.get_config(), self._env.resources)
        self.agent.tool_requests = []
        return self

    def to_list(self) -> list[dict[str, Any]]:
        """The output list, filled by ``execute()``: ``{key: output}`` per output."""
        return self.outputs

    def to_datastream(self, output_type: Any = None) -> Any:
        raise NotImplementedError(
            "the local environment has no streams: pass a StreamExecutionEnvironment to "
            "get_execution_environment for from_datastream/to_datastream"
        )

    def to_table(self, schema: Any, output_type: Any) -> Any:
        raise NotImplementedError(
            "the local environment has no tables: pass a StreamExecutionEnvironment to "
            "get_execution_environment for from_table/to_table"
        )


class LocalExecutionEnvironment(AgentsExecutionEnvironment):
    """``from_list(inputs).apply(agent).to_list()``, then ``execute()``."""

    def __init__(self, journal: str, config: Any = None) -> None:
        super().__init__()
        if config is not None:
            raise ConfigurationError(
                "config=AgentsConfig is for the Flink environment; the local one is configured "
                "with get_config() and journal=PATH"
            )
        self.journal = journal
        self._config = AgentConfiguration()
        self._builder: LocalAgentBuilder | None = None
        self._executed = False
        self.metrics: JournalMetrics | None = None
        """The metrics of ``execute()`` (docs/operations.md), once it ran."""

    def get_config(self, path: str | None = None) -> AgentConfiguration:
        self._config.load_from_file(path)
        return self._config

    def from_list(self, input: list[dict[str, Any]]) -> LocalAgentBuilder:
        if self._builder is not None:
            raise RuntimeError(
                "LocalExecutionEnvironment doesn't support call from_list multiple times."
            )
        self._builder = LocalAgentBuilder(self, input)
        return self._builder

    def from_datastream(self, input: Any, key_selector: Any = None) -> AgentBuilder:
        return self._no_flink("from_datastream")

    def from_table(self, input: Any, key_selector: Any = None) -> AgentBuilder:
        return self._no_flink("from_table")

    def execute(self, job_name: str | None = None) -> None:
        """Run every input through the agent; outputs go to the ``to_list()`` list."""
        if self._executed:
            raise RuntimeError("LocalExecutionEnvironment doesn't support execute multiple times.")
        builder = self._builder
        if builder is None or builder.agent is None:
            raise RuntimeError("call from_list(...).apply(agent) before execute()")
        self._executed = True
        self.metrics = asyncio.run(
            _run(builder.agent, builder.inputs, builder.outputs, self.journal)
        )

    def get_tool_request_events(self) -> list[ToolRequestEvent]:
        """The tool requests that ran during ``execute()``, in order (replayed runs' not)."""
        builder = self._builder
        if builder is None or builder.agent is None or builder.agent.tool_requests is None:
            return []
        return list(builder.agent.tool_requests)

    def _no_flink(self, what: str) -> AgentBuilder:
        raise NotImplementedError(
            f"{what} needs Flink: pass a StreamExecutionEnvironment to "
            "AgentsExecutionEnvironment.get_execution_environment(env)"
        )


async def _run(
    agent: EngineAgent, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]], journal: str
) -> JournalMetrics:
    journal_settings = journal_config(agent.config)
    store = open_store(store_config(agent.config, journal), journal_settings.record_codec())
    runner = LocalRunner(agent, store, journal_settings)
    try:
        for index, item in enumerate(inputs):
            key, value = _key_and_value(index, item)
            runner.submit(key, value)
            await runner.drain()
            outputs.extend(
                {k: rows.from_journal(e.attributes["output"])} for k, e in runner.outputs
            )
            runner.outputs.clear()
        return runner.metrics
    finally:
        agent.resource_cache().close()
        store.close()


def _key_and_value(index: int, item: Any) -> tuple[Any, Any]:
    if not isinstance(item, dict) or not ("value" in item or "v" in item):
        raise RuntimeError(f"input #{index} must be a dict with a 'value' (or 'v') field: {item!r}")
    if "key" in item or "k" in item:
        key = item["key"] if "key" in item else item["k"]
    else:
        key = position_key(index)
    return key, rows.to_journal(item["value"] if "value" in item else item["v"])


def position_key(index: int) -> str:
    """The key of an input without one: a UUID, as upstream gives (it gives a random one),
    but derived from the input's position in the list, so running the same list again
    finds the run in the journal and replays it."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"actionjournal:from_list:{index}"))
