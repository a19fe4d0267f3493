"""Tool request and response events, answered by the built-in tool action."""

from __future__ import annotations

from typing import Any, ClassVar
from uuid import UUID

from actionjournal.flink_agents.api.events.event import Event


class ToolRequestEvent(Event):
    """Calls the model ``model`` asked for: ``{"id", "type", "function": {"name",
    "arguments"}, "original_id"}`` each."""

    EVENT_TYPE: ClassVar[str] = "_tool_request_event"

    def __init__(self, model: str, tool_calls: list[dict[str, Any]]) -> None:
        super().__init__(
            type=ToolRequestEvent.EVENT_TYPE,
            attributes={"model": model, "tool_calls": list(tool_calls)},
        )

    @classmethod
    def from_event(cls, event: Event) -> ToolRequestEvent:
        result = ToolRequestEvent(event.attributes["model"], event.attributes["tool_calls"])
        result.id = event.id
        return result

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
    ) -> None:
        super().__init__(
            type=ToolResponseEvent.EVENT_TYPE,
            attributes={
                "request_id": request_id,
                "responses": dict(responses),
                "external_ids": dict(external_ids),
            },
        )

    @classmethod
    def from_event(cls, event: Event) -> ToolResponseEvent:
        attributes = event.attributes
        result = ToolResponseEvent(
            attributes["request_id"], attributes["responses"], attributes["external_ids"]
        )
        result.id = event.id
        return result

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
