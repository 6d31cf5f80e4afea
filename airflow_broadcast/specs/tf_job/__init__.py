"""tf_job specs."""
