"""The twin's engine from evidence: each source alone, together, against each other, and none."""

from __future__ import annotations

from pathlib import Path

from fabric.advise.twin_engine import choose_engine
from fabric.app.twin.engine import site_engine
from probes.opensm import parse_routing_log
from tests.conftest import REALDATA

# OpenSM 3.3.23 in the lab, ftree on a fabric that is not a pure fat tree (measured): ftree gives
# up before routing ("lid matrices"), minhop routes.
FTREE_FALLBACK = """\
Nov 28 08:55:42 449446 [5BF6A6C0] 0x01 -> fabric_mark_leaf_switches: ERR AB26: CN port 0x24be05ffff980001 is connected to switch 0xf452140300115da0 with rank 1, while FatTree leaf rank is 2
Nov 28 08:55:42 449454 [5BF6A6C0] 0x02 -> Fabric topology is not a fat-tree
Nov 28 08:55:42 449479 [5BF6A6C0] 0x01 -> ucast_mgr_route: ftree: cannot build lid matrices
Nov 28 08:55:42 449696 [5BF6A6C0] 0x02 -> osm_ucast_mgr_process: minhop tables configured on all switches
Nov 28 08:55:42 472649 [5BF6A6C0] 0x02 -> SUBNET UP
"""


def test_the_log_names_an_engine_that_gave_up_before_routing() -> None:
    assert parse_routing_log(FTREE_FALLBACK) == (None, "minhop", ("ftree",))


def test_no_evidence_is_unknown_and_says_what_would_tell() -> None:
    c = choose_engine()
    assert not c.known and c.routing is None
    assert "--sm-log" in c.unknown and "--engine" in c.unknown


def test_the_log_alone_gives_the_engines_in_the_order_they_ran() -> None:
    c = choose_engine(log_engine="minhop", log_failed=("ftree",), log_source="osm.log")
    assert c.routing == "ftree,minhop" and c.source == "OpenSM log osm.log"
    assert "minhop configured the switches after ftree could not route" in c.evidence[0]
    assert choose_engine(log_engine="updn", log_source="osm.log").routing == "updn"


def test_the_conf_gives_the_list_when_the_log_names_one_of_it() -> None:
    c = choose_engine(log_engine="updn", log_source="l", conf_engine="ftree,updn", conf_source="c")
    assert c.routing == "ftree,updn" and c.source.startswith("opensm.conf c")
    # a conf changed since the SM started: the log's word stands
    c = choose_engine(log_engine="updn", log_source="l", conf_engine="dfsssp", conf_source="c")
    assert c.routing == "updn" and len(c.evidence) == 2
    assert choose_engine(conf_engine="(null)", conf_source="c").routing == "minhop"


def test_adaptive_routing_is_unknown_to_the_twin() -> None:
    c = choose_engine(log_engine="ar_updn", log_source="l")
    assert not c.known and "adaptive routing" in c.unknown
    c = choose_engine(conf_engine="updn", conf_source="c", switch_ar="on", ar_source="ibdiagnet AR_INFO (x)")
    assert not c.known and "adaptive routing is on" in c.unknown
    assert (
        choose_engine(conf_engine="updn", conf_source="c", switch_ar="off", ar_source="x").routing == "updn"
    )


def test_the_operator_chooses_and_the_evidence_is_said_beside() -> None:
    c = choose_engine("ftree", log_engine="updn", log_source="l")
    assert c.routing == "ftree" and c.operator and any("updn" in e for e in c.evidence)
    assert "checked with ftree, the engine chosen" in choose_engine("ftree").evidence[0]
    bad = choose_engine("ar_updn")
    assert not bad.known and "the twin's OpenSM has" in bad.unknown


def test_site_engine_reads_the_files(tmp_path: Path) -> None:
    log = tmp_path / "opensm.log"
    log.write_text(FTREE_FALLBACK)
    conf = tmp_path / "opensm.conf"
    conf.write_text("# routing\nrouting_engine ftree,minhop\n")
    c = site_engine(sm_log=str(log), sm_conf=str(conf))
    assert c.routing == "ftree,minhop" and c.known
    # the real ibdiagnet run: AR_INFO is empty (no -r), so it says nothing of the engine
    assert site_engine(ibdiagnet=str(REALDATA / "ibdiagnet")).known is False
