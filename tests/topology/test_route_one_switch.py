"""A fabric of one switch (a test bench, a small island): no switch-to-switch cable, so no route
waits on another switch's buffer. Its routes are judged clean, not a crash, with or without lanes
(no SL2VL table is needed where no cable joins two switches)."""

from __future__ import annotations

from tests.conftest import ROOT
from topology.anomaly import Severity
from topology.classify import classify
from topology.credit_loops_vl import Lanes
from topology.ibnetdiscover import parse_ibnetdiscover_text
from topology.lft import parse_lfts
from topology.model import Fabric
from topology.route_checks import RouteReport, check_routes
from topology.sl2vl import no_tables, parse_path_records

DATA = ROOT / "tests" / "data" / "sl2vl"
SW01 = "switchguid=0xc42a10300b00000"
HCAS = ("caguid=0x1070fd0300b00000\n", "caguid=0x1070fd0300b00010\n")

# ring-sw01's own table, as dump_fts writes it: its two HCAs on ports 1 and 2
DUMP = """Unicast lids [0x0-0x7] of switch DR path slid 0; dlid 0; 0 guid 0x0c42a10300b00000 (ring-sw01):
  Lid  Out   Destination
       Port     Info
0x0001 000 : (Switch portguid 0x0c42a10300b00000: 'ring-sw01')
0x0003 001 : (Channel Adapter portguid 0x1070fd0300b00001: 'rn001 mlx5_0')
0x0007 002 : (Channel Adapter portguid 0x1070fd0300b00011: 'rn002 mlx5_0')
3 valid lids dumped
"""


def one_switch() -> Fabric:
    """The real ring capture cut to ring-sw01 and its two hosts (its ring cables dropped)."""
    blocks = []
    for b in (DATA / "ibnetdiscover-ring5.txt").read_text().split("\n\n"):
        if SW01 in b:
            blocks.append("\n".join(ln for ln in b.splitlines() if not ln.startswith(("[7]", "[8]"))))
        elif b.startswith("#") or any(h in b + "\n" for h in HCAS):
            blocks.append(b)
    return parse_ibnetdiscover_text("\n\n".join(blocks) + "\n")


def judge(lanes: Lanes | None) -> RouteReport:
    f = one_switch()
    return check_routes(f, classify(f), parse_lfts(DUMP, "sw01.fts"), lanes=lanes)


def test_one_switch_is_judged_clean_not_a_crash() -> None:
    r = judge(None)
    assert len(one_switch().switches()) == 1 and r.balance.hosts == 2
    assert r.balance.directions == () and r.balance.hottest == ()
    assert not r.credit.found and r.credit.dependencies == 0
    assert [f for f in r.findings if f.severity in (Severity.ERROR, Severity.WARNING)] == []


def test_one_switch_lanes_need_no_table() -> None:
    paths = parse_path_records((DATA / "saquery-p-ring5-minhop.txt").read_bytes(), "pr.txt")
    r = judge(Lanes(no_tables("none to query"), paths))
    assert r.credit.lanes_known and not r.credit.found and r.credit.vls_used == ()
    assert r.credit.lanes.startswith("per VL: SL2VL tables from none to query")
