"""Side by side with the open peers, on the same lab tables.

* ibdmchk (ibutils 1.5.7) verifies OpenSM's own dumps (``opensm-subnet.lst``, ``opensm.fdbs``,
  ``opensm.mcfdbs``, written with ``-D 0x43``): its credit-loop verdict, the channels of the loop
  it walks, and its destination LIDs per switch out port (ports that drive CAs left out) are
  ibfab's on the same ``opensm.fdbs``.
* check_lft_balance (infiniband-diags) counts, per switch port, the CA LIDs a ``dump_lfts`` routes
  out of it (``-v``: every switch), leaving out ports cabled to a host and down ports: its figures
  are ibfab's ``lids`` per port. Where they differ, the test says why: check_lft_balance only
  looks at ports 1 to 36 (a list written into the script), so a 64-port switch's uplinks on ports
  37-64 go unreported.

ibdmchk exits on SIGSEGV after printing its report (ibutils 1.5.7 on Debian 12, as measured
here); the report is read all the same.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from fabric.app.discovery.discover import Discovery, discover
from fabric.app.routes import RoutesCheck, check_routes_of, read_tables
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.lab import simulator as lab
from tests.integration.test_routes_lab import clean, credit_loop_changes, edited, running
from topology.model import Guid, normalise_guid
from topology.route_checks import tiers_of
from topology.route_walk import Traffic, walk

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(shutil.which("ibdmchk") is None, reason="ibutils (ibdmchk) is not installed"),
]

IBDMCHK_DETAIL = Path("/var/cache/ibutils/ibdmchk.sw_out_port_num_dlids")
_PORT = re.compile(r"S([0-9a-fA-F]{16})/U1/P(\d+)")


def ibdmchk(dump_dir: Path) -> str:
    res = subprocess.run(
        ["ibdmchk", "-s", "opensm-subnet.lst", "-f", "opensm.fdbs", "-m", "opensm.mcfdbs"],
        cwd=dump_dir,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "Analyzing Fabric for Credit Loops" in res.stdout, res.stdout[-2000:] + res.stderr[-2000:]
    return res.stdout


def ibfab_on(name: str, tables: Path) -> tuple[Discovery, RoutesCheck]:
    src = Session(Source.lab(name))
    d = discover(src)
    return d, check_routes_of(src, d, read_tables(src, d, tables=str(tables)))


def loop_channels(report: str, switches: set[Guid]) -> set[tuple[Guid, int]]:
    at = report.index("Analyzing Fabric for Credit Loops")
    found = {(normalise_guid(g), int(p)) for g, p in _PORT.findall(report[at:])}
    return {c for c in found if c[0] in switches}


@pytest.fixture
def credit_loop_lab(tmp_path: Path) -> Iterator[str]:
    dump = tmp_path / "lfts.dump"
    c = clean()
    dump.write_text(edited(c, credit_loop_changes(c)))
    with running("fattree-small", "rt-peer", routing="file", lfts_file=str(dump)) as name:
        yield name


@pytest.mark.parametrize("engine", ["minhop", "updn", "ftree", "dfsssp"])
def test_no_credit_loop_either_way_on_clean_tables(engine: str) -> None:
    with running("rail-small", "rt-peer", routing=engine) as name:
        dumps = Path(lab.opensm_dump_dir(name))
        theirs = ibdmchk(dumps)
        d, ours = ibfab_on(name, dumps / "opensm.fdbs")
        detail = IBDMCHK_DETAIL.read_text() if IBDMCHK_DETAIL.is_file() else ""
    assert "-I- no credit loops found" in theirs and "credit loops in routing" not in theirs
    assert not ours.report.credit.found
    _same_destinations_per_port(d, ours, detail)


def test_the_planted_credit_loop_is_the_same_ring_for_both(credit_loop_lab: str) -> None:
    dumps = Path(lab.opensm_dump_dir(credit_loop_lab))
    theirs = ibdmchk(dumps)
    d, ours = ibfab_on(credit_loop_lab, dumps / "opensm.fdbs")
    assert "-E- credit loops in routing" in theirs
    assert ours.report.credit.found and ours.report.errors
    switches = {n.guid for n in d.fabric.switches()}
    ring = {(h.switch, h.port) for h in ours.report.credit.cycle}
    assert loop_channels(theirs, switches) == ring
    detail = IBDMCHK_DETAIL.read_text() if IBDMCHK_DETAIL.is_file() else ""
    _same_destinations_per_port(d, ours, detail)


def _same_destinations_per_port(d: Discovery, ours: RoutesCheck, detail: str) -> None:
    """ibdmchk's destination LIDs per switch out port (CA-driving ports left out) are ibfab's,
    counted for ibdmchk's traffic: every CA to every CA (on a rail fabric ibfab judges each
    rail's all-to-all, a narrower pattern, so the walk is run again for all CAs)."""
    if not detail:
        pytest.skip("ibdmchk wrote no per-port detail")
    b = ours.report.walk.bound
    every_ca = Traffic("all-to-all", np.where(b.hca_switch >= 0, 0, -1).astype(np.int32), 1)
    w = walk(b, every_ca, tiers_of(b, d.classification))
    compared = 0
    for line in detail.splitlines():
        m = re.match(r"^\s*(\d+)\s+S([0-9a-fA-F]{16})/U1/P(\d+)\s*$", line)
        if not m:
            continue
        s = b.index[normalise_guid(m.group(2))]
        port = int(m.group(3))
        assert int(w.port_dests[s, port]) == int(m.group(1)), line
        compared += 1
    assert compared == sum(1 for (s, p) in b.links if b.far_switch[s, p] >= 0)


def check_lft_balance(name: str, tmp: Path) -> dict[tuple[Guid, int], int]:
    """check_lft_balance -v on dump_lfts and an ibnetdiscover cache of the lab: per (switch, port)."""
    lfts, cache = tmp / "lfts.txt", tmp / "fabric.cache"
    lfts.write_text(lab.run_tool(name, ["dump_lfts"]).stdout)
    lab.run_tool(name, ["ibnetdiscover", "--cache", str(cache)])
    out = lab.run_tool(name, ["check_lft_balance", "-l", str(lfts), "-i", str(cache), "-v"]).stdout
    figures: dict[tuple[Guid, int], int] = {}
    switch: Guid | None = None
    for line in out.splitlines():
        m = re.match(r"^(?:Unbalanced )?Switch Port Usage: .*, (0x[0-9a-f]+)$", line)
        if m:
            switch = normalise_guid(m.group(1))
            continue
        m = re.match(r"^Port (\d+): (\d+)$", line)
        if m and switch is not None:
            figures[(switch, int(m.group(1)))] = int(m.group(2))
    assert figures, out
    return figures


@pytest.mark.parametrize("spec", ["fattree-small", "rail-small"])
def test_per_port_balance_figures_are_check_lft_balances(spec: str, tmp_path: Path) -> None:
    with running(spec, "rt-clb") as name:
        theirs = check_lft_balance(name, tmp_path)
        _, ours = ibfab_on(name, _dump(name, tmp_path))
    lids = ours.report.walk.port_lids
    index = ours.report.walk.bound.index
    assert {k: int(lids[index[k[0]], k[1]]) for k in theirs} == theirs
    # every switch-to-switch port ibfab counts is one check_lft_balance reports
    b = ours.report.walk.bound
    ours_ports = {(b.switches[s], p) for (s, p) in b.links if b.far_switch[s, p] >= 0}
    assert ours_ports <= set(theirs)


def test_ports_above_36_are_where_check_lft_balance_is_silent(tmp_path: Path) -> None:
    """superpod-1su: 64-port leaves with hosts on 1-32 and uplinks on 33-64. check_lft_balance
    reports ports 33-36 only (its port list stops at 036); ibfab counts all 32 uplinks, and where
    both count they agree."""
    with running("superpod-1su", "rt-clb64") as name:
        theirs = check_lft_balance(name, tmp_path)
        _, ours = ibfab_on(name, _dump(name, tmp_path))
    w = ours.report.walk
    b = w.bound
    uplinks = {(b.switches[s], p) for (s, p) in b.links if b.far_switch[s, p] >= 0}
    above = {k for k in uplinks if k[1] > 36}
    assert above and not above & set(theirs)
    assert {k for k in uplinks if k[1] <= 36} <= set(theirs)
    for (g, p), n in theirs.items():
        assert int(w.port_lids[b.index[g], p]) == n
    assert all(int(w.port_lids[b.index[g], p]) > 0 for g, p in above)


def _dump(name: str, tmp: Path) -> Path:
    path = tmp / "fts.txt"
    path.write_text(lab.run_tool(name, ["dump_fts"]).stdout)
    return path
