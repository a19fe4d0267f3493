"""``actionjournal timers list`` and ``actionjournal signals list``: timers and signals of a
journal. Nothing is imported here (why: actionjournal._lazy)."""
