"""Tools as Flink Agents declares them: functions a chat model may ask to call.

The built-in tool action runs every call a model asks for as a durable call of the
tool's function, so a tool call finished before a failure is not made again.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from actionjournal.flink_agents.api.resource import ResourceType, SerializableResource

if TYPE_CHECKING:
    from actionjournal.flink_agents.api.tools.function_tool import FunctionTool


class ToolType(Enum):
    MODEL_BUILT_IN = "model_built_in"
    FUNCTION = "function"
    REMOTE_FUNCTION = "remote_function"
    MCP = "mcp"


class ToolMetadata(BaseModel):
    """What the model is told about a tool: its name, description and argument schema."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    description: str
    args_schema: type[BaseModel]

    def get_parameters_dict(self) -> dict[str, Any]:
        schema = self.args_schema.model_json_schema()
        keep = ("type", "properties", "required", "definitions", "$defs")
        return {k: v for k, v in schema.items() if k in keep}


class Tool(SerializableResource):
    """A tool; subclasses say how it is called (``call``)."""

    metadata: ToolMetadata | None = None

    @staticmethod
    def from_callable(func: Callable[..., Any]) -> FunctionTool:
        from actionjournal.flink_agents.api.tools.function_tool import FunctionTool

        return FunctionTool(func=func)

    @property
    def name(self) -> str:
        assert self.metadata is not None
        return self.metadata.name

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.TOOL

    @classmethod
    def tool_type(cls) -> ToolType:
        raise NotImplementedError

    def call(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def target(self) -> Callable[..., Any]:
        """What a durable call of this tool calls: its identity in the journal."""
        return self.call


def metadata_of(func: Callable[..., Any]) -> ToolMetadata:
    """Name, docstring description and argument schema (with parameter docs) of ``func``."""
    description, params = _docstring(inspect.getdoc(func) or "")
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(func).parameters.items():
        annotation = Any if param.annotation is param.empty else param.annotation
        doc = params.get(name, f"Parameter: {name}")
        if typing.get_origin(annotation) is typing.Annotated:
            annotation, *extra = typing.get_args(annotation)
            doc = next((e if isinstance(e, str) else e.description for e in extra), doc)
        if isinstance(param.default, FieldInfo):
            fields[name] = (annotation, param.default)
        elif param.default is param.empty:
            fields[name] = (annotation, Field(description=doc))
        else:
            fields[name] = (annotation, Field(default=param.default, description=doc))
    schema = create_model(func.__name__, **fields)
    return ToolMetadata(name=func.__name__, description=description, args_schema=schema)


_SECTION = re.compile(r"^(Parameters|Args|Arguments|Returns?|Raises|Examples?|Notes?)\s*:?$")
_PARAM = re.compile(r"^(\w+)\s*(?:\([^)]*\))?\s*(?::\s*(.*))?$")


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and the parameter descriptions of a numpy-style
    (``Parameters``: ``name : type`` then indented text) or Google-style (``Args:``
    ``name (type): text``) docstring."""
    first = doc.strip().split("\n\n")[0]
    description = "" if _SECTION.match(first.splitlines()[0].strip() if first else "") else first
    params: dict[str, str] = {}
    section, base, current = "", -1, ""
    for line in doc.splitlines():
        text = line.strip()
        header = _SECTION.match(text)
        if header:
            section, base, current = header.group(1), -1, ""
            continue
        if section not in ("Parameters", "Args", "Arguments") or not text or set(text) == {"-"}:
            continue
        indent = len(line) - len(line.lstrip())
        base = indent if base < 0 else base
        match = _PARAM.match(text) if indent == base else None
        if match:
            current = match.group(1)
            params[current] = "" if section == "Parameters" else (match.group(2) or "")
        elif current:
            params[current] = f"{params[current]} {text}".strip()
    return " ".join(description.split()), {k: v for k, v in params.items() if v}
