"""Reference examples; each is a runnable PyFlink job (see its job.py)."""
