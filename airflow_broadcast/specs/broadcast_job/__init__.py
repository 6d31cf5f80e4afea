"""broadcast_job specs."""
