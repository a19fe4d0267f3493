"""``kafka_sink``'s transaction timeout comes from the broker it writes to."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from actionjournal.flink.kafka_io import transaction_timeout_ms

pytestmark = pytest.mark.kafka


def test_transaction_timeout_is_what_the_broker_allows(aj_kafka_bootstrap, caplog):
    with caplog.at_level(logging.WARNING, logger="actionjournal.flink.kafka_io"):
        timeout = transaction_timeout_ms(aj_kafka_bootstrap)
    assert timeout == 900_000  # the broker's transaction.max.timeout.ms (its default)
    assert not caplog.records, "fell back to the default instead of asking the broker"


def test_asking_the_broker_prints_nothing(aj_kafka_bootstrap):
    """The job script calls it under `flink run`, whose output is the user's to read: no
    librdkafka line (``%6|...|BGQUEUE|... Purging 1 unserved events``) among it. The line
    comes in about half the calls, so there are ten."""
    script = (
        "from actionjournal.flink.kafka_io import transaction_timeout_ms\n"
        f"for _ in range(10): transaction_timeout_ms({aj_kafka_bootstrap!r})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout + done.stderr == ""
