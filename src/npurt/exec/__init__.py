"""npurt.exec layer."""
