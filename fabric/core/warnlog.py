"""The fabric's loggers, and when the front end's warning handler is installed on them.

The CLI prints warnings of the layers below (a damaged snapshot skipped, ...) through a logging
handler, but most commands never log: ``ibfab discover`` need not import logging (2 ms) for a
warning it cannot give. The handler is installed at once when logging is already imported, else
when the first module that logs asks for its logger here (each such module does, at import, so
the handler is in place before any warning)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

_pending: Callable[[], None] | None = None


def on_logging(install: Callable[[], None]) -> None:
    """Run ``install`` (it imports logging) now if logging is imported, else with the first
    :func:`logger` call."""
    global _pending
    if "logging" in sys.modules:
        _pending = None
        install()
    else:
        _pending = install


def logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)``, after installing a pending handler (see :func:`on_logging`)."""
    global _pending
    import logging

    if _pending is not None:
        install, _pending = _pending, None
        install()
    return logging.getLogger(name)
