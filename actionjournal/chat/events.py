"""The event form of a chat call: ``ChatRequestEvent`` -> built-in chat action ->
``ChatResponseEvent``.

Events are journaled as plain data, so a request names its schema by its dotted type
name; the built-in action finds it among the modules already imported (journal data
never triggers an import), which the agent's own module has done.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from actionjournal.chat.calls import Messages, normalize_messages
from actionjournal.chat.models import ChatResponse
from actionjournal.durable.errors import ConfigurationError
from actionjournal.durable.events import Event
from actionjournal.durable.values import loaded_type, type_name


class ChatRequestEvent(Event):
    """Ask chat model ``model`` (a name in the agent's ``chat_models``).

    ``request_id`` comes back on the :class:`ChatResponseEvent` so a handler can tell
    responses apart; without one, the response carries this event's id. The agent must
    be a :class:`~actionjournal.chat.ChatAgent` (whose built-in action answers it), or
    have its own action listening on it: an event nobody listens on goes nowhere.
    """

    TYPE = "chat_request"
    __slots__ = ()

    def __init__(
        self,
        model: str,
        messages: Messages,
        *,
        schema: type[BaseModel] | None = None,
        request_id: str | None = None,
        id: str | None = None,
    ) -> None:
        if schema is not None and not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise TypeError(f"schema must be a pydantic model class, got {schema!r}")
        super().__init__(
            self.TYPE,
            {
                "model": model,
                "messages": normalize_messages(messages),
                "schema": type_name(schema) if schema is not None else None,
                "request_id": request_id,
            },
            id=id,
        )

    @property
    def model(self) -> str:
        return self.attributes["model"]

    @property
    def messages(self) -> list[dict[str, str]]:
        return self.attributes["messages"]

    @property
    def request_id(self) -> str:
        return self.attributes.get("request_id") or self.id or ""

    def schema(self) -> type[BaseModel] | None:
        """The requested schema class, looked up among loaded modules."""
        name = self.attributes.get("schema")
        if name is None:
            return None
        found = loaded_type(name)
        if found is None or not issubclass(found, BaseModel):
            raise ConfigurationError(
                f"chat request {self.request_id!r} asks for schema {name}, which is not defined "
                "in this process; define it in a module the agent imports (not in __main__)"
            )
        return found


class ChatResponseEvent(Event):
    """The answer to a :class:`ChatRequestEvent`: its ``request_id``, the raw ``response``
    and, for a structured request, the validated ``parsed`` object."""

    TYPE = "chat_response"
    __slots__ = ()

    def __init__(
        self,
        request_id: str,
        model: str,
        response: ChatResponse,
        parsed: BaseModel | None = None,
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(
            self.TYPE,
            {"request_id": request_id, "model": model, "response": response, "parsed": parsed},
            id=id,
        )

    @property
    def request_id(self) -> str:
        return self.attributes["request_id"]

    @property
    def model(self) -> str:
        return self.attributes["model"]

    @property
    def response(self) -> ChatResponse:
        return self.attributes["response"]

    @property
    def content(self) -> str:
        return self.response.content

    @property
    def parsed(self) -> Any:
        return self.attributes["parsed"]
