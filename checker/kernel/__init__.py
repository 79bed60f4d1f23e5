"""The compiled exploration kernel."""
