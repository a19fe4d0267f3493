"""Tool request and response events, answered by the built-in tool action."""

from __future__ import annotations

from typing import Any, ClassVar
from uuid import UUID

from actionjournal.flink_agents.api.events.event import Event


class ToolRequestEvent(Event):
    """Calls the model ``model`` asked for: ``{"id", "type", "function": {"name",
    "arguments"}, "original_id"}`` each."""

    EVENT_TYPE: ClassVar[str] = "_tool_request_event"

    def __init__(
        self, model: str, tool_calls: list[dict[str, Any]], *, context: Any = None
    ) -> None:
        """``context``: any journalable value, handed back on the ToolResponseEvent."""
        attributes: dict[str, Any] = {"model": model, "tool_calls": list(tool_calls)}
        if context is not None:
            attributes["context"] = context
        super().__init__(type=ToolRequestEvent.EVENT_TYPE, attributes=attributes)

    @classmethod
    def from_event(cls, event: Event) -> ToolRequestEvent:
        attributes = event.attributes
        result = ToolRequestEvent(
            attributes["model"], attributes["tool_calls"], context=attributes.get("context")
        )
        result.id = event.id
        return result

    @property
    def context(self) -> Any:
        """The caller's value, handed back on the response (``None`` if none was given)."""
        return self.get_attr("context")

    @property
    def model(self) -> str:
        return self.get_attr("model")

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return self.get_attr("tool_calls")


class ToolResponseEvent(Event):
    """Results of the calls of request ``request_id``, by tool call id; ``external_ids``
    are the ids the model gave the calls (results are linked to calls by them)."""

    EVENT_TYPE: ClassVar[str] = "_tool_response_event"

    def __init__(
        self,
        request_id: UUID,
        responses: dict[Any, Any],
        external_ids: dict[Any, str | None],
        *,
        context: Any = None,
    ) -> None:
        """``context``: the request's ``context``, handed back."""
        attributes: dict[str, Any] = {
            "request_id": request_id,
            "responses": dict(responses),
            "external_ids": dict(external_ids),
        }
        if context is not None:
            attributes["context"] = context
        super().__init__(type=ToolResponseEvent.EVENT_TYPE, attributes=attributes)

    @classmethod
    def from_event(cls, event: Event) -> ToolResponseEvent:
        attributes = event.attributes
        result = ToolResponseEvent(
            attributes["request_id"],
            attributes["responses"],
            attributes["external_ids"],
            context=attributes.get("context"),
        )
        result.id = event.id
        return result

    @property
    def context(self) -> Any:
        """The ``context`` of the request this answers (``None`` if it had none)."""
        return self.get_attr("context")

    @property
    def request_id(self) -> UUID:
        value = self.get_attr("request_id")
        return UUID(value) if isinstance(value, str) else value

    @property
    def responses(self) -> dict[Any, Any]:
        return self.get_attr("responses")

    @property
    def external_ids(self) -> dict[Any, str | None]:
        return self.get_attr("external_ids")
