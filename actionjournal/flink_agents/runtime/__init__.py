"""Flink Agents face: see actionjournal.flink_agents."""
