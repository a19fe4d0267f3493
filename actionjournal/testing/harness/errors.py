"""What the harness raises when it is driven wrongly or a step proves nothing."""

from __future__ import annotations


class HarnessError(AssertionError):
    """A scenario was driven wrongly, or a child step failed in an unexpected way."""


class CrashNotReachedError(HarnessError):
    """A step with a crash point finished without reaching it: the crash proved nothing."""
