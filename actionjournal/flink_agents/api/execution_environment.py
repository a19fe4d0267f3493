"""Where agents run: ``AgentsExecutionEnvironment.get_execution_environment()``.

Without a Flink environment it is the local environment (``from_list``/``to_list``,
``execute``), durable: its journal is ``journal=PATH``, else the path in the
``ACTIONJOURNAL_JOURNAL`` environment variable, else the default SQLite journal
(``actionjournal.db``), so an unchanged Flink Agents script that is stopped and run
again replays what it finished instead of doing it again. With a
``StreamExecutionEnvironment`` it attaches agents to PyFlink streams and tables.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Any

from actionjournal.flink_agents.api.agents.agent import Agent
from actionjournal.flink_agents.api.resource import ResourceType
from actionjournal.stores.config import SqliteStoreConfig

JOURNAL_ENV = "ACTIONJOURNAL_JOURNAL"


class AgentBuilder(ABC):
    """An input with an agent applied to it; its outputs as a list, a stream or a table."""

    @abstractmethod
    def apply(self, agent: Agent) -> AgentBuilder: ...

    @abstractmethod
    def to_list(self) -> list[dict[str, Any]]:
        """Outputs as ``[{key: output}, ...]`` (local environment)."""

    @abstractmethod
    def to_datastream(self, output_type: Any = None) -> Any:
        """Outputs as a PyFlink ``DataStream`` (Flink environment)."""

    @abstractmethod
    def to_table(self, schema: Any, output_type: Any) -> Any:
        """Outputs as a PyFlink ``Table`` (Flink environment)."""


class AgentsExecutionEnvironment(ABC):
    def __init__(self) -> None:
        self._resources: dict[ResourceType, dict[str, Any]] = {t: {} for t in ResourceType}

    @property
    def resources(self) -> dict[ResourceType, dict[str, Any]]:
        """Resources added here, shared by the agents applied in this environment."""
        return self._resources

    @staticmethod
    def get_execution_environment(
        env: Any = None, t_env: Any = None, *, journal: str | None = None, **kwargs: Any
    ) -> AgentsExecutionEnvironment:
        """The local environment without ``env``; with a ``StreamExecutionEnvironment``, the
        Flink one. ``journal``: the SQLite journal's path (see the module docstring);
        ``config``: an actionjournal ``AgentsConfig`` to use instead of the options."""
        path = journal or os.environ.get(JOURNAL_ENV) or SqliteStoreConfig().path
        if env is None:
            from actionjournal.flink_agents.runtime.local_execution_environment import (
                LocalExecutionEnvironment,
            )

            return LocalExecutionEnvironment(path, **kwargs)
        from actionjournal.flink_agents.runtime.remote_execution_environment import (
            RemoteExecutionEnvironment,
        )

        return RemoteExecutionEnvironment(env, t_env, path, **kwargs)

    @abstractmethod
    def get_config(self, path: str | None = None) -> Any:
        """The configuration (``AgentConfiguration``); ``path``: a YAML file's ``agent:``
        section is added to it."""

    @abstractmethod
    def from_list(self, input: list[dict[str, Any]]) -> AgentBuilder:
        """Inputs ``{"key": ..., "value": ...}`` (or ``k``/``v``) for the local environment."""

    @abstractmethod
    def from_datastream(self, input: Any, key_selector: Any = None) -> AgentBuilder:
        """A PyFlink stream as input: keyed, or keyed here by ``key_selector``."""

    @abstractmethod
    def from_table(self, input: Any, key_selector: Any = None) -> AgentBuilder:
        """A PyFlink table as input: its rows, keyed by ``key_selector``."""

    @abstractmethod
    def execute(self, job_name: str | None = None) -> None: ...

    def add_resource(
        self, name: str, resource_type: ResourceType, instance: Any
    ) -> AgentsExecutionEnvironment:
        """Add a resource every agent applied here can use (an agent's own one of the same
        name wins)."""
        if name in self._resources[resource_type]:
            raise ValueError(f"{resource_type.value} {name} already defined")
        self._resources[resource_type][name] = instance
        return self

    def load_yaml(self, paths: Any) -> None:
        raise NotImplementedError(
            "YAML agent definitions are not supported by actionjournal's Flink Agents face; "
            "declare the agent in Python (see docs/porting.md)"
        )
