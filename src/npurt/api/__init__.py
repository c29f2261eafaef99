"""npurt.api layer."""
