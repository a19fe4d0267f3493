"""Prompts: a text or a list of messages with ``{placeholders}`` filled at use."""

from __future__ import annotations

import re
from collections.abc import Sequence

from actionjournal.flink_agents.api.chat_message import ChatMessage, MessageRole
from actionjournal.flink_agents.api.resource import ResourceType, SerializableResource

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


def format_string(template: str, /, **kwargs: str) -> str:
    """Fill ``{name}`` placeholders; unknown ones stay as they are."""
    return _PLACEHOLDER.sub(lambda m: str(kwargs.get(m.group(1), m.group(0))), template)


class Prompt(SerializableResource):
    """A prompt template: ``Prompt.from_text(...)`` or ``Prompt.from_messages([...])``."""

    template: Sequence[ChatMessage] | str

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.PROMPT

    @staticmethod
    def from_messages(messages: Sequence[ChatMessage]) -> Prompt:
        return Prompt(template=list(messages))

    @staticmethod
    def from_text(text: str) -> Prompt:
        return Prompt(template=text)

    def format_string(self, **kwargs: str) -> str:
        if isinstance(self.template, str):
            return format_string(self.template, **kwargs)
        lines = []
        for message in self.template:
            line = f"{message.role.value}: {format_string(message.content, **kwargs)}"
            lines.append(line + (f"{message.extra_args}" if message.extra_args else ""))
        return "\n".join(lines)

    def format_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: str
    ) -> list[ChatMessage]:
        if isinstance(self.template, str):
            return [ChatMessage(role=role, content=format_string(self.template, **kwargs))]
        return [
            ChatMessage(role=m.role, content=format_string(m.content, **kwargs))
            for m in self.template
        ]


LocalPrompt = Prompt  # upstream's name of the implementation
