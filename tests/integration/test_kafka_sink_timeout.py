"""``kafka_sink``'s transaction timeout comes from the broker it writes to."""

from __future__ import annotations

import logging

import pytest

from actionjournal.flink.kafka_io import transaction_timeout_ms

pytestmark = pytest.mark.kafka


def test_transaction_timeout_is_what_the_broker_allows(aj_kafka_bootstrap, caplog):
    with caplog.at_level(logging.WARNING, logger="actionjournal.flink.kafka_io"):
        timeout = transaction_timeout_ms(aj_kafka_bootstrap)
    assert timeout == 900_000  # the broker's transaction.max.timeout.ms (its default)
    assert not caplog.records, "fell back to the default instead of asking the broker"
