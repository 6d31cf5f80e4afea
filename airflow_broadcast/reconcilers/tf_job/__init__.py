"""tf_job reconcilers."""
