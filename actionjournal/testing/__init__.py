"""Test helpers for users' own suites."""
