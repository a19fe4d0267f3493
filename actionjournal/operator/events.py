"""The events' former path: they live in :mod:`actionjournal.durable.events` (below chat,
whose request and response events build on them); these names stay importable from here."""

from actionjournal.durable.events import Event, InputEvent, OutputEvent, event_type_of

__all__ = ["Event", "InputEvent", "OutputEvent", "event_type_of"]
