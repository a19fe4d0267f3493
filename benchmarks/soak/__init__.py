"""The soak (``make soak``): a production-shaped agent job under steady load for minutes,
with faults on a schedule, checked for duplicates and losses, its resources sampled.

A Flink session cluster with two TaskManagers runs docs/deploying.md's agent (Kafka in,
exactly-once Kafka out, RocksDB with incremental checkpoints) with its journal on a
three-broker Kafka cluster (replication 3, two in sync), durable calls to a counting service
with random latencies, and ``actionjournal cleanup run`` beside it. A TaskManager and the
journal's partition leader are SIGKILLed on schedule. Modules: ``run`` (the run),
``processes`` (what it starts and ends), ``load`` (orders in, results watched),
``sample`` (RSS, checkpoints, journal), ``faults``, ``analysis``, ``report`` and ``plots``
(results/soak/), ``job`` (the Flink job), ``service`` (the counting service's process).
docs/scale.md shows a run's figures.
"""
