"""Apache Flink Agents' Python API (0.3), laid out as upstream lays it out, over actionjournal.

Porting an agent means replacing the ``flink_agents.`` import prefix with
``actionjournal.flink_agents.``; it then runs on actionjournal's engine, durably. Every
element, and every deliberate difference, is listed in docs/porting.md.
"""
