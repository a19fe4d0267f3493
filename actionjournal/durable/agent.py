"""The agent model: an Agent is a set of actions connected by events."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from actionjournal.durable.effects import is_coroutine_function
from actionjournal.durable.events import Event, InputEvent, OutputEvent, event_type_of

_ACTION_ATTR = "__actionjournal_action__"
NAME_ATTR = "__actionjournal_reconciler_name__"
"""Set on an agent method by ``@reconciler(name)`` (actionjournal.reconcilers)."""


def action(*listen: str | type[Event]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a method ``(self, event, ctx)`` as an action triggered by the given event types.

    The method may be ``async def``, and may be a ``@staticmethod`` ``(event, ctx)`` as
    Flink Agents writes actions (either decorator order). Async actions of one run
    progress concurrently; a ``def`` action runs alone (see docs/concepts.md).
    """
    if not listen:
        raise TypeError("@action needs at least one event type, e.g. @action(InputEvent)")
    types = tuple(event_type_of(t) for t in listen)

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        setattr(fn, _ACTION_ATTR, types)
        return fn

    return mark


@dataclass(frozen=True)
class ActionSpec:
    name: str
    listens: tuple[str, ...]
    fn: Callable[..., Any]  # bound method, or the plain function of a staticmethod
    is_async: bool


class Agent:
    """Subclass it and decorate methods with :func:`action`.

    ``uid`` is the stable operator uid: it becomes the Flink operator uid and part
    of every journal record's identity. Change it and the old journal no longer
    applies (see docs/upgrade.md).
    """

    uid: ClassVar[str | None] = None
    input_event_type: ClassVar[str] = InputEvent.TYPE
    """The type of the event that starts a run, attributes ``{"input": value}``."""
    output_event_type: ClassVar[str] = OutputEvent.TYPE
    """Events of this type leave the run as outputs (``attributes["output"]``). A face
    with other names for both (Flink Agents' ``_input_event``/``_output_event``) sets them."""

    @property
    def operator_uid(self) -> str:
        return self.uid or type(self).__name__

    def reconcilers(self) -> dict[str, Callable[..., Any]]:
        """Methods registered with ``@reconciler(name)``, by name."""
        cached: dict[str, Callable[..., Any]] | None = self.__dict__.get("_reconcilers_by_name")
        if cached is None:
            cached = {
                getattr(member, NAME_ATTR): getattr(self, name)
                for name, member in _members_in_order(type(self))
                if hasattr(member, NAME_ATTR)
            }
            self.__dict__["_reconcilers_by_name"] = cached
        return cached

    def actions(self) -> dict[str, list[ActionSpec]]:
        """Actions by the event type they listen on, in definition order."""
        cached: dict[str, list[ActionSpec]] | None = self.__dict__.get("_actions_by_type")
        if cached is not None:
            return cached
        by_type: dict[str, list[ActionSpec]] = {}
        for name, member in _members_in_order(type(self)):
            types = _action_types(member)
            if types is None:
                continue
            bound = getattr(self, name)
            if inspect.isgeneratorfunction(bound) or inspect.isasyncgenfunction(bound):
                raise TypeError(
                    f"action {type(self).__name__}.{name} is a generator: an action must run "
                    "to its end and return; send events with ctx.send_event instead of yield"
                )
            spec = ActionSpec(name, types, bound, is_coroutine_function(bound))
            for t in types:
                by_type.setdefault(t, []).append(spec)
        if not by_type:
            raise TypeError(f"{type(self).__name__} has no @action methods")
        self.__dict__["_actions_by_type"] = by_type
        return by_type

    def action_names(self) -> set[str]:
        """Names of every action of the agent (the journal records actions by name)."""
        return {spec.name for specs in self.actions().values() for spec in specs}


def _action_types(member: Any) -> tuple[str, ...] | None:
    """The event types of an ``@action``, also when ``@staticmethod`` was applied last."""
    types = getattr(member, _ACTION_ATTR, None)
    if types is None and isinstance(member, (staticmethod, classmethod)):
        types = getattr(member.__func__, _ACTION_ATTR, None)
    return types


def _members_in_order(cls: type) -> list[tuple[str, Any]]:
    seen: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            seen[name] = member
    return list(seen.items())
