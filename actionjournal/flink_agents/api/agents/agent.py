"""``Agent`` as Flink Agents users write it: decorated static methods, or added actions
and resources. It runs on actionjournal's engine through ``runtime.plan.EngineAgent``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from actionjournal.flink_agents.api.resource import ResourceType

STRUCTURED_OUTPUT = "structured_output"


class Agent:
    """Subclass it and declare actions with ``@action(...)`` on static methods
    ``(event, ctx)``, or add them with :meth:`add_action`.

    ``uid`` (actionjournal's addition) is the stable operator uid that every journal record
    carries; it defaults to the class name. Renaming the class without setting ``uid``
    starts a new journal (see docs/upgrade.md).
    """

    uid: ClassVar[str | None] = None

    def __init__(self) -> None:
        self._actions: dict[str, tuple[list[str], Callable[..., Any], dict[str, Any] | None]] = {}
        self._resources: dict[ResourceType, dict[str, Any]] = {t: {} for t in ResourceType}

    @property
    def actions(self) -> dict[str, tuple[list[str], Callable[..., Any], dict[str, Any] | None]]:
        """Actions added with :meth:`add_action`: ``name -> (events, func, config)``."""
        if "_actions" not in self.__dict__:
            self._actions = {}
        return self._actions

    @property
    def resources(self) -> dict[ResourceType, dict[str, Any]]:
        """Resources added with :meth:`add_resource`, by type and name."""
        if "_resources" not in self.__dict__:
            self._resources = {t: {} for t in ResourceType}
        return self._resources

    def add_action(
        self, name: str, events: list[str], func: Callable[..., Any], **config: Any
    ) -> Agent:
        """Add an action ``func(event, ctx)``; ``config`` is what ``ctx.action_config`` and
        ``ctx.get_action_config_value`` read."""
        if name in self.actions:
            raise ValueError(f"Action {name} already defined")
        self.actions[name] = (list(events), func, config or None)
        return self

    def add_resource(self, name: str, resource_type: ResourceType, instance: Any) -> Agent:
        """Add a resource: a ``ResourceDescriptor``, a ``Tool`` or a ``Prompt``."""
        if name in self.resources[resource_type]:
            raise ValueError(f"{resource_type.value} {name} already defined")
        self.resources[resource_type][name] = instance
        return self
