"""npurt.runtime layer."""
