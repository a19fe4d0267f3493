"""The ``actionjournal`` command line."""
