"""Resources as Flink Agents declares them: chat model connections and setups, tools, prompts.

An agent declares resources by name (decorated static methods, ``add_resource`` on the
agent or the environment); actions reach them with ``ctx.get_resource(name, type)``.
A ``ResourceDescriptor`` names a resource class and its arguments; the resource is built
from it in the process that runs the agent (a Flink worker), on first use.
"""

from __future__ import annotations

import importlib
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

if TYPE_CHECKING:
    from actionjournal.flink_agents.runtime.resources import ResourceCache

_UPSTREAM = "flink_agents."
_HERE = "actionjournal.flink_agents."


class ResourceType(Enum):
    CHAT_MODEL = "chat_model"
    CHAT_MODEL_CONNECTION = "chat_model_connection"
    TOOL = "tool"
    EMBEDDING_MODEL = "embedding_model"
    EMBEDDING_MODEL_CONNECTION = "embedding_model_connection"
    VECTOR_STORE = "vector_store"
    PROMPT = "prompt"
    MCP_SERVER = "mcp_server"
    SKILLS = "skills"


class Resource(BaseModel):
    """Base of every resource; ``resource_context`` reaches the agent's other resources."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    resource_context: Any = Field(default=None, exclude=True)
    _metric_group: Any = PrivateAttr(default=None)

    @classmethod
    def resource_type(cls) -> ResourceType:
        raise NotImplementedError(f"{cls.__name__} does not say its ResourceType")

    def set_metric_group(self, metric_group: Any) -> None:
        self._metric_group = metric_group

    @property
    def metric_group(self) -> Any:
        return self._metric_group

    def open(self) -> None:
        """Called once, when the resource is first used in a process."""

    def close(self) -> None:
        """Called when the agent's process closes it."""


class SerializableResource(Resource):
    """A resource that travels as it is (tools, prompts) rather than as a descriptor."""


class ResourceDescriptor(BaseModel):
    """A resource class by its dotted name, and the arguments to build it with.

    ``clazz`` is the class or its dotted name; names starting with ``flink_agents.`` mean
    the same class here (``actionjournal.flink_agents.``), so upstream names keep working.
    """

    target_module: str
    target_clazz: str
    arguments: dict[str, Any]

    def __init__(
        self,
        /,
        *,
        clazz: str | type | None = None,
        target_module: str | None = None,
        target_clazz: str | None = None,
        arguments: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(clazz, type):
            clazz = f"{clazz.__module__}.{clazz.__qualname__}"
        if clazz is not None:
            target_module, _, target_clazz = clazz.rpartition(".")
        if not target_module or not target_clazz:
            raise ValueError(
                "The fully qualified name of the resource must be specified: "
                "ResourceDescriptor(clazz='package.module.Class', ...)"
            )
        if target_module.startswith(_UPSTREAM):
            target_module = _HERE + target_module[len(_UPSTREAM) :]
        super().__init__(
            target_module=target_module,
            target_clazz=target_clazz,
            arguments={**(arguments or {}), **kwargs},
        )

    @property
    def clazz(self) -> type[Resource]:
        """The resource class (its module is imported: it is the agent's own code)."""
        module = importlib.import_module(self.target_module)
        found = getattr(module, self.target_clazz, None)
        if not (isinstance(found, type) and issubclass(found, Resource)):
            raise TypeError(
                f"resource class {self.target_module}.{self.target_clazz} is not a Resource "
                "subclass (or does not exist)"
            )
        return found

    def build(self, context: ResourceCache) -> Resource:
        return self.clazz(**self.arguments, resource_context=context)


_CHAT = "actionjournal.flink_agents.integrations.chat_models"


class ResourceName:
    """Dotted names of the built-in resource classes, for ``ResourceDescriptor(clazz=...)``."""

    class ChatModel:
        OLLAMA_CONNECTION = f"{_CHAT}.ollama_chat_model.OllamaChatModelConnection"
        OLLAMA_SETUP = f"{_CHAT}.ollama_chat_model.OllamaChatModelSetup"
        OPENAI_COMPLETIONS_CONNECTION = (
            f"{_CHAT}.openai.openai_chat_model.OpenAIChatModelConnection"
        )
        OPENAI_COMPLETIONS_SETUP = f"{_CHAT}.openai.openai_chat_model.OpenAIChatModelSetup"
