"""Chat model connections: an Ollama-protocol and an OpenAI-compatible client over HTTP.

A connection is a named resource of an agent (``chat_models = {"judge": OllamaChat(...)}``);
actions reach it with ``ctx.chat("judge", ...)``. The request itself is the body of a
durable call (:meth:`ChatModel.request`), so its response is journaled and replayed on
recovery instead of asking the model again. Failures to get an answer (timeout,
unreachable endpoint, HTTP error) are *not* journaled: a model request has no side
effect, so the call's retry policy asks again, and after its last attempt the call is asked
again when the run runs again.

Tool calling: ``request(..., tools=[...])`` offers tools; the tools the model asks for come
back in ``ChatResponse.tool_calls``, and their results go back as ``tool`` messages.
Running the tools is the caller's business (the Flink Agents face runs each as a durable
call).
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from actionjournal.chat.errors import (
    ChatResponseError,
    ChatTimeoutError,
    ChatUnreachableError,
)
from actionjournal.durable.effects import current_call
from actionjournal.durable.errors import ConfigurationError
from actionjournal.durable.retry import RetryPolicy

if TYPE_CHECKING:
    import httpx


_NOT_JOURNALED = (
    "Nothing is journaled for this attempt: the call's retry policy (ChatModelConfig.retry, "
    "else journal.retry) tries again; after its last attempt the run fails, the model is asked "
    "again when the run runs again, and earlier results replay from the journal."
)


class ChatModelConfig(BaseModel):
    """Settings of one chat model connection.

    ``endpoint`` is the server root (``http://127.0.0.1:11434`` for Ollama; for an
    OpenAI-compatible server either the root or the ``.../v1`` base URL). ``timeout`` is
    the longest wait, in seconds, to connect and for the answer. ``retries`` are extra
    attempts when the server was not reached, the connection broke, or it answered 429/5xx
    (a model request has no side effects, so repeating it is safe). ``options`` go into
    the request as the protocol expects them (Ollama ``options``; top-level fields such
    as ``temperature`` for OpenAI). ``retry`` is the durable call's retry policy (default:
    the job's ``journal.retry``): it tries the whole request again, with backoff, after the
    quick ``retries`` ran out. A failure is not journaled (the request changes nothing):
    after the policy's last attempt the run fails, and the model is asked again when the
    run runs again.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    endpoint: str = Field(min_length=1)
    model: str = Field(min_length=1)
    timeout: float = Field(60.0, gt=0)
    retries: int = Field(2, ge=0)
    retry_delay: float = Field(0.5, ge=0)
    api_key: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    retry: RetryPolicy | None = None


class ToolCall(BaseModel):
    """A tool the model asks to be called: ``name(**arguments)``; ``id`` links the result
    (a ``{"role": "tool", "tool_call_id": id, ...}`` message) to the request."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, Any]


class ChatResponse(BaseModel):
    """What a model answered; this is the journaled result of the durable call.

    ``call_id`` is the durable call's stable id, the same after a replay.
    ``tool_calls``: the tools the model asks for instead of (or besides) answering.
    """

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    model: str
    content: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tool_calls: list[ToolCall] = []


Message = dict[str, Any]
"""``{"role", "content"}``; an assistant message may carry ``tool_calls`` (ToolCall dicts),
a ``tool`` message the ``tool_call_id`` (and ``name``) of the call it answers."""
Format = dict[str, Any]  # {"name": schema name, "schema": JSON schema}
Tool = dict[str, Any]
"""A tool the model may ask for: ``{"name", "description", "parameters": JSON schema}``."""


class _Reply(NamedTuple):
    content: str
    model: str | None
    tokens: tuple[int | None, int | None]
    tool_calls: list[ToolCall]


class ChatModel:
    """A connection to one model. Subclasses speak a protocol; see :class:`OllamaChat`.

    Build it from keyword settings (``OllamaChat(endpoint=..., model=...)``) or from a
    :class:`ChatModelConfig`. It pickles without its HTTP client, so an agent holding it
    can be shipped to Flink workers.
    """

    protocol: ClassVar[str] = ""

    def __init__(self, config: ChatModelConfig | None = None, **settings: Any) -> None:
        if config is None or settings:
            merged = {**(config.model_dump() if config else {}), **settings}
            try:
                config = ChatModelConfig(**merged)
            except ValidationError as exc:
                raise ConfigurationError(
                    f"{type(self).__name__} settings are invalid: {exc}"
                ) from None
        self.config = config
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(endpoint={self.config.endpoint!r}, model={self.config.model!r})"
        )

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"])  # type: ignore[misc]

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # -- the durable call ---------------------------------------------------------------

    def request(
        self,
        name: str,
        messages: list[Message],
        format: Format | None = None,
        tools: list[Tool] | None = None,
    ) -> ChatResponse:
        """One non-streaming chat request. Runs as a durable call: see ``ctx.chat``.

        ``name`` is the agent's name for this model; it is an argument so that sending
        a request to another named model is a divergence, not a silent replay.
        ``tools`` are offered to the model; what it asks for is in ``tool_calls``.
        """
        import httpx

        call = current_call()
        call_id = call.call_id if call is not None else ""
        url = self.url()
        model = f"{self.protocol} {self.config.model}"
        where = f"chat model {name!r} ({model} at {url}, call {call_id or '-'})"
        body = self._body(messages, format)
        if tools:
            body["tools"] = [{"type": "function", "function": tool} for tool in tools]
        last = ""
        for attempt in range(self.config.retries + 1):
            if attempt:
                time.sleep(self.config.retry_delay * 2 ** (attempt - 1))
            try:
                reply = self._http().post(url, json=body)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            except httpx.TimeoutException:
                raise ChatTimeoutError(
                    f"{where} did not answer within {self.config.timeout} s. {_NOT_JOURNALED} "
                    "Raise the model's timeout or check the server's load"
                ) from None
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if reply.status_code == 429 or reply.status_code >= 500:
                last = f"HTTP {reply.status_code}: {reply.text[:200]}"
                continue
            if not reply.is_success:
                raise ChatResponseError(
                    f"{where} answered HTTP {reply.status_code}: {reply.text[:300]}. "
                    f"{_hint(reply.status_code)}"
                )
            try:
                parsed = self._parse(reply.json(), call_id)
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                raise ChatResponseError(
                    f"{where} answered something that is not a {self.protocol} chat reply "
                    f"({type(exc).__name__}: {exc}): {reply.text[:300]}. Is {self.config.endpoint} "
                    f"a {self.protocol} endpoint?"
                ) from None
            return ChatResponse(
                call_id=call_id,
                name=name,
                model=parsed.model or self.config.model,
                content=parsed.content,
                prompt_tokens=parsed.tokens[0],
                completion_tokens=parsed.tokens[1],
                tool_calls=parsed.tool_calls,
            )
        if last.startswith("HTTP"):
            error = ChatResponseError(
                f"{where} failed {self.config.retries + 1} times, last: {last}. {_NOT_JOURNALED}"
            )
            error.retryable = True  # 429 and 5xx pass
            raise error
        raise ChatUnreachableError(
            f"{where} is unreachable after {self.config.retries + 1} attempts, last: {last}. "
            f"{_NOT_JOURNALED} Start the model server or fix the endpoint "
            "(ChatModelConfig.endpoint, or OLLAMA_HOST for the examples)"
        )

    # -- protocol -----------------------------------------------------------------------

    def url(self) -> str:
        raise NotImplementedError

    def _body(self, messages: list[Message], format: Format | None) -> dict[str, Any]:
        raise NotImplementedError

    def _parse(self, data: Any, call_id: str) -> _Reply:
        """What a reply body says; tool calls without an id get one derived from
        ``call_id`` (the durable call's), so ids are unique and the same on a replay."""
        raise NotImplementedError

    def _http(self) -> httpx.Client:
        # One client per connection, shared by threads: opening one costs milliseconds
        # (TLS context), which parallel branches would otherwise pay on every request.
        with self._lock:
            if self._client is None:
                import httpx

                headers = dict(self.config.headers)
                if self.config.api_key:
                    headers["Authorization"] = f"Bearer {self.config.api_key}"
                self._client = httpx.Client(timeout=self.config.timeout, headers=headers)
            return self._client


class OllamaChat(ChatModel):
    """Ollama's ``POST /api/chat``, non-streaming; structured output via ``format``."""

    protocol = "ollama"

    def url(self) -> str:
        return f"{_root(self.config.endpoint)}/api/chat"

    def _body(self, messages: list[Message], format: Format | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [_ollama_message(m) for m in messages],
            "stream": False,
        }
        if format is not None:
            body["format"] = format["schema"]
        if self.config.options:
            body["options"] = self.config.options
        return body

    def _parse(self, data: Any, call_id: str) -> _Reply:
        if "error" in data:
            raise ValueError(f"error {data['error']!r}")
        message = data["message"]
        content = message.get("content") or ""
        if not isinstance(content, str):
            raise TypeError("message.content is not a string")
        calls = [
            ToolCall(
                id=call.get("id") or f"{call_id or 'call'}-{i}",
                name=call["function"]["name"],
                arguments=_arguments(call["function"].get("arguments")),
            )
            for i, call in enumerate(message.get("tool_calls") or ())
        ]
        tokens = (data.get("prompt_eval_count"), data.get("eval_count"))
        return _Reply(content, data.get("model"), tokens, calls)


class OpenAIChat(ChatModel):
    """An OpenAI-compatible ``POST /v1/chat/completions``; structured output via
    ``response_format`` of type ``json_schema``."""

    protocol = "openai"

    def url(self) -> str:
        root = _root(self.config.endpoint)
        return f"{root}/chat/completions" if root.endswith("/v1") else f"{root}/v1/chat/completions"

    def _body(self, messages: list[Message], format: Format | None) -> dict[str, Any]:
        body: dict[str, Any] = {**self.config.options, "model": self.config.model}
        body["messages"] = [_openai_message(m) for m in messages]
        if format is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": format["name"], "schema": format["schema"]},
            }
        return body

    def _parse(self, data: Any, call_id: str) -> _Reply:
        message = data["choices"][0]["message"]
        content = message.get("content") or ""
        if not isinstance(content, str):
            raise TypeError("choices[0].message.content is not a string")
        calls = [
            ToolCall(
                id=call.get("id") or f"{call_id or 'call'}-{i}",
                name=call["function"]["name"],
                arguments=_arguments(call["function"].get("arguments")),
            )
            for i, call in enumerate(message.get("tool_calls") or ())
        ]
        usage = data.get("usage") or {}
        tokens = (usage.get("prompt_tokens"), usage.get("completion_tokens"))
        return _Reply(content, data.get("model"), tokens, calls)


def _ollama_message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message["role"], "content": message["content"]}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {"function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in message["tool_calls"]
        ]
    if message["role"] == "tool" and message.get("name"):
        out["tool_name"] = message["name"]
    return out


def _openai_message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message["role"], "content": message["content"]}
    if message.get("tool_calls"):
        out["content"] = message["content"] or None
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in message["tool_calls"]
        ]
    if message["role"] == "tool":
        out["tool_call_id"] = message["tool_call_id"]
    return out


def _arguments(raw: Any) -> dict[str, Any]:
    """Tool call arguments: a JSON object, given as one or as its text (OpenAI)."""
    value = json.loads(raw) if isinstance(raw, str) else ({} if raw is None else raw)
    if not isinstance(value, dict):
        raise TypeError(f"tool call arguments are not a JSON object: {raw!r}")
    return value


def _root(endpoint: str) -> str:
    """``OLLAMA_HOST`` style values (``127.0.0.1:11434``) get a scheme; no trailing slash."""
    endpoint = endpoint.strip().rstrip("/")
    return endpoint if "://" in endpoint else f"http://{endpoint}"


def _hint(status: int) -> str:
    if status == 404:
        return "Check the endpoint and that the model exists on the server (ollama pull <model>)"
    if status in (401, 403):
        return "Check the API key (ChatModelConfig.api_key)"
    return "Check the request: the messages, the schema, and the model's options"
