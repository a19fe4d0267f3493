"""Flink Agents' configuration options, with upstream's keys and defaults.

How each maps onto actionjournal's settings (or why it has no effect) is in
docs/porting.md, "Configuration".
"""

from __future__ import annotations

import os
from enum import Enum

from actionjournal.flink_agents.api.configuration import ConfigOption


class ErrorHandlingStrategy(Enum):
    """What the built-in chat action does when a chat request fails."""

    RETRY = "retry"
    FAIL = "fail"
    IGNORE = "ignore"


class AgentConfigOptions:
    ACTION_STATE_STORE_BACKEND = ConfigOption("actionStateStoreBackend", str, None)
    """``sqlite`` (unset: the default), ``kafka``, ``fluss``, or ``none`` (no journal)."""
    KAFKA_BOOTSTRAP_SERVERS = ConfigOption("kafkaBootstrapServers", str, "localhost:9092")
    KAFKA_ACTION_STATE_TOPIC = ConfigOption("kafkaActionStateTopic", str, None)
    KAFKA_ACTION_STATE_TOPIC_NUM_PARTITIONS = ConfigOption(
        "kafkaActionStateTopicNumPartitions", int, 64
    )
    KAFKA_ACTION_STATE_TOPIC_REPLICATION_FACTOR = ConfigOption(
        "kafkaActionStateTopicReplicationFactor", int, 1
    )
    FLUSS_BOOTSTRAP_SERVERS = ConfigOption("flussBootstrapServers", str, "localhost:9123")
    FLUSS_ACTION_STATE_DATABASE = ConfigOption("flussActionStateDatabase", str, "flink_agents")
    FLUSS_ACTION_STATE_TABLE = ConfigOption("flussActionStateTable", str, None)
    FLUSS_ACTION_STATE_TABLE_BUCKETS = ConfigOption("flussActionStateTableBuckets", int, 64)
    FLUSS_SECURITY_PROTOCOL = ConfigOption("flussSecurityProtocol", str, "PLAINTEXT")
    FLUSS_SASL_MECHANISM = ConfigOption("flussSaslMechanism", str, "PLAIN")
    FLUSS_SASL_JAAS_CONFIG = ConfigOption("flussSaslJaasConfig", str, None)
    FLUSS_SASL_USERNAME = ConfigOption("flussSaslUsername", str, None)
    FLUSS_SASL_PASSWORD = ConfigOption("flussSaslPassword", str, None)
    JOB_IDENTIFIER = ConfigOption("job-identifier", str, None)


class AgentExecutionOptions:
    ERROR_HANDLING_STRATEGY = ConfigOption(
        "error-handling-strategy", ErrorHandlingStrategy, ErrorHandlingStrategy.FAIL
    )
    MAX_RETRIES = ConfigOption("max-retries", int, 3)
    RETRY_WAIT_INTERVAL = ConfigOption("retry-wait-interval", int, 1)
    NUM_ASYNC_THREADS = ConfigOption("num-async-threads", int, (os.cpu_count() or 1) * 2)
    CHAT_ASYNC = ConfigOption("chat.async", bool, True)
    TOOL_CALL_ASYNC = ConfigOption("tool-call.async", bool, True)
