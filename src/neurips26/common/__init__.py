"""Shared, stable pieces used by more than one paper."""
