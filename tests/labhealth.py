"""Test helper: give a lab fabric's store a link with rising symbol errors (three collections)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fabric.app.health.collect import Collector
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.lab import simulator as lab
from fabric.store import Store


def collect_rising_symbol_errors(name: str, db: str, switch: str, port: int, values: tuple[int, int]) -> None:
    """Baseline collection, then the switch port's SymbolErrorCounter set to each value, each
    followed by a collection: the link on ``switch:port`` becomes critical in the stored health."""
    with Store.open(db) as store:
        collector = Collector(store, Session(Source.lab(name)))
        collector.collect_once()
        for value in values:
            lab.set_counter(name, switch, port, "SymbolErrorCounter", value)
            collector.collect_once()


@pytest.fixture
def rail_small_lab() -> Iterator[str]:
    """A running rail-small lab fabric, stopped afterwards (labs live in the per-test IBFAB_LAB_DIR)."""
    name = "rs"
    lab.up("rail-small", name=name)
    try:
        yield name
    finally:
        lab.down(name)
