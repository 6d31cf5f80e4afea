"""triggers layer."""
