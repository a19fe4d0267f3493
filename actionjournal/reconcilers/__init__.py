"""Reconcilers settle calls whose outcome is unknown after a failure."""
