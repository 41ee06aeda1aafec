"""Shared test fixtures: where the real captures live, and a private data directory per test."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Real captures of tools on other sites' clusters, copied unchanged with their SOURCES.tsv rows
# (origin, licence, what each shows): the repository stands alone, nothing reads ../shared.
REALDATA = ROOT / "tests" / "data" / "realdata"


def realdata_files(tool: str) -> list[Path]:
    """Every real capture of ``tool`` (a folder under tests/data/realdata), sorted; adding one adds a test."""
    folder = REALDATA / tool
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest-xdist's workers set COLUMNS=80 and LINES=24; a test and the programs it starts (the
    # TUI in tmux, tables sized to the terminal) see the terminal as a plain run does.
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    # Never touch the user's real store or lab directory from a test.
    monkeypatch.setenv("IBFAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("IBFAB_LAB_DIR", str(tmp_path / "labs"))
