"""hooks layer."""
