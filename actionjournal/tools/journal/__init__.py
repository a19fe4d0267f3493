"""``actionjournal journal inspect`` and ``journal keys``: what a journal holds, never writing.

One job per module: ``documents`` (what is shown, as msgspec structs), ``runs`` (records
grouped into runs, actions and calls), ``read`` (the documents from a store), ``render``
(their text form), ``cli`` (options and output).
"""
