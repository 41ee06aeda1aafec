"""Slurm drains: plan, apply and resume nodes, each change audited."""
