"""npurt.plan layer."""
