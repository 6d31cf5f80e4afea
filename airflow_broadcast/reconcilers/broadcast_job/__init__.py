"""broadcast_job reconcilers."""
