"""The application: domain analysis, the use cases (fabric.app), presentation and entry points."""

__version__ = "0.1.0"  # pyproject.toml reads it from here
