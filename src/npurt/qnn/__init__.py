"""npurt.qnn layer."""
