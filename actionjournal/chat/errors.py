"""The chat models' errors (part of the tree drawn in :mod:`actionjournal.durable.errors`)."""

from __future__ import annotations

from actionjournal.durable.errors import ActionJournalError


class ChatError(ActionJournalError):
    """A chat model request failed. Subclasses say how; ``retryable`` says whether the
    call's retry policy tries it again by default (see :func:`~actionjournal.durable.retry.
    is_transient`)."""

    retryable = False


class ChatTimeoutError(ChatError):
    """The model did not answer within its ``timeout``."""

    retryable = True


class ChatUnreachableError(ChatError):
    """The model's endpoint could not be reached."""

    retryable = True


class ChatResponseError(ChatError):
    """The endpoint answered with an HTTP error or with a body that is not a chat reply
    (retryable when the answers were 429 or 5xx)."""


class StructuredOutputError(ChatError):
    """The model's reply does not validate against the requested pydantic schema.

    The reply itself is journaled, so a replay raises this again rather than asking the
    model for a different answer; catch it in the action to ask again (a new call).
    """
