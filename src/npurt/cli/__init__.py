"""npurt.cli layer."""
