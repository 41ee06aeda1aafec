"""One reading of a lab fabric through the real ibqueryerrors: counters set in the simulator to
their maximum, or to a large total, are findings on the first collection (each naming its cable);
a clean lab's first collection has none."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.lab import simulator as lab
from fabric.store import Store
from topology.classify import switch_name

SPEC = "leafspine:leaves=2,spines=2,hosts=2"
NAME = "reading"

pytestmark = pytest.mark.lab


@pytest.fixture
def lab_up() -> Iterator[str]:
    lab.up(SPEC, name=NAME)
    try:
        yield NAME
    finally:
        lab.down(NAME)


def _collect_and_judge(name: str, db: Path) -> tuple[dict[str, object], str]:
    runner = CliRunner()
    res = runner.invoke(main, ["counters", "collect", "--lab", name, "--count", "1", "--db", str(db)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["health", "--db", str(db), "--no-record", "--json"])
    assert res.exit_code == 0, res.output
    text = runner.invoke(main, ["health", "--db", str(db), "--no-record"]).stdout
    return json.loads(res.stdout), text


def test_a_clean_first_reading_has_no_findings(lab_up: str, tmp_path: Path) -> None:
    doc, text = _collect_and_judge(lab_up, tmp_path / "clean.db")
    assert doc["readings"] == [] and doc["one_reading"] is not None
    assert "0 findings from the reading alone" in text


def test_saturated_and_large_counters_set_in_the_simulator_are_findings(lab_up: str, tmp_path: Path) -> None:
    lab.set_counter(lab_up, "leaf-01", 3, "SymbolErrorCounter", 65535)
    lab.set_counter(lab_up, "leaf-02", 4, "PortRcvErrors", 5000)
    lab.set_counter(lab_up, "spine-01", 2, "SymbolErrorCounter", 999)  # under the threshold
    db = tmp_path / "set.db"
    doc, text = _collect_and_judge(lab_up, db)
    with Store.open(db) as store:
        fabric = store.load_topology().fabric
    names = {g: switch_name(n.description) for g, n in fabric.nodes.items()}
    readings = doc["readings"]
    assert isinstance(readings, list)
    found = {
        (names[c["guid"]], c["port"], c["counter"], c["value"], c["saturated"])
        for f in readings
        for c in f["counts"]
    }
    assert found == {
        ("leaf-01", 3, "symbol_errors", 65535, True),
        ("leaf-02", 4, "rcv_errors", 5000, False),
    }
    assert "2 findings from the reading alone" in text
    assert "leaf-01:3 <-> spine-01" in text and "leaf-02:4 <-> spine-02" in text
