"""The agent model, the keyed run loop, and its bindings (local runner, PyFlink)."""
