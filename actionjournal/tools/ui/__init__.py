"""``actionjournal ui``: the journal explorer, a local web UI over a job's journal.

One job per module: ``journal`` (the one door to the store contract and its options),
``index`` (the run index's SQLite schema), ``indexer`` (building and following it),
``queries`` (what the pages ask of it), ``timeline`` (a run's records as a timeline, one
renderer per record type), ``values`` (payload previews and redaction), ``deadletters``
(listing and re-driving), ``health``, ``graph``, ``security`` (token, CSRF, the action
log), ``app`` (routes: pages and ``/api/``), ``cli`` (options, the server).
"""
