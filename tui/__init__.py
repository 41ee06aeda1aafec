"""The operator's terminal UI (Textual), built on fabric.app.readmodel.service: ``build_app(service)``."""
