"""``MemoryRef``: a reference to a value in memory, small enough to send in an event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from actionjournal.flink_agents.api.memory_object import MemoryType

if TYPE_CHECKING:
    from actionjournal.flink_agents.api.runner_context import RunnerContext


class MemoryRef(BaseModel):
    """Where ``MemoryObject.set`` put a value: its memory and absolute path."""

    model_config = ConfigDict(frozen=True)

    memory_type: MemoryType = MemoryType.SHORT_TERM
    path: str

    @staticmethod
    def create(memory_type: MemoryType, path: str) -> MemoryRef:
        return MemoryRef(memory_type=memory_type, path=path)

    def resolve(self, ctx: RunnerContext) -> Any:
        """The value the reference points to, read from ``ctx``'s memory of its type."""
        memory = (
            ctx.sensory_memory if self.memory_type == MemoryType.SENSORY else ctx.short_term_memory
        )
        return memory.get(self)
