"""The operator's terminal UI (Textual), built on fabric.app.readmodel: ``build_app(service)``."""
