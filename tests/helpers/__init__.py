"""Helpers shared by the test modules (import as `from helpers.NAME import ...`; test modules never import each other)."""
