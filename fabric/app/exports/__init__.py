"""Exports: the fabric as schedulers and monitoring read it (files and the Prometheus exporter)."""
