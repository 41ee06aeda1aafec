"""Placement: hosts for a job, packed or spread, and the health placement weighs."""
