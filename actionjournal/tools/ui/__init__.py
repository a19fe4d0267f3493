"""``actionjournal ui``: the journal explorer, a local web UI over a job's journal.

One job per module: ``journal`` (the one door to the store contract and its options),
``index`` (the run index's SQLite schema), ``tally`` (a run's records folded into its
row), ``indexer`` (reading partitions into the index), ``writer`` (its transactions),
``explorer`` (the index followed live, the settings),
``queries`` (what the pages ask of it), ``timeline`` (a run's records as a timeline, one
renderer per record type), ``values`` (payload previews and redaction), ``deadletters``
(listing and re-driving), ``health``, ``graph``, ``security`` (token, CSRF, the action
log), ``app`` (routes: pages and ``/api/``), ``cli`` (options, the server).
"""
