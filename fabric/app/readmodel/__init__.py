"""The TUI's read model: records of the store, the fabric, health, sweeps, advice and operations."""
