"""Retry policies of durable calls: which failures are tried again, how often, how long apart.

A failed attempt that its policy retries is journaled (``CallAttemptFailed``, with the time
the next attempt may start), so a restart in the middle of a backoff resumes at the right
attempt and waits only what is left. A failure is a call's final, journaled outcome only
when it is not retryable or the attempts are used up; a replay raises it and never retries.
"""

from __future__ import annotations

import random
import sys

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
"""HTTP statuses retried by default: timeout, too many requests, and server errors that
usually pass (other 5xx too, see :func:`is_transient`)."""


def is_transient(exc: BaseException) -> bool:
    """The default rule: is ``exc`` a failure that trying again may cure?

    Yes for connection errors and timeouts (``ConnectionError``, ``TimeoutError``, httpx
    network, timeout and remote protocol errors), HTTP 408, 429 and 5xx answers
    (``httpx.HTTPStatusError``), and exceptions whose ``retryable`` attribute is true.
    No for everything else, notably programming errors (``ValueError``, ``TypeError``,
    ``KeyError``...) and 4xx answers: running them again gives the same result, and a
    call that raised something unknown may have taken effect. An exception's own
    ``retryable`` attribute (true or false) wins over its type.
    """
    own = getattr(exc, "retryable", None)
    if isinstance(own, bool):
        return own
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    httpx = sys.modules.get("httpx")  # only if the job uses it: the core does not import it
    if httpx is not None:
        if isinstance(exc, (httpx.TimeoutException, httpx.NetworkError)):
            return True
        if isinstance(exc, httpx.RemoteProtocolError):  # the server dropped the connection
            return True
        if isinstance(exc, httpx.HTTPStatusError):
            status = exc.response.status_code
            return status in RETRYABLE_STATUS or status >= 500
    return False


ExceptionTypes = tuple[type[BaseException], ...]


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class RetryPolicy:
    """How a durable call is retried: ``RetryPolicy(max_attempts, initial_interval, backoff,
    max_interval, non_retryable=(...), retryable=(...), jitter=0.0)``.

    Intervals are seconds. The n-th wait is ``initial_interval * backoff**(n-1)``, at most
    ``max_interval``; ``jitter`` (0 to 1) draws each wait from ``[wait * (1 - jitter),
    wait]``. Without ``retryable`` the default rule :func:`is_transient` decides; with it,
    only instances of those classes are retried. ``non_retryable`` always wins.
    ``max_attempts=1`` never retries.
    """

    max_attempts: int = Field(default=3, ge=1)
    initial_interval: float = Field(default=1.0, ge=0)
    backoff: float = Field(default=2.0, ge=1)
    max_interval: float = Field(default=60.0, ge=0)
    non_retryable: ExceptionTypes = ()
    retryable: ExceptionTypes | None = None
    jitter: float = Field(default=0.0, ge=0, le=1)

    def retries(self, exc: BaseException) -> bool:
        """Whether a failure with ``exc`` is tried again (attempts permitting)."""
        if isinstance(exc, self.non_retryable):
            return False
        if self.retryable is not None:
            return isinstance(exc, self.retryable)
        return is_transient(exc)

    def wait(self, retry: int) -> float:
        """Seconds before the ``retry``-th retry (1: after the first failed attempt)."""
        try:
            seconds = min(self.initial_interval * self.backoff ** (retry - 1), self.max_interval)
        except OverflowError:  # backoff**n past what a float holds: long since at the cap
            seconds = self.max_interval
        if self.jitter:
            seconds *= 1 - self.jitter * random.random()
        return seconds


NO_RETRIES = RetryPolicy(max_attempts=1)
"""Every failure is final at once (what durable calls did before retry policies)."""
