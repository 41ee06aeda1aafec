"""Where the store lives by default: a module of its own so that a command that only names the
store (``discover`` without ``--save``) does not import SQLite and the store's tables."""

from __future__ import annotations

import os
from pathlib import Path


def default_db_path() -> Path:
    """``$IBFAB_DATA_DIR/ibfab.db``, else ``$XDG_DATA_HOME/ibfab/ibfab.db``,
    else ``~/.local/share/ibfab/ibfab.db``."""
    data_dir = os.environ.get("IBFAB_DATA_DIR")
    if data_dir:
        return Path(data_dir) / "ibfab.db"
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "ibfab" / "ibfab.db"


def store_path(db: str | Path | None) -> Path:
    """The store file a ``--db`` value names: the value itself, else :func:`default_db_path`."""
    return Path(db) if db else default_db_path()
