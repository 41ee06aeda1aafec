"""Widgets, one module per screen region they draw."""
