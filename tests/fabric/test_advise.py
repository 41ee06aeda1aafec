"""Candidates from health findings, actions and their commands, AR/NCCL advice, recommend CLI."""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from click.testing import CliRunner

from fabric.advise.actions import ActionKind, ufm_port_name
from fabric.advise.candidates import (
    findings_from_dict,
    findings_from_report,
    isolation_candidates,
    read_health_file,
    resolve_port,
)
from fabric.advise.recommend import recommend
from fabric.advise.routing_advice import advise_routing, path_diversity, root_guids
from fabric.advise.subnet_manager import SubnetManager
from fabric.app.discovery.discover import Discovery
from fabric.cli.main import main
from fabric.health import BerEstimate, EndHealth, LinkHealth, Status
from probes.opensm import parse_opensm_conf, parse_opensm_log, parse_sminfo
from tests.advise_fabrics import TWO_BY_TWO, fabric_of, guid_of
from tests.conftest import realdata_files
from topology.errors import ParseError, UsageError
from topology.generate import generate, to_ibnetdiscover
from topology.model import Guid, PortRef

# Upstream OpenSM whose log says it runs minhop (AR known off: upstream has no AR engine).
UPSTREAM = SubnetManager(1, "0x1", "SMINFO_MASTER", "3.3.23", "minhop")


def link_row(d: Discovery, port: str, status: str, **extra: Any) -> dict[str, Any]:
    """One ``links`` entry of ``ibfab health --json`` for the cable on ``port``."""
    ref = resolve_port(d.fabric, d.classification, port)
    lk = next(lk for p, _, lk in d.fabric.neighbours(ref.guid) if p == ref.port)
    row: dict[str, Any] = {
        "a": {"guid": lk.a.guid, "port": lk.a.port},
        "b": {"guid": lk.b.guid, "port": lk.b.port},
        "score": {"ok": 100, "watch": 80, "warn": 50, "critical": 10}[status],
        "status": status,
        "ber": {"value": 3.2e-12, "upper": 4e-12},
        "flaps_per_hour": 0.5,
        "reasons": [f"test finding on {port}"],
    }
    row.update(extra)
    return row


# -- candidates ------------------------------------------------------------------------------------
def test_findings_from_health_json_and_candidates_worst_first() -> None:
    d = fabric_of("fattree-small")
    doc = {
        "links": [
            link_row(d, "leaf-01:9", "warn"),
            link_row(d, "leaf-02:10", "critical", score=5),
            link_row(d, "leaf-03:9", "watch"),
            link_row(d, "leaf-04:1", "ok"),
        ]
    }
    findings = findings_from_dict(doc)
    assert [f.status for f in findings] == ["warn", "critical", "watch", "ok"]
    assert findings[0].ber == 3.2e-12 and findings[0].flaps_per_hour == 0.5
    cands = isolation_candidates(d.fabric, d.classification, findings)
    names = [d.classification.nodes[c.port.guid].name + f":{c.port.port}" for c in cands]
    assert names == ["leaf-02:10", "leaf-01:9"]  # critical first; watch and ok are not candidates
    assert not any(c.switch_to_host for c in cands)
    cands = isolation_candidates(d.fabric, d.classification, findings, min_status="watch")
    assert len(cands) == 3


def test_candidate_port_is_the_leaf_end_of_an_uplink_and_the_switch_end_of_a_host_cable() -> None:
    d = fabric_of(TWO_BY_TWO)
    spine_side = link_row(d, "spine-01:1", "critical")
    host_side = link_row(d, "cn0001 mlx5_0:1", "critical")
    cands = isolation_candidates(
        d.fabric, d.classification, findings_from_dict({"links": [spine_side, host_side]})
    )
    ports = {(d.classification.nodes[c.port.guid].name, c.port.port, c.switch_to_host) for c in cands}
    assert ports == {("leaf-01", 3, False), ("leaf-01", 1, True)}


def test_health_file_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "h.json"
    bad.write_text("{not json")
    with pytest.raises(ParseError, match="not JSON"):
        read_health_file(bad)
    bad.write_text(json.dumps({"nodes": []}))
    with pytest.raises(ParseError, match="no 'links' list"):
        read_health_file(bad)
    bad.write_text(json.dumps({"links": [{"a": {"guid": "zz", "port": 1}, "b": {}, "status": "warn"}]}))
    with pytest.raises(ParseError, match=r"links\[0\]"):
        read_health_file(bad)


def test_findings_from_a_real_health_report_match_its_json() -> None:
    ber = BerEstimate(7, 1e12, 7e-12, 3e-12, 1.4e-11, 0.95, 1e-12, False, False)
    a, b = PortRef(Guid("0x0000000000000002"), 3), PortRef(Guid("0x0000000000000001"), 9)
    end = EndHealth(a, 3, 600.0, {}, 7e-12, 0.08, (), False, 0)
    lh = LinkHealth(
        b,
        a,
        4,
        "HDR",
        35,
        Status.CRITICAL,
        ber,
        1.5,
        2,
        1,
        0.08,
        ("BER 7e-12",),
        None,
        None,
        {},
        (end, end),
        True,
        4,
    )

    class Report:  # only .links is read; a real HealthReport needs a summary we do not use
        links = (lh,)

    with pytest.raises(UsageError):
        findings_from_report(Report())
    from fabric.health import HealthReport, HealthSummary

    summary = HealthSummary(0.0, 1.0, 1, 1, 1, {}, {}, 0, (), (), ())
    report = HealthReport((lh,), (), summary)
    (live,) = findings_from_report(report)
    (saved,) = findings_from_dict(json.loads(json.dumps(report.to_dict())))
    assert live == saved
    assert (
        live.status == "critical"
        and live.ber == 7e-12
        and live.repeat_offender
        and live.repeat_offender_days == 4
    )
    assert live.a == b  # the lower port reference is 'a'


# -- recommend -----------------------------------------------------------------------------------------
def test_recommend_isolates_drains_and_swaps_with_exact_commands() -> None:
    d = fabric_of("fattree-small")
    cls = d.classification
    findings = findings_from_dict(
        {
            "links": [
                link_row(d, "leaf-01:9", "critical", repeat_days=4, repeat_offender=True),
                link_row(d, "leaf-02:3", "critical"),  # a host cable: drain cn0011 instead
            ]
        }
    )
    recs = recommend(d.fabric, cls, findings, sm=UPSTREAM)
    kinds = [a.kind for a in recs.actions]
    assert kinds[:3] == [ActionKind.REPLACE_CABLE, ActionKind.ISOLATE_PORT, ActionKind.DRAIN_NODE]

    iso = recs.actions[1]
    leaf = d.fabric.nodes[guid_of(d, "leaf-01")]
    # Addressed by a directed route from where discovery ran (cn0001's HCA on leaf-01), which
    # cannot cross the cable being disabled; without that origin, by LID.
    origin = d.fabric.origin
    assert origin is not None and d.fabric.nodes[origin.guid].description == "cn0001 mlx5_0"
    assert iso.commands_for("opensm")[0] == "ibportstate -D 0,1 9 disable"
    assert iso.commands_for("opensm", "undo") == ["ibportstate -D 0,1 9 enable"]
    by_lid = recommend(dataclasses.replace(d.fabric, origin=None), cls, findings, sm=UPSTREAM).actions[1]
    assert by_lid.commands_for("opensm")[0] == f"ibportstate {leaf.lid} 9 disable"
    (ufm,) = iso.commands_for("ufm")
    argv = shlex.split(ufm)
    assert argv[:3] == ["curl", "-k", "-u"] and "PUT" in argv
    assert argv[-3].endswith("/ufmRestV2/app/unhealthy_ports")
    body = json.loads(argv[-1])
    assert body == {"ports": [f"{leaf.guid[2:]}_9"], "ports_policy": "UNHEALTHY", "action": "isolate"}
    assert json.loads(shlex.split(iso.commands_for("ufm", "undo")[0])[-1]) == {
        "ports": [f"{leaf.guid[2:]}_9"],
        "ports_policy": "HEALTHY",
    }
    assert "keeps 7/8 uplinks (1400 of 1600 Gb/s)" in iso.impact

    drain = recs.actions[2]
    assert drain.target == "cn0011"
    (line,) = drain.commands_for("slurm")
    assert line.startswith('scontrol update NodeName=cn0011 State=DRAIN Reason="ibfab: ')
    assert drain.commands_for("slurm", "undo") == ["scontrol update NodeName=cn0011 State=RESUME"]


def test_ufm_port_name_drops_0x() -> None:
    assert ufm_port_name(PortRef(Guid("0x0002c9030060dc20"), 10)) == "0002c9030060dc20_10"


# -- routing and NCCL --------------------------------------------------------------------------------
def _independent_paths(d: Discovery, a: Guid, b: Guid) -> int:
    g = nx.MultiGraph()
    for lk in d.fabric.links:
        if all(d.fabric.nodes[x].kind.value == "switch" for x in (lk.a.guid, lk.b.guid)):
            g.add_edge(lk.a.guid, lk.b.guid)
    return sum(
        _product(g.number_of_edges(p[i], p[i + 1]) for i in range(len(p) - 1))
        for p in nx.all_shortest_paths(nx.Graph(g), a, b)
    )


def _product(values: Any) -> int:
    out = 1
    for v in values:
        out *= v
    return out


@pytest.mark.parametrize(
    ("spec", "a", "b"),
    [
        ("rail-small", "leaf-su01-r0", "leaf-su02-r7"),
        ("fattree-small", "leaf-01", "leaf-04"),
        ("rail-3tier", "leaf-su01-r0", "leaf-su01-r3"),
        ("rail-3tier", "leaf-su01-r0", "leaf-su02-r0"),
    ],
)
def test_path_diversity_counts_equal_cost_paths(spec: str, a: str, b: str) -> None:
    d = fabric_of(spec)
    div = path_diversity(d.fabric, d.classification)
    expected = _independent_paths(d, guid_of(d, a), guid_of(d, b))
    assert expected >= 4
    assert div.minimum <= expected <= div.maximum
    n = len(d.classification.leaves())
    assert div.pairs == n * (n - 1)


def test_path_diversity_values_by_design() -> None:
    # rail-small: 4 spines, one cable each -> 4 paths between any two leaves.
    div = path_diversity(fabric_of("rail-small").fabric, fabric_of("rail-small").classification)
    assert (div.minimum, div.maximum, div.single_path_pairs) == (4, 4, 0)
    # fattree-small: 2 spines, 4 cables from each leaf to each: 2 x 4 x 4 = 32 cable combinations.
    d = fabric_of("fattree-small")
    assert path_diversity(d.fabric, d.classification).minimum == 32


def test_upstream_opensm_gets_a_static_engine_with_root_guids() -> None:
    d = fabric_of("rail-small")
    adv = advise_routing(d.fabric, d.classification, UPSTREAM)
    eng = next(a for a in adv.actions if a.kind is ActionKind.SET_ROUTING_ENGINE)
    assert "no adaptive routing" in eng.reason
    texts = eng.commands_for("opensm")
    assert texts[0].startswith("routing_engine ftree")
    spines = sorted(guid_of(d, f"spine-{i:02d}") for i in range(1, 5))
    assert root_guids(d.fabric, d.classification) == spines
    assert any(all(s in t for s in spines) for t in texts)
    env = {a.target: a.commands_for("nccl")[0] for a in adv.actions if a.kind is ActionKind.SET_NCCL_ENV}
    assert env["NCCL_IB_ADAPTIVE_ROUTING"] == "export NCCL_IB_ADAPTIVE_ROUTING=0"
    assert env["NCCL_IB_QPS_PER_CONNECTION"] == "export NCCL_IB_QPS_PER_CONNECTION=4"
    assert env["NCCL_CROSS_NIC"] == "export NCCL_CROSS_NIC=0"
    hcas = ",".join(f"mlx5_{i}:1" for i in range(8))
    assert env["NCCL_IB_HCA"] == f"export NCCL_IB_HCA={shlex.quote('=' + hcas)}"


def test_rail_order_follows_the_hca_indexes() -> None:
    # A DGX H100 numbering: hosts use mlx5_0,3,4,5,6,9,10,11 (here 4 of them on a small fabric).
    d = fabric_of("rail:units=1,nodes=4,hcas=4,spines=2,radix=64")
    assert d.classification.rail_indexes == (0, 1, 2, 3)
    adv = advise_routing(d.fabric, d.classification, UPSTREAM)
    hca = next(a for a in adv.actions if a.target == "NCCL_IB_HCA")
    assert hca.commands_for("nccl") == ["export NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1"]


def test_nvidia_opensm_without_ar_gets_ar_and_the_ar_sl() -> None:
    d = fabric_of("fattree-small")
    sm = SubnetManager(1, "0x1", "SMINFO_MASTER", "5.18.0 MLNX", "updn")
    adv = advise_routing(d.fabric, d.classification, sm)
    ar = next(a for a in adv.actions if a.kind is ActionKind.ENABLE_AR)
    assert ar.commands_for("opensm")[0].startswith("routing_engine ar_updn")
    env = {a.target: a.commands_for("nccl")[0] for a in adv.actions if a.kind is ActionKind.SET_NCCL_ENV}
    # AR will be on: NCCL's default already uses it; the SLs it will run on are not known, so no SL.
    assert env == {}
    assert any("NCCL_IB_ADAPTIVE_ROUTING=1" in f for f in adv.facts)
    on = SubnetManager(version="5.18.0 MLNX", engine="ar_updn", conf={"ar_sl_mask": "0x0004"})
    adv = advise_routing(d.fabric, d.classification, on)
    assert not any(a.kind in (ActionKind.ENABLE_AR, ActionKind.SET_ROUTING_ENGINE) for a in adv.actions)
    env = {a.target: a.commands_for("nccl")[0] for a in adv.actions if a.kind is ActionKind.SET_NCCL_ENV}
    assert env == {"NCCL_IB_SL": "export NCCL_IB_SL=2"}
    # SL 0 (NCCL's default) among the AR SLs: nothing to set.
    on0 = dataclasses.replace(on, conf={"ar_sl_mask": "0x0005"})
    assert advise_routing(d.fabric, d.classification, on0).actions == ()


def test_parse_sminfo_and_opensm_conf() -> None:
    line = (
        "sminfo: sm lid 1 sm guid 0x1070fd0300100001, activity count 10370 priority 0 state 3 SMINFO_MASTER"
    )
    assert parse_sminfo(line) == (1, "0x1070fd0300100001", "SMINFO_MASTER")
    assert parse_sminfo("ibwarn: nothing") is None
    conf = parse_opensm_conf("# comment\nrouting_engine ar_updn  # AR\nroot_guid_file /etc/r\nempty_key\n")
    assert conf == {"routing_engine": "ar_updn", "root_guid_file": "/etc/r"}


LAB_LOG = """Nov 22 07:37:04 996289 [95BEC740] 0x43 -> OpenSM 3.3.23
Nov 22 07:37:05 054623 [92BE56C0] 0x02 -> osm_ucast_mgr_process: minhop tables configured on all switches
Nov 22 07:37:05 057033 [92BE56C0] 0x02 -> SUBNET UP
Nov 22 07:39:05 054623 [92BE56C0] 0x02 -> osm_ucast_mgr_process: updn tables configured on all switches
"""


def test_parse_opensm_log_takes_the_last_engine() -> None:
    assert parse_opensm_log(LAB_LOG) == ("3.3.23", "updn")


@pytest.mark.parametrize("path", realdata_files("opensm"), ids=lambda p: p.name)
def test_parse_opensm_log_on_real_captures(path: Path) -> None:
    # The only capture is a mail-quoted excerpt of SMP timeouts (ERR 5411/3113/3120): it names
    # neither the version nor an engine, and parsing must not invent one.
    text = path.read_text(errors="replace")
    assert "ERR 5411" in text
    assert parse_opensm_log(text) == (None, None)


# -- CLI -------------------------------------------------------------------------------------------
def test_recommend_cli_with_saved_topology_and_health(tmp_path: Path) -> None:
    topo = tmp_path / "f.topo"
    topo.write_text(to_ibnetdiscover(generate("fattree-small")))
    d = fabric_of("fattree-small")
    health = tmp_path / "h.json"
    health.write_text(json.dumps({"links": [link_row(d, "leaf-03:12", "critical")]}))
    res = CliRunner().invoke(main, ["recommend", "--input", str(topo), "--health", str(health), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    iso = [a for a in out["actions"] if a["kind"] == "isolate_port"]
    assert [a["target"] for a in iso] == ["leaf-03:12 <-> spine-01:12"]
    assert out["safety"]["cap"] == 10
    res = CliRunner().invoke(main, ["recommend", "--input", str(topo), "--health", str(health)])
    assert res.exit_code == 0
    assert "isolate_port: leaf-03:12 <-> spine-01:12" in res.stdout
    assert "[opensm apply] ibportstate" in res.stdout

    missing = CliRunner().invoke(
        main, ["recommend", "--input", str(topo), "--health", str(tmp_path / "x.json")]
    )
    assert missing.exit_code == 3 and "x.json" in missing.stderr and "Traceback" not in missing.output


def test_a_findings_evidence_states_only_what_supports_it() -> None:
    """A BER of 0 and today's findings alone say nothing beyond the status: they are not listed
    as evidence (the demo's flapping cable read "BER 0.00e+00" and "findings on 1 days")."""
    from fabric.advise.candidates import LinkFinding
    from topology.model import Guid, PortRef

    a, b = PortRef(Guid("0x1"), 1), PortRef(Guid("0x2"), 2)
    quiet = LinkFinding(a, b, "critical", ("link went down 3 times",), ber=0.0, repeat_offender_days=1,
                        score=35, downs=3)  # fmt: skip
    assert quiet.evidence() == (
        "health critical (score 35)",
        "3 link-down(s) in the window",
        "link went down 3 times",
    )
    noisy = dataclasses.replace(quiet, ber=2.3e-9, repeat_offender_days=3, flaps_per_hour=2.0)
    assert noisy.evidence()[1:5] == (
        "BER 2.30e-09",
        "3 link-down(s) in the window",
        "2.00 link-downs/hour",
        "findings on 3 days",
    )


def test_a_link_that_is_only_slow_is_isolated_only_where_routing_is_static() -> None:
    """An uplink at 4xEDR among HDR peers, with no errors: out of service its flows move to
    full-rate links, which helps where routing is static and costs bandwidth where it is adaptive.
    With the SM unknown it is not isolated (said, with the cable's replacement as the advice);
    with AR known off (upstream OpenSM: minhop) it is, the routing evidence shown. A host's only
    slow cable is drained either way: no routing helps a slow host."""
    from fabric.advise.subnet_manager import SubnetManager

    d = fabric_of("rail-small", ("degraded-speed:leaf-su02-r1:5", "degraded-width:leaf-su01-r0:1"))
    slow = "trains at 4xEDR (100 Gb/s): EDR where its peers run NDR (400 Gb/s), 75% of its bandwidth lost"
    narrow = "trains at 1xNDR (100 Gb/s): 1x where its peers run 4x (400 Gb/s), 75% of its bandwidth lost"
    doc = {
        "links": [
            link_row(d, "leaf-su02-r1:5", "warn", reasons=[slow], ber={"value": 0.0}, flaps_per_hour=0.0),
            link_row(d, "leaf-su01-r0:1", "warn", reasons=[narrow], ber={"value": 0.0}, flaps_per_hour=0.0),
        ]
    }
    uplink = "leaf-su02-r1:5 <-> spine-01:10"

    def advice(sm: SubnetManager) -> tuple[dict[tuple[str, str], tuple[str, ...]], tuple[str, ...]]:
        recs = recommend(d.fabric, d.classification, findings_from_dict(doc), sm=sm, anomalies=d.anomalies)
        return {(a.kind.value, a.target): a.evidence for a in recs.actions}, recs.notes

    unknown, notes = advice(SubnetManager())
    assert ("isolate_port", uplink) not in unknown
    assert ("replace_cable", uplink) in unknown and ("drain_node", "dgx-0001") in unknown
    assert (
        f"not isolating {uplink}: it only trains below its peers (no errors); isolating it helps only "
        in (notes[0])
    )
    static, notes = advice(UPSTREAM)
    evidence = static[("isolate_port", uplink)]
    assert evidence[-1].startswith("static routing: the flows routed over it run at its rate")
    assert any("minhop" in e for e in evidence) and not notes
    assert ("drain_node", "dgx-0001") in static
