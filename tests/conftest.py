"""Shared test fixtures: where the real captures live, and a private data directory per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("IBFAB_SHARED", ROOT.parent / "shared"))
REALDATA = SHARED / "realdata"


def realdata_files(tool: str) -> list[Path]:
    """Every real capture of ``tool`` (a folder under shared/realdata), sorted; adding one adds a test."""
    folder = REALDATA / tool
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Never touch the user's real store or lab directory from a test.
    monkeypatch.setenv("IBFAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("IBFAB_LAB_DIR", str(tmp_path / "labs"))
