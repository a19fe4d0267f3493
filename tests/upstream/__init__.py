"""Apache Flink Agents 0.3.1's own Python tests and e2e agents, run against actionjournal.

Each file is upstream's (tag release-0.3.1, python/flink_agents/...), under the Apache
License 2.0, with its imports changed and nothing else: ``flink_agents.`` became
``actionjournal.flink_agents.``, and upstream's test helper modules
``tests.upstream.``. The e2e resources (inputs, ground truths) are upstream's too.
conftest.py gives each test a journal of its own and lists the checks that fail on a
deliberate difference (strict xfail, the same list as docs/porting.md's).
"""
