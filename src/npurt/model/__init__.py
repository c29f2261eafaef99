"""npurt.model layer."""
