"""Local development services (a Kafka broker, a Fluss cluster) from Maven jars.

A leaf layer: imports nothing else of actionjournal, so the CLI (``tools``), the pytest
plugin (``testing``) and the PyFlink binding's operator build all import it downward.
"""
