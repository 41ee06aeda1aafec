"""The operator's terminal UI (Textual), built on fabric.service: ``build_app(service)``."""
