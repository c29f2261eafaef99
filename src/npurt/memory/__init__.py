"""npurt.memory layer."""
