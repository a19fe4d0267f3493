"""The refund approval example: an agent that waits for a person (docs/timers.md)."""
