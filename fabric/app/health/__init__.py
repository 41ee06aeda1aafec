"""Health: counter collection, the stored window scored, the TUI's window, health from Prometheus."""
