"""The agent model's former path: it lives in :mod:`actionjournal.durable.agent` (below chat,
whose ChatAgent builds on it); these names stay importable from here."""

from actionjournal.durable.agent import ActionSpec, Agent, action

__all__ = ["ActionSpec", "Agent", "action"]
