"""Events connect actions: an action listens on event types and sends new events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class Event:
    """An event of ``type`` with ``attributes`` (plain data or pydantic models).

    ``id`` is assigned when the event is sent and derives from the operator uid, the
    key and the action execution that sent it, so a replayed event keeps its original
    id and ids of different keys never collide.

    A subclass names its type with ``TYPE`` or, as Flink Agents spells it,
    ``EVENT_TYPE``; it keeps its data in ``attributes`` (expose fields as properties).
    Actions receive events rebuilt from their journaled form, as the class registered
    for their type, both on the first run and after a recovery.
    """

    TYPE: ClassVar[str | None] = None
    EVENT_TYPE: ClassVar[str | None] = None
    _by_type: ClassVar[dict[str, type[Event]]] = {}

    __slots__ = ("attributes", "id", "type", "upstream_action", "upstream_event_id")

    def __init__(
        self, type: str, attributes: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> None:
        self.type = type
        self.attributes = dict(attributes or {})
        self.id = id
        # Lineage, set by the engine when the event is delivered (live or replayed): the id of
        # the event whose action sent this one, and that action (None: a run's input).
        self.upstream_event_id: str | None = None
        self.upstream_action: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("TYPE") or cls.__dict__.get("EVENT_TYPE")
        if declared is not None:  # only a type the class declares itself, not an inherited one
            cls.TYPE = cls.EVENT_TYPE = declared
            Event._by_type[declared] = cls

    @staticmethod
    def rebuild(
        event_type: str,
        attributes: dict[str, Any],
        event_id: str | None,
        upstream: tuple[str | None, str | None] = (None, None),
    ) -> Event:
        """The event as actions receive it: the class registered for ``event_type``;
        ``upstream``: (the event whose action sent it, that action)."""
        cls = Event._by_type.get(event_type, Event)
        event = cls.__new__(cls)
        Event.__init__(event, event_type, attributes, id=event_id)
        event.upstream_event_id, event.upstream_action = upstream
        return event

    def __repr__(self) -> str:
        return f"{type(self).__name__}(type={self.type!r}, attributes={self.attributes!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and (self.type, self.attributes) == (
            other.type,
            other.attributes,
        )

    __hash__ = None  # type: ignore[assignment]


class InputEvent(Event):
    """The input of a run; every agent has at least one action listening on it."""

    TYPE = "input"
    __slots__ = ()

    def __init__(self, input: Any, *, id: str | None = None) -> None:
        super().__init__(self.TYPE, {"input": input}, id=id)

    @property
    def input(self) -> Any:
        return self.attributes["input"]


class OutputEvent(Event):
    """An output of the agent: leaves the run, goes downstream."""

    TYPE = "output"
    __slots__ = ()

    def __init__(self, output: Any, *, id: str | None = None) -> None:
        super().__init__(self.TYPE, {"output": output}, id=id)

    @property
    def output(self) -> Any:
        return self.attributes["output"]


def event_type_of(listen: str | type[Event]) -> str:
    if isinstance(listen, str):
        return listen
    if isinstance(listen, type) and issubclass(listen, Event) and listen.TYPE:
        return listen.TYPE
    raise TypeError(
        "@action listens on event types (str) or Event subclasses that declare TYPE (or "
        f"EVENT_TYPE): {listen!r}"
    )
