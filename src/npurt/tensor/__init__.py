"""npurt.tensor layer."""
