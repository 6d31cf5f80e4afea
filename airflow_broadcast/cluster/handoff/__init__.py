"""Hand-off mode: the real controller runs the custom resource; the provider creates, watches and deletes it."""
