"""Routing, AR and NCCL advice from evidence only: what is known says where from, what is unknown
holds back every setting that depends on it, and commands never signal a process by name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.advise.actions import Action, ActionKind
from fabric.advise.recommend import recommend
from fabric.advise.routing_advice import RoutingAdvice, advise_routing
from fabric.advise.subnet_manager import Ar, SubnetManager, SwitchAr
from fabric.cli.main import main
from tests.advise_fabrics import fabric_of
from tests.conftest import REALDATA
from tests.fabric.test_advise import link_row
from topology.ibdiag_state import ArState

AR_DEPENDENT = {"NCCL_IB_ADAPTIVE_ROUTING", "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_SL"}
SUPERPOD = REALDATA / "ibnetdiscover" / "topograph-dgx-ndr-superpod-622nodes.txt"
IBDIAG = REALDATA / "ibdiagnet"
LOG = """Nov 22 07:37:04 996289 [95BEC740] 0x43 -> OpenSM 3.3.23
Nov 22 07:37:05 054623 [92BE56C0] 0x02 -> osm_ucast_mgr_process: minhop tables configured on all switches
"""


def env_of(adv: RoutingAdvice | tuple[Action, ...]) -> dict[str, str]:
    actions = adv.actions if isinstance(adv, RoutingAdvice) else adv
    return {a.target: a.commands_for("nccl")[0] for a in actions if a.kind is ActionKind.SET_NCCL_ENV}


def engine_actions(adv: RoutingAdvice) -> list[Action]:
    kinds = (ActionKind.ENABLE_AR, ActionKind.DISABLE_AR, ActionKind.SET_ROUTING_ENGINE)
    return [a for a in adv.actions if a.kind in kinds]


def all_switches(spec: str, enabled: bool | None, sls: tuple[int, ...] | None = None) -> SwitchAr:
    d = fabric_of(spec)
    states = {s.guid: ArState(s.guid, enabled, sls is not None, sls, None, None) for s in d.fabric.switches()}
    return SwitchAr("ibdiagnet AR_INFO (test)", states)


# -- nothing known ----------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["fattree-small", "rail-small", "rail-3tier"])
def test_unknown_sm_gives_no_setting_that_depends_on_it(spec: str) -> None:
    d = fabric_of(spec)
    adv = advise_routing(d.fabric, d.classification, SubnetManager())
    assert adv.ar.state is Ar.UNKNOWN
    assert engine_actions(adv) == []
    assert not AR_DEPENDENT & set(env_of(adv))
    assert "AR unknown" in adv.summary and "AR off" not in adv.summary
    assert any("subnet manager: unknown" in f for f in adv.facts)
    (unknown,) = adv.unknowns
    assert "NCCL_IB_ADAPTIVE_ROUTING" in unknown.waits
    joined = "\n".join(unknown.commands)
    assert "ibdiagnet -r" in joined and "tables configured on all switches" in joined
    assert "routing_engine_active" in joined  # UFM's own answer


def test_opensm_conf_alone_says_what_would_run_not_what_runs() -> None:
    d = fabric_of("fattree-small")
    sm = SubnetManager(conf={"routing_engine": "updn"}, sources={"conf": "opensm.conf /etc/x"})
    adv = advise_routing(d.fabric, d.classification, sm)
    assert adv.ar.state is Ar.UNKNOWN
    assert any("not necessarily now" in h for h in adv.ar.how)
    assert adv.actions == ()


def test_superpod_capture_gets_no_guessed_routing_advice() -> None:
    res = CliRunner().invoke(main, ["recommend", "--input", str(SUPERPOD), "--db", "/nonexistent/x.db"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "AR unknown" in out
    for guess in (
        "AR off",
        "NCCL_IB_ADAPTIVE_ROUTING=0",
        "routing_engine updn",
        "NCCL_IB_QPS_PER_CONNECTION=",
    ):
        assert guess not in out
    assert "subnet manager: unknown" in out
    assert "ibdiagnet -r" in out and "to learn it:" in out
    data = json.loads(
        CliRunner()
        .invoke(main, ["recommend", "--input", str(SUPERPOD), "--db", "/nonexistent/x.db", "--json"])
        .stdout
    )
    assert data["routing"]["adaptive_routing"]["state"] == "unknown"
    assert [u["what"] for u in data["routing"]["unknowns"]] == ["whether the switches route adaptively (AR)"]


# -- the SM's log -----------------------------------------------------------------------------------
def test_upstream_version_alone_settles_ar_but_not_the_engine() -> None:
    d = fabric_of("fattree-small")
    sm = SubnetManager(version="3.3.23", sources={"version": "OpenSM log /x"})
    adv = advise_routing(d.fabric, d.classification, sm)
    assert adv.ar.state is Ar.OFF
    assert any("OpenSM log /x: OpenSM 3.3.23 (upstream, which has no AR engine)" in h for h in adv.ar.how)
    assert env_of(adv)["NCCL_IB_ADAPTIVE_ROUTING"].endswith("=0")
    assert engine_actions(adv) == []  # which engine runs is not known
    (unknown,) = adv.unknowns
    assert unknown.what == "the routing engine the SM runs" and "ftree" in unknown.waits


def test_upstream_already_on_the_best_engine_is_left_alone() -> None:
    d = fabric_of("fattree-small")
    adv = advise_routing(d.fabric, d.classification, SubnetManager(version="3.3.23", engine="ftree"))
    assert engine_actions(adv) == [] and adv.unknowns == ()


def test_static_engine_of_an_unknown_sm_gets_no_engine_advice() -> None:
    # A static engine in the log of an SM whose version is not known: AR is off (NCCL may be told),
    # but whether NVIDIA's AR engines exist there is not known, so nothing about the engine.
    d = fabric_of("fattree-small")
    adv = advise_routing(d.fabric, d.classification, SubnetManager(engine="minhop"))
    assert adv.ar.state is Ar.OFF and engine_actions(adv) == []
    assert [u.what for u in adv.unknowns] == [
        "which OpenSM runs (NVIDIA's has AR engines, upstream's has none)"
    ]


def test_opensm_log_and_conf_files_as_evidence(tmp_path: Path) -> None:
    topo = tmp_path / "f.topo"
    from topology.generate import generate, to_ibnetdiscover

    topo.write_text(to_ibnetdiscover(generate("fattree-small")))
    log = tmp_path / "opensm.log"
    log.write_text(LOG)
    args = ["recommend", "--input", str(topo), "--db", str(tmp_path / "none.db"), "--opensm-log", str(log)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert f"OpenSM log {log}: OpenSM 3.3.23 (upstream)" in res.stdout
    assert f"OpenSM log {log}: minhop (a static engine) configured the switches last" in res.stdout
    assert "routing_engine ftree  # in opensm.conf" in res.stdout
    assert "export NCCL_IB_ADAPTIVE_ROUTING=0" in res.stdout
    missing = CliRunner().invoke(main, [*args[:-1], str(tmp_path / "nope.log")])
    assert missing.exit_code == 3 and "nope.log" in missing.stderr and "Traceback" not in missing.output


# -- the switches (ibdiagnet AR_INFO) ---------------------------------------------------------------
def test_ar_on_every_switch_for_all_sls_needs_no_setting() -> None:
    d = fabric_of("fattree-small")
    adv = advise_routing(
        d.fabric, d.classification, SubnetManager(switches=all_switches("fattree-small", True))
    )
    assert adv.ar.state is Ar.ON and adv.ar.all_sls
    assert adv.summary.startswith("AR on for all SLs")
    assert adv.actions == () and adv.unknowns == ()
    assert any("AR on for all SLs on 6 switches (6 of 6 switches reported)" in f for f in adv.facts)


def test_ar_on_some_sls_moves_nccl_to_an_ar_sl() -> None:
    d = fabric_of("fattree-small")
    sm = SubnetManager(switches=all_switches("fattree-small", True, (1, 3)))
    adv = advise_routing(d.fabric, d.classification, sm)
    assert env_of(adv) == {"NCCL_IB_SL": "export NCCL_IB_SL=1"}
    assert engine_actions(adv) == []


def test_ar_off_on_every_switch_is_static_routing() -> None:
    d = fabric_of("fattree-small")
    adv = advise_routing(
        d.fabric, d.classification, SubnetManager(switches=all_switches("fattree-small", False))
    )
    assert adv.ar.state is Ar.OFF
    assert set(env_of(adv)) == {"NCCL_IB_ADAPTIVE_ROUTING", "NCCL_IB_QPS_PER_CONNECTION"}
    # Which SM runs is not known: enabling AR is not advised, and that is said.
    assert engine_actions(adv) == [] and len(adv.unknowns) == 1


def test_ar_off_where_reported_but_a_switch_unreported_is_not_settled() -> None:
    d = fabric_of("fattree-small")
    sw = all_switches("fattree-small", False)
    first = sorted(sw.states)[0]
    partial = SwitchAr(sw.source, {g: st for g, st in sw.states.items() if g != first})
    adv = advise_routing(d.fabric, d.classification, SubnetManager(switches=partial))
    assert adv.ar.state is Ar.UNKNOWN
    assert not AR_DEPENDENT & set(env_of(adv))


def test_mixed_ar_names_the_switches_without_it_and_sets_nothing() -> None:
    d = fabric_of("fattree-small")
    sw = all_switches("fattree-small", True)
    leaf = next(g for g, c in d.classification.nodes.items() if c.name == "leaf-02")
    states = dict(sw.states)
    states[leaf] = ArState(leaf, False, False, None, None, None)
    adv = advise_routing(d.fabric, d.classification, SubnetManager(switches=SwitchAr(sw.source, states)))
    assert adv.ar.state is Ar.MIXED and adv.ar.off == (leaf,)
    assert any(f.startswith("AR is off on leaf-02:") for f in adv.facts)
    assert adv.actions == ()


def _with_ar_rows(tmp_path: Path, mask: str) -> Path:
    """The real run, with AR_INFO rows for every switch as 'ibdiagnet -r' would write them."""
    src = IBDIAG / "garyli-ndr-272nodes-ibdiagnet2.db_csv"
    text = src.read_text()
    switches = re.search(r"START_SWITCHES\n[^\n]*\n(.*?)END_SWITCHES", text, re.S)
    assert switches is not None
    guids = [line.split(",")[0] for line in switches.group(1).splitlines() if line]
    header = re.search(r"START_AR_INFO\n([^\n]*)\n", text)
    assert header is not None
    cols = header.group(1).split(",")
    rows = []
    for g in guids:
        cell = {"NodeGUID": g, "e": "1", "by_sl_en": "1", "enable_by_sl_mask": mask}
        rows.append(",".join(cell.get(c, "0") for c in cols))
    text = text.replace(header.group(0), header.group(0) + "\n".join(rows) + "\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / "ibdiagnet2.db_csv").write_text(text)
    return out


def test_recommend_from_a_real_ibdiagnet_run_says_ar_was_not_read() -> None:
    res = CliRunner().invoke(main, ["recommend", "--ibdiagnet", str(IBDIAG), "--db", "/nonexistent/x.db"])
    assert res.exit_code == 0, res.output
    assert (
        "AR_INFO" in res.stdout
        and "has no rows: that run did not read AR (ibdiagnet -r reads it)" in res.stdout
    )
    assert "master SM port 0xb0cf0e0300d33fc0 (on ib-switch-sequoia)" in res.stdout
    assert "AR unknown" in res.stdout and "NCCL_IB_ADAPTIVE_ROUTING=0" not in res.stdout


def test_recommend_reads_ar_per_switch_from_ibdiagnet(tmp_path: Path) -> None:
    run = _with_ar_rows(tmp_path, "0x0006")
    res = CliRunner().invoke(
        main, ["recommend", "--ibdiagnet", str(run), "--db", str(tmp_path / "x.db"), "--json"]
    )
    assert res.exit_code == 0, res.output
    routing = json.loads(res.stdout)["routing"]
    assert routing["adaptive_routing"]["state"] == "on" and routing["adaptive_routing"]["sls"] == [1, 2]
    assert routing["summary"].startswith("AR on for SL 1,2")
    nccl = [a for a in routing["actions"] if a["target"] == "NCCL_IB_SL"]
    assert [a["commands"][0]["text"] for a in nccl] == ["export NCCL_IB_SL=1"]
    assert any("AR on for SL 1,2 on 9 switches (9 of 9 switches reported)" in h for h in routing["facts"])
    both = CliRunner().invoke(main, ["recommend", "--ibdiagnet", str(run), "--input", str(SUPERPOD)])
    assert both.exit_code == 2 and "choose one of" in both.stderr


# -- commands ---------------------------------------------------------------------------------------
def test_no_advice_signals_a_process_by_name() -> None:
    d = fabric_of("fattree-small")
    from fabric.advise.candidates import findings_from_dict

    findings = findings_from_dict({"links": [link_row(d, "leaf-01:9", "critical")]})
    texts: list[str] = []
    kinds: set[ActionKind] = set()
    for sm in (
        SubnetManager(1, "0x1", "SMINFO_MASTER", "3.3.23", "minhop"),
        SubnetManager(1, "0x1", "SMINFO_MASTER", "5.18.0 MLNX", "updn"),
    ):
        recs = recommend(d.fabric, d.classification, findings, sm=sm)
        texts += [c.text for a in recs.actions for c in a.commands]
        kinds |= {a.kind for a in recs.actions}
    assert {ActionKind.ISOLATE_PORT, ActionKind.SET_ROUTING_ENGINE, ActionKind.ENABLE_AR} <= kinds
    assert not [t for t in texts if re.search(r"\b(pkill|killall)\b", t)]
    signals = [t for t in texts if "HUP" in t or "restart" in t]
    assert signals and all("systemctl" in t for t in signals)
    assert any("opensm@0x1" in t for t in signals)  # the unit of the master SM sminfo named
    assert any('kill -HUP "$(cat /var/run/opensm.pid)"' in t for t in signals)
