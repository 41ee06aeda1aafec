"""Example files for the docs, the demo and the tests: an inventory, health thresholds and a
custom sweep pair file. ``path("inventory.toml")`` gives the file's location; no logic here."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """Where the sample ``name`` is (raises FileNotFoundError for an unknown one)."""
    p = HERE / name
    if not p.is_file():
        raise FileNotFoundError(f"no sample {name!r} in {HERE}")
    return p
