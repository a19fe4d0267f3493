"""Events as Flink Agents writes them: pydantic models with a ``type`` and ``attributes``.

``Event(type="...", attributes={...})`` is a unified event; a subclass with an
``EVENT_TYPE`` class variable is a typed one, and actions receive it as that class
(rebuilt from its journaled form, live and after a recovery alike). The engine journals
``attributes``; fields declared on a subclass and extra keyword fields travel with them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

from actionjournal.flink_agents.runtime import rows

_REGISTRY: dict[str, type[Event]] = {}


def event_class(event_type: str) -> type[Event]:
    """The class actions receive an event of ``event_type`` as (``Event`` if none declares it)."""
    return _REGISTRY.get(event_type, Event)


class Event(BaseModel):
    """An event of ``type`` with ``attributes``.

    ``id`` is provisional (derived from the content) until the event is sent:
    ``ctx.send_event`` sets the id the engine gives it, unique per key, action and
    position and the same after a recovery (see docs/porting.md).
    """

    model_config = ConfigDict(extra="allow")

    id: UUID | None = Field(default=None)
    type: str
    attributes: dict[str, Any] = Field(default_factory=dict)
    # Lineage (upstream's 0.4 names), set on events actions receive: the event whose action
    # sent this one, and that action; None on a run's input event and on events not sent yet.
    upstream_event_id: UUID | None = Field(default=None)
    upstream_action: str | None = Field(default=None)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        declared = cls.__dict__.get("EVENT_TYPE")
        if isinstance(declared, str):
            _REGISTRY[declared] = cls

    @model_validator(mode="after")
    def _provisional_id(self) -> Event:
        if self.id is None:
            content = self.model_dump_json(
                exclude={"id", "upstream_event_id", "upstream_action"}, fallback=repr
            )
            digest = hashlib.md5(content.encode(), usedforsecurity=False).digest()
            object.__setattr__(self, "id", UUID(bytes=digest, version=3))
        return self

    def model_dump_json(self, **kwargs: Any) -> str:
        """JSON of the event; PyFlink ``Row`` values in upstream's ``{"type": "Row", ...}``."""
        kwargs.setdefault("fallback", rows.json_fallback)
        return super().model_dump_json(**kwargs)

    def get_type(self) -> str:
        """The type string events are routed by."""
        return self.type

    def get_attr(self, name: str) -> Any:
        return self.attributes.get(name)

    def set_attr(self, name: str, value: Any) -> None:
        self.attributes[name] = value

    @classmethod
    def from_event(cls, event: Event) -> Event:
        """The typed form of ``event``; subclasses rebuild themselves, the base returns it."""
        return event

    @classmethod
    def from_json(cls, json_str: str) -> Event:
        """A unified event from JSON with at least a non-empty ``type``."""
        data = json.loads(json_str)
        if not isinstance(data, dict) or not data.get("type"):
            raise ValueError("Event JSON must contain a non-empty 'type' field.")
        event = cls.model_validate(data)
        event.attributes = {k: rows.from_json(v) for k, v in event.attributes.items()}
        return event


class InputEvent(Event):
    """The input of a run: ``input`` is the element that arrived for the key."""

    EVENT_TYPE: ClassVar[str] = "_input_event"

    def __init__(self, input: Any) -> None:
        super().__init__(type=InputEvent.EVENT_TYPE, attributes={"input": input})

    @classmethod
    def from_event(cls, event: Event) -> InputEvent:
        if "input" not in event.attributes:
            raise ValueError(f"event {event.type!r} has no 'input' attribute: not an InputEvent")
        result = InputEvent(event.attributes["input"])
        result.id = event.id
        return result

    @property
    def input(self) -> Any:
        return self.get_attr("input")


class OutputEvent(Event):
    """An output of the agent: ``output`` leaves the run and goes downstream."""

    EVENT_TYPE: ClassVar[str] = "_output_event"

    def __init__(self, output: Any) -> None:
        super().__init__(type=OutputEvent.EVENT_TYPE, attributes={"output": output})

    @classmethod
    def from_event(cls, event: Event) -> OutputEvent:
        if "output" not in event.attributes:
            raise ValueError(f"event {event.type!r} has no 'output' attribute: not an OutputEvent")
        result = OutputEvent(event.attributes["output"])
        result.id = event.id
        return result

    @property
    def output(self) -> Any:
        return self.get_attr("output")
