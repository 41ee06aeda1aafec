"""Isolation limits that hold across time, processes and stores, on a lab fabric.

fattree-small: four leaves with 8 uplinks each (ports 9-16, four cables to each spine). The floor
of 75% allows 2 isolations per leaf by design. Isolations applied one after another, each with a
fresh store, and several processes at once, each with its own store, must never take a leaf below
6 of 8 uplinks nor put more ports out than the cap: the floor is measured against the design, the
cap counts the ports the fabric shows disabled, and one fabric-wide lock orders the changes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.app.discovery.discover import discover
from fabric.app.isolation.limits import fabric_disabled_ports
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.lab import simulator as lab

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parents[2]
NAME = "limits"


@pytest.fixture
def fat_lab() -> Iterator[str]:
    lab.up("fattree-small", (), name=NAME)
    try:
        yield NAME
    finally:
        lab.down(NAME)


def isolate(port: str, db: Path, *extra: str) -> subprocess.Popen[str]:
    """``ibfab isolate PORT --apply --yes`` in its own process, with its own store."""
    argv = [sys.executable, "-c", "from fabric.cli.main import main; main()", "isolate", port]
    argv += ["--lab", NAME, "--apply", "--yes", "--db", str(db), *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def run(port: str, db: Path, *extra: str) -> tuple[int, str]:
    proc = isolate(port, db, *extra)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out + err


def uplinks(name: str) -> dict[str, int]:
    d = discover(Session(Source.lab(name)))
    return {
        c.name: d.classification.uplinks[g]
        for g, c in d.classification.nodes.items()
        if c.name.startswith("leaf-")
    }


def test_one_after_another_with_fresh_stores_stops_at_the_designed_floor(
    fat_lab: str, tmp_path: Path
) -> None:
    results = [run(f"leaf-01:{port}", tmp_path / f"s{port}.db") for port in (9, 10, 13, 14)]
    assert [code for code, _ in results] == [0, 0, 8, 8]
    # The third is judged against the 8 uplinks its peers (and its design) have, not the 6 left.
    assert "[uplink_floor]" in results[2][1]
    assert (
        "leaf-01 would keep 5/8 uplinks (6 now, 8 by design (usual for a leaf in its section))"
        in results[2][1]
    )
    assert uplinks(fat_lab)["leaf-01"] == 6
    assert {p.port for p in fabric_disabled_ports(Session(Source.lab(fat_lab)).driver)} == {9, 10}


def test_the_cap_counts_ports_disabled_on_the_fabric_not_one_store(fat_lab: str, tmp_path: Path) -> None:
    codes = []
    for i, leaf in enumerate(("leaf-01", "leaf-02", "leaf-03", "leaf-04")):
        code, out = run(f"{leaf}:9", tmp_path / f"s{i}.db", "--max-isolations", "3")
        codes.append(code)
    assert codes == [0, 0, 0, 8]
    assert "[cap]" in out and "3 port(s) isolated now count toward the cap" in out
    assert len(fabric_disabled_ports(Session(Source.lab(fat_lab)).driver)) == 3


def test_concurrent_processes_with_their_own_stores_never_cross_either_limit(
    fat_lab: str, tmp_path: Path
) -> None:
    # Four processes at once on four uplinks of one leaf: the floor lets exactly two through.
    procs = [isolate(f"leaf-01:{port}", tmp_path / f"a{port}.db") for port in (9, 11, 13, 15)]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 0, 8, 8], outs
    assert uplinks(fat_lab)["leaf-01"] == 6
    # Then four at once on the other leaves under a cap of 3 (two already out): one gets through.
    procs = [
        isolate(f"{leaf}:9", tmp_path / f"b{leaf}.db", "--max-isolations", "3")
        for leaf in ("leaf-02", "leaf-03", "leaf-04")
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert sorted(p.returncode for p in procs) == [0, 8, 8], outs
    assert len(fabric_disabled_ports(Session(Source.lab(fat_lab)).driver)) == 3
    assert all(n >= 6 for n in uplinks(fat_lab).values())
