"""Flink Agents' decorators: actions, and resources declared by static methods of an agent.

Resource kinds actionjournal does not provide (embedding models, vector stores, MCP
servers, skills, Java resources) raise when used, naming what to do instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actionjournal.flink_agents.api.events.event import Event

LISTEN = "_listen_events"
RESOURCE_MARKS = ("_is_chat_model_connection", "_is_chat_model_setup", "_is_tool", "_is_prompt")


def action(*listen_events: str | type[Event], target: Any = None) -> Callable[[Any], Any]:
    """Mark ``(event, ctx)`` (a ``@staticmethod``, either decorator order) as an action
    triggered by events of the given types: type strings, or event classes with an
    ``EVENT_TYPE`` (``@action(InputEvent)`` as well as ``@action(InputEvent.EVENT_TYPE)``).
    """
    if not listen_events:
        raise TypeError("action must have at least one event type to listen to")
    if target is not None:
        raise NotImplementedError(
            "action(target=...) runs a Java or cross-language function: not supported by "
            "actionjournal (Python actions only); write the action's body in Python"
        )
    types = tuple(_event_type(e) for e in listen_events)

    def decorator(func: Any) -> Any:
        setattr(func, LISTEN, types)
        return func

    return decorator


def _event_type(listen: Any) -> str:
    if isinstance(listen, str):
        return listen
    declared = getattr(listen, "EVENT_TYPE", None)
    if isinstance(listen, type) and issubclass(listen, Event) and isinstance(declared, str):
        return declared
    raise TypeError(
        f"action must listen to event type strings or Event classes with EVENT_TYPE, got {listen!r}"
    )


def _mark(flag: str) -> Callable[[Any], Any]:
    def decorator(func: Any) -> Any:
        setattr(func, flag, True)
        return func

    return decorator


chat_model_connection = _mark("_is_chat_model_connection")
"""A static method returning the ``ResourceDescriptor`` of a chat model connection."""
chat_model_setup = _mark("_is_chat_model_setup")
"""A static method returning the ``ResourceDescriptor`` of a chat model setup."""
tool = _mark("_is_tool")
"""A static method that is a tool: the model may ask for it; it runs as a durable call."""
prompt = _mark("_is_prompt")
"""A static method returning a ``Prompt``."""


def _absent(what: str) -> Callable[[Any], Any]:
    def decorator(func: Any) -> Any:
        raise NotImplementedError(
            f"{what} are not supported by actionjournal's Flink Agents face "
            f"({getattr(func, '__qualname__', func)}); see docs/porting.md"
        )

    return decorator


embedding_model_connection = _absent("embedding model connections")
embedding_model_setup = _absent("embedding model setups")
vector_store = _absent("vector stores")
mcp_server = _absent("MCP servers")
skills = _absent("skills")
java_resource = _absent("Java resources")
