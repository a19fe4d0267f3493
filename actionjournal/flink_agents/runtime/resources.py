"""An agent's resources: what was declared, and the instances built from it on first use.

Declarations travel with the agent (to Flink workers too); instances, which hold
clients and connections, are built in the process that runs the agent and never leave it.
"""

from __future__ import annotations

import threading
from typing import Any

from actionjournal.durable.errors import ConfigurationError
from actionjournal.flink_agents.api.decorators import RESOURCE_MARKS
from actionjournal.flink_agents.api.resource import Resource, ResourceDescriptor, ResourceType
from actionjournal.flink_agents.runtime.configuration import AgentConfiguration

Declared = dict[ResourceType, dict[str, Any]]  # type -> name -> descriptor, Tool or Prompt


def declared_resources(agent: Any, shared: Declared) -> Declared:
    """The resources of ``agent``: decorated static methods, then ``add_resource``; those
    added to the environment (``shared``) fill in names the agent does not declare."""
    from actionjournal.flink_agents.api.tools.function_tool import FunctionTool

    own: Declared = {t: {} for t in ResourceType}
    for name, member in members(type(agent)):
        fn = member.__func__ if isinstance(member, staticmethod) else member
        # The mark is on the staticmethod or on its function, by decorator order.
        mark = next((m for m in RESOURCE_MARKS if getattr(member, m, getattr(fn, m, False))), None)
        if mark is None:
            continue
        if mark == "_is_tool":
            own[ResourceType.TOOL][name] = FunctionTool(func=fn)
            continue
        declared = fn()
        kind = ResourceType.PROMPT if mark == "_is_prompt" else _type_of(declared, name)
        own[kind][name] = declared
    for kind, by_name in agent.resources.items():
        for name, declared in by_name.items():
            if name in own[kind]:
                raise ValueError(f"{kind.value} {name} already defined")
            own[kind][name] = declared
    return {kind: {**shared.get(kind, {}), **own[kind]} for kind in ResourceType}


def _type_of(declared: Any, name: str) -> ResourceType:
    if isinstance(declared, ResourceDescriptor):
        return declared.clazz.resource_type()
    if isinstance(declared, Resource):
        return declared.resource_type()
    raise TypeError(f"resource {name!r} is {declared!r}: return a ResourceDescriptor")


def members(cls: type) -> list[tuple[str, Any]]:
    """Attributes of ``cls`` and its bases, in definition order (subclasses override)."""
    seen: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        seen.update(vars(klass))
    return list(seen.items())


class ResourceCache:
    """Builds each declared resource once, opens it, and hands it out by name and type.

    It is also the ``resource_context`` of the resources it builds: a chat model setup
    finds its connection, prompt and tools through it.
    """

    def __init__(self, declared: Declared, config: AgentConfiguration) -> None:
        self._declared = declared
        self._config = config
        self._built: dict[tuple[ResourceType, str], Resource] = {}
        self._lock = threading.RLock()  # a setup's open() gets its connection recursively

    def get_resource(self, name: str, resource_type: ResourceType) -> Resource:
        with self._lock:
            built = self._built.get((resource_type, name))
            if built is None:
                built = self._built[(resource_type, name)] = self._build(name, resource_type)
            return built

    def close(self) -> None:
        with self._lock:
            for resource in self._built.values():
                resource.close()
            self._built.clear()

    def _build(self, name: str, resource_type: ResourceType) -> Resource:
        declared = self._declared.get(resource_type, {}).get(name)
        if declared is None:
            known = sorted(self._declared.get(resource_type, {})) or "none"
            raise KeyError(
                f"Resource not found: '{name}' of type {resource_type} (declared: {known})"
            )
        if isinstance(declared, ResourceDescriptor):
            cls = declared.clazz
            arguments = {
                **self._config.get_config_data_by_prefix(cls.__name__),
                **declared.arguments,
            }
            try:
                resource = cls(**arguments, resource_context=self)
            except (TypeError, ValueError) as exc:
                raise ConfigurationError(f"resource {name!r} ({cls.__name__}): {exc}") from None
        elif isinstance(declared, Resource):
            resource = declared.model_copy(update={"resource_context": self})
        else:
            raise TypeError(f"resource {name!r} is {declared!r}, not a descriptor or a Resource")
        resource.open()
        return resource
