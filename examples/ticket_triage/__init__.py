"""Example 2: ticket triage with a chat model, a tool and a remote agent job."""
