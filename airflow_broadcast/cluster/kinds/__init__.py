"""kinds cluster."""
