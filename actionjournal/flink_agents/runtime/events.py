"""Flink Agents events to the engine's and back: what is journaled is ``attributes``.

Fields a subclass declares, and extra keyword fields (``Event(type="t", a=1)``), travel
in the engine event's attributes under one reserved key, so nothing of an event is lost
when it is journaled and rebuilt.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from actionjournal.durable import events as engine
from actionjournal.flink_agents.api.events.event import Event, event_class
from actionjournal.flink_agents.runtime import rows

FIELDS = "__flink_agents_fields__"
_OWN = ("id", "type", "attributes", "upstream_event_id", "upstream_action")


def to_engine(event: Event) -> engine.Event:
    """The engine event that journals ``event``."""
    attributes: dict[str, Any] = rows.to_journal(dict(event.attributes))
    fields = {n: getattr(event, n) for n in type(event).model_fields if n not in _OWN}
    fields.update(event.model_extra or {})
    if fields:
        attributes[FIELDS] = rows.to_journal(fields)
    return engine.Event(event.type, attributes)


def to_face(event: engine.Event) -> Event:
    """``event`` as actions receive it: the class registered for its type, with its id."""
    attributes = rows.from_journal(dict(event.attributes))
    fields = attributes.pop(FIELDS, {})
    cls = event_class(event.type)
    event_id = UUID(hex=event.id) if event.id else None
    upstream = UUID(hex=event.upstream_event_id) if event.upstream_event_id else None
    return cls.model_construct(
        id=event_id,
        type=event.type,
        attributes=attributes,
        upstream_event_id=upstream,
        upstream_action=event.upstream_action,
        **fields,
    )


def event_id(engine_id: str) -> UUID:
    return UUID(hex=engine_id)
