"""reconcilers layer."""
