"""``ibfab drain``: recommend's drains applied to the real 4-node Slurm, seen in ``sinfo -R``, audited,
and resumed only after a clean re-test window.

The fabric's hosts cn0001..cn0004 are the Slurm nodes node1..node4 (a node map says so).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fabric.advise.candidates import resolve_port
from fabric.app.discovery.discover import discover_text
from fabric.cli.main import main
from fabric.store import ProbeResultRow, Store
from probes.slurm_parse import SINFO_REASONS, parse_reasons
from tests.slurm import SlurmCluster, slurm, slurm_cluster
from topology.generate import generate, to_ibnetdiscover

__all__ = ["slurm", "slurm_cluster"]

FOUR_HOSTS = "leafspine:leaves=2,spines=2,hosts=2,radix=40,speed=HDR"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    topo = tmp_path / "fabric.topo"
    text = to_ibnetdiscover(generate(FOUR_HOSTS))
    topo.write_text(text)
    d = discover_text(text, str(topo))
    # cn0001's only cable (leaf-01 port 1) is critical: isolating it would cut the host off.
    ref = resolve_port(d.fabric, d.classification, "leaf-01:1")
    lk = next(lk for p, _, lk in d.fabric.neighbours(ref.guid) if p == ref.port)
    health = tmp_path / "health.json"
    row = {
        "a": {"guid": lk.a.guid, "port": lk.a.port},
        "b": {"guid": lk.b.guid, "port": lk.b.port},
        "status": "critical",
        "score": 10,
        "ber": {"value": 3.2e-9},
        "reasons": ["BER 3.2e-09 over 2 h"],
    }
    health.write_text(json.dumps({"links": [row]}))
    nodes = tmp_path / "nodes.map"
    nodes.write_text("cn[0001-0004] node[1-4]\n")
    return {"topo": str(topo), "health": str(health), "map": str(nodes), "db": str(tmp_path / "ibfab.db")}


def invoke(cluster: SlurmCluster, *args: str) -> Any:
    return CliRunner().invoke(main, list(args), env=cluster.env)


def reasons(cluster: SlurmCluster) -> dict[str, str]:
    out = cluster.client("sinfo", "-R", "-h", "-N", "-o", SINFO_REASONS).stdout
    return {d.node: d.reason for d in parse_reasons(out)}


def store_sweep(db: str, rows: list[ProbeResultRow]) -> int:
    """A sweep as ``ibfab sweep run`` stores it (what a re-test over SSH or in a lab leaves)."""
    with Store.open(db) as store:
        sweep = store.save_sweep(time.time(), "pairwise", "re-test")
        store.add_probe_results(sweep, rows)
        store.finish_sweep(sweep, time.time())
    return sweep


@pytest.mark.slurm
def test_recommended_drain_is_a_dry_run_then_applied_audited_and_seen_in_sinfo_R(
    slurm: SlurmCluster, files: dict[str, str]
) -> None:
    base = ["drain", "recommended", "--input", files["topo"], "--health", files["health"],
            "--node-map", files["map"], "--db", files["db"]]  # fmt: skip
    dry = invoke(slurm, *base)
    assert dry.exit_code == 0, dry.output
    lines = dry.output.splitlines()
    assert lines[0].startswith("drain node1 (fabric host cn0001): ") and "critical" in lines[0]
    assert "leaf-01:1 <-> cn0001 mlx5_0:1" in lines[0]
    assert "  slurm now: idle" in lines
    (cmd,) = [line for line in lines if line.startswith("  [slurm apply] ")]
    assert cmd.startswith("  [slurm apply] scontrol update NodeName=node1 State=DRAIN 'Reason=ibfab: ")
    assert "leaf-01:1" in cmd
    assert lines[-1] == "dry run: nothing changed (add --apply)" and reasons(slurm) == {}
    # No confirmation, no change (stdin is not a terminal here).
    refused = invoke(slurm, *base, "--apply")
    assert refused.exit_code == 2 and "add --yes" in refused.output and reasons(slurm) == {}
    try:
        done = invoke(slurm, *base, "--apply", "--yes")
        assert done.exit_code == 0, done.output
        # Slurm shows it, with ibfab's finding as the reason.
        why = reasons(slurm)
        assert (
            list(why) == ["node1"]
            and why["node1"].startswith("ibfab: ")
            and "leaf-01:1" in why["node1"]
            and "critical" in why["node1"]
        )
        with Store.open(files["db"]) as store:
            (entry,) = store.audit_log()
        assert (entry.action, entry.target, entry.result) == ("drain", "node1 (fabric host cn0001)", "ok")
        assert entry.command == cmd.removeprefix("  [slurm apply] ")
        assert done.output.splitlines()[-1] == (
            f"audit {entry.id}: {entry.command}: ok (undo: ibfab drain undo {entry.id})"
        )
        # Asked again: already drained, nothing to do.
        again = invoke(slurm, *base, "--apply", "--yes")
        assert (
            "  skip: already drained (ibfab: its only cable to the fabric is critical: leaf-01:1"
            in again.output
            and "nothing to drain" in again.output
        )
        listed = json.loads(invoke(slurm, "drain", "list", "--db", files["db"], "--json").stdout)
        assert [a["audit_id"] for a in listed["audited"]] == [entry.id]
        assert [(s["node"], s["reason"]) for s in listed["slurm"]] == [("node1", why["node1"])]
        # Inside the re-test window: refused, still drained.
        early = invoke(slurm, "drain", "undo", str(entry.id), "--db", files["db"], "--apply", "--yes")
        assert early.exit_code == 8 and "re-test it clean for 126 min" in early.output
        assert list(reasons(slurm)) == ["node1"]
        # A re-test since the drain failed on cn0001: refused even after the window.
        sweep = store_sweep(files["db"], [
            ProbeResultRow("cn0001", "mlx5_0", "cn0003", "mlx5_0", 12.0, 200.0, False, "12 Gb/s of 200"),
            ProbeResultRow("cn0002", "mlx5_0", "cn0004", "mlx5_0", 196.0, 200.0, True),
        ])  # fmt: skip
        bad = invoke(slurm, "drain", "undo", str(entry.id), "--db", files["db"], "--retest-window", "0",
                     "--apply", "--yes")  # fmt: skip
        assert bad.exit_code == 8, bad.output
        assert (
            f"cn0001 failed a re-test since the drain (sweep {sweep}: cn0001/mlx5_0 -> cn0003/mlx5_0"
            in bad.output
        )
        assert list(reasons(slurm)) == ["node1"]
        forced = invoke(slurm, "drain", "undo", str(entry.id), "--db", files["db"], "--retest-window", "0",
                        "--force", "--apply", "--yes")  # fmt: skip
        assert forced.exit_code == 0, forced.output
        assert reasons(slurm) == {}
        with Store.open(files["db"]) as store:
            resumed = store.audit_log()[-1]
        assert (resumed.action, resumed.undo_of, resumed.command) == (
            "resume", entry.id, "scontrol update NodeName=node1 State=RESUME [forced]"
        )  # fmt: skip
        gone = invoke(slurm, "drain", "undo", str(entry.id), "--db", files["db"])
        assert gone.exit_code == 2 and "was already resumed" in gone.output
    finally:
        slurm.client("scontrol", "update", "NodeName=node1", "State=RESUME", check=False)
        slurm.wait_idle(("node1",))


@pytest.mark.slurm
def test_a_clean_retest_window_resumes_and_a_foreign_drain_is_left_alone(
    slurm: SlurmCluster, files: dict[str, str]
) -> None:
    db = files["db"]
    try:
        made = invoke(slurm, "drain", "nodes", "cn[0003-0004]", "--reason", "flapping 12/h on leaf-02:2",
                      "--node-map", files["map"], "--db", db, "--apply", "--yes")  # fmt: skip
        assert made.exit_code == 0, made.output
        assert reasons(slurm) == {n: "ibfab: flapping 12/h on leaf-02:2" for n in ("node3", "node4")}
        with Store.open(db) as store:
            e3, e4 = store.audit_log()
        store_sweep(db, [ProbeResultRow("cn0001", "mlx5_0", "cn0003", "mlx5_0", 197.0, 200.0, True)])
        plan = json.loads(invoke(slurm, "drain", "undo", str(e3.id), "--db", db, "--retest-window", "0",
                                 "--json").stdout)  # fmt: skip
        assert plan["window_passed"] and plan["retests_clean"] and plan["retests"][0]["pairs"] == 1
        ok = invoke(
            slurm, "drain", "undo", str(e3.id), "--db", db, "--retest-window", "0", "--apply", "--yes"
        )
        assert ok.exit_code == 0, ok.output
        assert "  re-test: sweep 1: 1 pair(s) with cn0003, clean" in ok.output
        assert list(reasons(slurm)) == ["node4"]
        slurm.wait_idle(("node3",))
        # Someone re-drains node4 for their own reason: ibfab does not resume it.
        slurm.client("scontrol", "update", "NodeName=node4", "State=DRAIN", "Reason=bad DIMM")
        foreign = invoke(
            slurm, "drain", "undo", str(e4.id), "--db", db, "--retest-window", "0", "--apply", "--yes"
        )
        assert foreign.exit_code == 2 and "drained for another reason now (bad DIMM)" in foreign.output
        assert reasons(slurm) == {"node4": "bad DIMM"}
    finally:
        for n in ("node3", "node4"):
            slurm.client("scontrol", "update", f"NodeName={n}", "State=RESUME", check=False)
        slurm.wait_idle(("node3", "node4"))


@pytest.mark.slurm
def test_a_host_that_is_no_slurm_node_is_skipped_not_guessed(
    slurm: SlurmCluster, files: dict[str, str]
) -> None:
    res = invoke(slurm, "drain", "nodes", "cn0001", "--reason", "x", "--db", files["db"], "--apply", "--yes")
    assert res.exit_code == 0, res.output
    assert "  skip: cn0001 is not a Slurm node (a node map names it: --node-map)" in res.output
    assert "nothing to drain" in res.output and reasons(slurm) == {}
