"""``FunctionTool``: a Python function as a tool (``@tool`` or ``Tool.from_callable``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import model_validator

from actionjournal.flink_agents.api.tools.tool import Tool, ToolType, metadata_of


class FunctionTool(Tool):
    """Calls ``func``; its metadata comes from the function's signature and docstring."""

    func: Callable[..., Any]

    @model_validator(mode="after")
    def _describe(self) -> FunctionTool:
        if self.metadata is None:
            self.metadata = metadata_of(self.func)
        return self

    @classmethod
    def tool_type(cls) -> ToolType:
        return ToolType.FUNCTION

    def call(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def target(self) -> Callable[..., Any]:
        return self.func
