"""Events connect actions: an action listens on event types and sends new events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class Event:
    """An event of ``type`` with ``attributes`` (plain data or pydantic models).

    ``id`` is assigned when the event is sent and derives from the action
    execution that sent it, so a replayed event keeps its original id.
    """

    TYPE: ClassVar[str | None] = None
    _by_type: ClassVar[dict[str, type[Event]]] = {}

    __slots__ = ("attributes", "id", "type")

    def __init__(
        self, type: str, attributes: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> None:
        self.type = type
        self.attributes = dict(attributes or {})
        self.id = id

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.TYPE is not None:
            Event._by_type[cls.TYPE] = cls

    @staticmethod
    def rebuild(event_type: str, attributes: dict[str, Any], event_id: str) -> Event:
        cls = Event._by_type.get(event_type, Event)
        event = cls.__new__(cls)
        Event.__init__(event, event_type, attributes, id=event_id)
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
        f"@action listens on event types (str) or Event subclasses with TYPE: {listen!r}"
    )
