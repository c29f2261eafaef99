"""npurt.rknn layer."""
