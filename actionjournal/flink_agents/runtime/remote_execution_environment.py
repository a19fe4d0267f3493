"""The Flink environment: agents on PyFlink streams and tables, through actionjournal's
PyFlink binding (``actionjournal.flink.function``), which keeps each key's state in Flink
keyed state and journals to the configured store."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from actionjournal.flink.config import AgentsConfig
from actionjournal.flink_agents.api.agents.agent import Agent
from actionjournal.flink_agents.api.execution_environment import (
    AgentBuilder,
    AgentsExecutionEnvironment,
)
from actionjournal.flink_agents.runtime import rows
from actionjournal.flink_agents.runtime.configuration import (
    AgentConfiguration,
    async_threads,
    journal_config,
    store_config,
)
from actionjournal.flink_agents.runtime.plan import EngineAgent

log = logging.getLogger(__name__)
_CONFIG_FILES = ("flink-conf.yaml", "config.yaml")  # upstream reads the legacy name first


class RemoteAgentBuilder(AgentBuilder):
    def __init__(self, env: RemoteExecutionEnvironment, keyed: Any) -> None:
        self._env = env
        self._keyed = keyed
        self._agent: EngineAgent | None = None
        self._output: Any = None

    def apply(self, agent: Agent) -> AgentBuilder:
        if self._agent is not None:
            raise RuntimeError("RemoteAgentBuilder doesn't support apply multiple agents yet.")
        self._agent = EngineAgent(agent, self._env.get_config(), self._env.resources)
        return self

    def to_datastream(self, output_type: Any = None) -> Any:
        """Each output of the agent (``OutputEvent.output``) in its JSON form, as upstream
        emits it (a pydantic model as a dict), typed as ``output_type`` (default: pickled
        Python objects). The same stream when called again."""
        if self._agent is None:
            raise RuntimeError("Must apply agent before call to_datastream/to_table.")
        if self._output is None:
            from actionjournal.flink.function import AgentsExecutionEnvironment as Binding

            binding = Binding.get_execution_environment(self._env.env, self._env.agents_config())
            job = binding.from_datastream(self._keyed).apply(self._agent)
            self._output = job.to_datastream().map(rows.upstream_output, output_type=output_type)
        return self._output

    def to_table(self, schema: Any, output_type: Any) -> Any:
        return self._env.t_env.from_data_stream(self.to_datastream(output_type), schema)

    def to_list(self) -> list[dict[str, Any]]:
        raise NotImplementedError(
            "the Flink environment has streams, not lists: use to_datastream() or to_table()"
        )


class RemoteExecutionEnvironment(AgentsExecutionEnvironment):
    """Agents on a ``StreamExecutionEnvironment``; ``config``: an actionjournal
    ``AgentsConfig`` to run with instead of the one the options describe."""

    def __init__(
        self, env: Any, t_env: Any, journal: str, config: AgentsConfig | None = None
    ) -> None:
        super().__init__()
        self.env = env
        self._t_env = t_env
        self.journal = journal
        self._agents_config = config
        self._config = AgentConfiguration()
        conf_dir = os.environ.get("FLINK_CONF_DIR")
        if conf_dir:
            found = [Path(conf_dir, n) for n in _CONFIG_FILES if Path(conf_dir, n).exists()]
            if found:
                self._config.load_from_file(str(found[0]))
            else:
                log.error("no %s in FLINK_CONF_DIR=%s", " or ".join(_CONFIG_FILES), conf_dir)

    @property
    def t_env(self) -> Any:
        if self._t_env is None:
            from pyflink.table import StreamTableEnvironment

            self._t_env = StreamTableEnvironment.create(stream_execution_environment=self.env)
        return self._t_env

    def get_config(self, path: str | None = None) -> AgentConfiguration:
        self._config.load_from_file(path)
        return self._config

    def agents_config(self) -> AgentsConfig:
        """What the job runs with: the given ``AgentsConfig``, else the options mapped."""
        if self._agents_config is not None:
            return self._agents_config
        conf = self._config
        threads = async_threads(conf)
        return AgentsConfig(
            journal=journal_config(conf),
            store=store_config(conf, self.journal),
            **({"max_concurrent_runs": threads} if threads else {}),
        )

    def from_list(self, input: list[dict[str, Any]]) -> AgentBuilder:
        raise NotImplementedError(
            "from_list is the local environment's: call get_execution_environment() without a "
            "StreamExecutionEnvironment"
        )

    def from_datastream(self, input: Any, key_selector: Any = None) -> RemoteAgentBuilder:
        """The agent's input: a keyed stream, or a stream keyed here by ``key_selector``."""
        from pyflink.datastream import KeyedStream

        if isinstance(input, KeyedStream):
            return RemoteAgentBuilder(self, input)
        if key_selector is None:
            raise RuntimeError(
                "KeySelector must be provided: runs of one key are sequential and journaled "
                "under it, so the agent must know each element's key"
            )
        return RemoteAgentBuilder(self, input.key_by(key_selector))

    def from_table(self, input: Any, key_selector: Any = None) -> RemoteAgentBuilder:
        """The table's rows as input (actions receive them as ``Row`` objects)."""
        from pyflink.common import Types

        if key_selector is None:
            raise RuntimeError("KeySelector must be provided for from_table")
        stream = self.t_env.to_data_stream(input).map(
            rows.to_journal, output_type=Types.PICKLED_BYTE_ARRAY()
        )
        return RemoteAgentBuilder(self, stream.key_by(_RowKey(key_selector)))

    def execute(self, job_name: str | None = None) -> Any:
        return self.env.execute(job_name)


class _RowKey:
    """``key_selector`` applied to the row an element journals (a picklable callable)."""

    def __init__(self, key_selector: Any) -> None:
        self.key_selector = key_selector

    def __call__(self, element: Any) -> Any:
        select = getattr(self.key_selector, "get_key", self.key_selector)  # a KeySelector too
        return select(rows.from_journal(element))
