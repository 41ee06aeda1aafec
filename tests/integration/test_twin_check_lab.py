"""Changes checked on the twin before they are applied, with the real OpenSM re-routing in the lab.

The cases of the issue, each alone: a port whose loss makes ftree fall back (a warning to accept,
with OpenSM's own words), one whose loss leaves destinations unreachable (OpenSM's file engine
keeps the site's tables: a STOP, exit 8, with a lost route hop by hop), one whose loss only moves
load (a warning with the hottest link before and after), a healthy spare uplink (passes in one
line), and a site whose engine nobody knows (the check says it cannot be done).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.app.discovery.discover import discover
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.cli.main import main
from fabric.lab import simulator as lab
from topology.generate import generate, to_ibnetdiscover

pytestmark = pytest.mark.lab

SPARE = "leafspine:leaves=2,spines=2,hosts=2,cables=2"  # minhop leaves spine-02's cables idle


@pytest.fixture
def ftree_lab() -> Iterator[str]:
    lab.up("fattree-small", (), name="ftlab", routing="ftree")
    try:
        yield "ftlab"
    finally:
        for s in lab.list_labs():  # the lab and its twin
            lab.down(s.name)


def _cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


def _links(name: str) -> set[object]:
    return {lk.key for lk in discover(Session(Source.lab(name))).fabric.links}


def test_ftree_falls_back_a_warning_to_accept_with_the_sms_words(ftree_lab: str, tmp_path: Path) -> None:
    code, out, err = _cli("isolate", "leaf-01:9", "--lab", ftree_lab, "--check-routing", "--json")
    assert code == 0, err
    check = json.loads(out)["routing_check"]
    assert check["verdict"] == "confirm" and check["routing"] == "ftree"
    fallback = next((i for i in check["issues"] if i["kind"] == "engine_fallback"), None)
    assert fallback is not None, (check, Path(lab.opensm_log("twin-0c42a10300a00000")).read_text()[-6000:])
    ev = fallback["evidence"]
    assert ev["engine_before"] == "ftree" and ev["engine_after"] == "minhop" and ev["failed"] == ["ftree"]
    assert any("ftree: cannot build lid matrices" in ln for ln in ev["log_lines"])
    assert any("Different number of ports in an upward port group" in ln for ln in ev["log_lines"])
    assert {i["kind"] for i in check["issues"]} <= {"engine_fallback", "load_rise"}
    assert check["delta"]["lost_destinations"] == 0 and not check["delta"]["credit_loop_opened"]
    assert check["restored"]

    db = str(tmp_path / "a.db")
    before = _links(ftree_lab)
    code, out, err = _cli(
        "isolate", "leaf-01:9", "--lab", ftree_lab, "--check-routing", "--apply", "--yes", "--db", db
    )
    assert code == 2 and "--accept-routing-warnings" in err
    assert _links(ftree_lab) == before  # nothing changed
    code, out, err = _cli(
        "isolate",
        "leaf-01:9",
        "--lab",
        ftree_lab,
        "--check-routing",
        "--apply",
        "--yes",
        "--accept-routing-warnings",
        "--db",
        db,
    )
    assert code == 0, err
    assert "CONFIRM the SM's engine fell back: ftree could not route" in out and "audit 1: ibportstate" in out
    assert len(_links(ftree_lab)) == len(before) - 1


def test_a_loss_that_leaves_destinations_unreachable_is_a_stop(tmp_path: Path) -> None:
    capture = tmp_path / "fabric.topo"
    capture.write_text(to_ibnetdiscover(generate("fattree-small", ())))
    code, out, err = _cli("lab", "up", "--from", str(capture), "--engine", "minhop", "--json")
    assert code == 0, err
    name = json.loads(out)["name"]
    try:
        dump = tmp_path / "site.lfts"
        dump.write_text(lab.run_tool(name, ["dump_fts"], timeout=60).stdout)
        # the site routes with OpenSM's file engine, loading those tables
        code, out, err = _cli("lab", "up", "--from", str(capture), "--engine", "file", "--lfts", str(dump))
        assert code == 0, err
        code, out, err = _cli("isolate", "leaf-01:9", "--input", str(capture), "--check-routing")
        assert code == 8, out + err
        assert "STOP" in out and "destination(s) unreachable after the change" in out
        assert "stops the change (unreachable); nothing was changed" in err
        code, out, err = _cli("isolate", "leaf-01:9", "--input", str(capture), "--check-routing", "--json")
        check = json.loads(out)["routing_check"]
        assert check["verdict"] == "stop" and check["twin_built"] is False  # the same twin, kept up
        lost = check["delta"]["lost"]
        assert lost and all(x["reason"] == "port without a cable" for x in lost)
        assert all(x["path"][-1]["to"] is None for x in lost)  # each route ends at the dead port
        assert check["sm_after"]["engine"] == "file" and not check["sm_after"]["failed"]
    finally:
        lab.down(name)


def test_load_moves_a_warning_and_a_spare_uplink_passes_quietly() -> None:
    lab.up(SPARE, (), name="spare")
    try:
        code, out, err = _cli("isolate", "leaf-01:3", "--lab", "spare", "--check-routing", "--json")
        assert code == 0, err
        check = json.loads(out)["routing_check"]
        assert [i["kind"] for i in check["issues"]] == ["load_rise"] and check["verdict"] == "confirm"
        ev = check["issues"][0]["evidence"]
        assert ev["hottest_after"]["routes"] > 1.5 * ev["hottest_before"]["routes"]
        assert check["delta"]["lost_destinations"] == 0 and check["delta"]["used_changed"] > 0

        code, out, err = _cli("isolate", "leaf-01:5", "--lab", "spare", "--check-routing")
        assert code == 0, err
        lines = [ln for ln in out.splitlines() if "routing check" in ln]
        assert len(lines) == 1 and ": pass: no destination lost" in lines[0]
        assert "CONFIRM" not in out and "STOP" not in out
    finally:
        for s in lab.list_labs():
            lab.down(s.name)


def test_unknown_engine_cannot_be_checked(tmp_path: Path) -> None:
    capture = tmp_path / "fabric.topo"
    capture.write_text(to_ibnetdiscover(generate(SPARE, ())))
    code, _, err = _cli("isolate", "leaf-01:5", "--input", str(capture), "--check-routing")
    assert code == 2
    assert "the routing check cannot be done: no evidence of the SM's routing engine" in err
    assert lab.list_labs() == []  # no twin was started for a check that cannot be made


def test_whatif_isolate_routes_by_the_twins_tables_before_and_after(tmp_path: Path) -> None:
    capture = tmp_path / "rail.topo"
    capture.write_text(to_ibnetdiscover(generate("rail-small", ())))
    code, out, err = _cli("lab", "up", "--from", str(capture), "--engine", "minhop", "--json")
    assert code == 0, err
    name = json.loads(out)["name"]
    try:
        code, out, err = _cli("whatif", "isolate", "leaf-su01-r3:5", "--input", str(capture), "--json")
        assert code == 0, err
        res = json.loads(out)
        assert res["routing_model"].startswith(
            "static routes from the forwarding tables before and after the change"
        )
        assert f"twin {name} ran it" in res["routing_model"]
        by_group = {g["group"]: g for g in res["groups"]}
        for label, g in by_group.items():  # the other rails' routes do not touch the cable
            if label != "rail 3":
                assert g["all_to_all"]["static"] == pytest.approx(g["all_to_all"]["static_baseline"]), label
        assert (
            by_group["rail 3"]["all_to_all"]["static"] <= by_group["rail 3"]["all_to_all"]["static_baseline"]
        )
        # no twin of this topology up: the estimate, as before
        other = tmp_path / "other.topo"
        other.write_text(to_ibnetdiscover(generate("rail-small", ("missing-link:leaf-su01-r0",))))
        code, out, err = _cli("whatif", "isolate", "leaf-su01-r3:5", "--input", str(other), "--json")
        assert code == 0, err
        assert "twin" not in json.loads(out)["routing_model"]
    finally:
        lab.down(name)


def test_a_drain_checked_on_the_twin_loses_only_the_drained_host(tmp_path: Path) -> None:
    from fabric.app.discovery.discover import discover_text
    from fabric.app.twin import check_drain, site_engine, twin_name

    text = to_ibnetdiscover(generate(SPARE, ()))
    d = discover_text(text, "spare")
    try:
        check = check_drain(d, ["cn0001"], site_engine("minhop"))
        assert check.verdict.value == "pass", check.to_dict()
        assert check.changes == ("leaf-01:1 <-> cn0001 mlx5_0:1",) or len(check.changes) == 1
        assert check.delta.lost == () and check.restored
        # the twin is back as it was: cn0001 is discovered there again
        back = discover(Session(Source.lab(check.twin.name))).fabric
        assert len(back.hcas()) == len(d.fabric.hcas())
    finally:
        lab.down(twin_name(d.fabric))


def test_an_isolation_applied_without_the_command_line_is_gated_by_a_running_twin(tmp_path: Path) -> None:
    """The TUI's apply (and any automatic isolation) runs the change on the fabric's twin first
    when one is up: a STOP there refuses it and the fabric is left as it was."""
    from fabric.advise.candidates import resolve_port
    from fabric.advise.safety import SafetyPolicy
    from fabric.app.isolation.isolate import plan_isolation
    from fabric.app.session import StoreAccess
    from fabric.app.twin import apply_isolation_checked, build_twin, site_engine
    from topology.errors import SafetyError

    lab.up("fattree-small", (), name="gated")
    try:
        d = discover(Session(Source.lab("gated")))
        dump = tmp_path / "site.lfts"
        dump.write_text(lab.run_tool("gated", ["dump_fts"], timeout=60).stdout)
        build_twin(d, site_engine("file"), lfts_file=str(dump))
        plan = plan_isolation(
            d.fabric,
            d.classification,
            [resolve_port(d.fabric, d.classification, "leaf-01:9")],
            SafetyPolicy(),
        )
        before = _links("gated")
        with pytest.raises(SafetyError, match="stops the change \\(unreachable\\)"):
            apply_isolation_checked(Session(Source.lab("gated"), StoreAccess(tmp_path / "a.db")), plan)
        assert _links("gated") == before
    finally:
        for s in lab.list_labs():
            lab.down(s.name)
