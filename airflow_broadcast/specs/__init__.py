"""specs layer."""
