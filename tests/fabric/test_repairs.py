"""Repairs for every fault kind, once: a clean fabric gets none, each planted fault exactly its
own (degraded cable, flapping cable, rail miswire), one action per target, and an unsafe isolation
plan fails the command (exit 8) whether it is a dry run or not."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.advise.actions import Action, ActionKind
from fabric.advise.candidates import findings_from_dict
from fabric.advise.recommend import recommend
from fabric.advise.safety import SafetyPolicy
from fabric.app.discovery.discover import Discovery, analyse
from fabric.cli.main import main
from tests.advise_fabrics import fabric_of
from tests.fabric.test_advise import UPSTREAM, link_row
from topology.generate import generate, to_ibnetdiscover
from topology.model import Fabric, Link, PortRef

REPAIRS = {ActionKind.ISOLATE_PORT, ActionKind.DRAIN_NODE, ActionKind.REPLACE_CABLE, ActionKind.SWAP_CABLES}


def repairs(d: Discovery, findings: list[dict[str, object]] | None = None, **kw: object) -> list[Action]:
    recs = recommend(
        d.fabric,
        d.classification,
        findings_from_dict({"links": findings or []}),
        sm=UPSTREAM,
        anomalies=d.anomalies,
        **kw,  # type: ignore[arg-type]
    )
    return [a for a in recs.actions if a.kind in REPAIRS]


@pytest.mark.parametrize("spec", ["rail-small", "fattree-small", "rail-3tier"])
def test_a_clean_fabric_needs_no_repair(spec: str) -> None:
    d = fabric_of(spec)
    assert d.anomalies == ()
    assert repairs(d) == []


@pytest.mark.parametrize(
    ("fault", "target", "trains"),
    [
        ("degraded-width:leaf-su01-r0:1", "leaf-su01-r0:1 <-> dgx-0001 mlx5_0:1", "1xNDR"),
        ("degraded-speed:leaf-su02-r1:5", "leaf-su02-r1:5 <-> spine-01:10", "4xEDR"),
    ],
)
def test_a_degraded_cable_is_replaced_with_both_ends_named(fault: str, target: str, trains: str) -> None:
    d = fabric_of("rail-small", (fault,))
    (act,) = repairs(d)
    assert act.kind is ActionKind.REPLACE_CABLE and act.target == target
    assert act.reason.startswith(f"trains at {trains}, below its peers")
    assert act.evidence[0].startswith("discovery: cable ")
    (line,) = act.commands_for("operator")
    near, far = target.split(" <-> ")
    for end in (near, far):
        node, port = end.rsplit(":", 1)
        assert f"{node} port {port}" in line
    assert line.startswith("reseat and clean both ends")


def _original_ports(d_clean: Discovery, host: str) -> dict[str, str]:
    """Where each HCA of ``host`` is cabled in the clean design: 'dgx-0002 mlx5_1' -> 'leaf port N'."""
    out = {}
    cls = d_clean.classification
    for g in cls.hosts[host]:
        ((_, far, _),) = d_clean.fabric.neighbours(g)
        out[cls.nodes[g].name] = f"{cls.nodes[far.guid].name} port {far.port}"
    return out


def _moves(act: Action) -> dict[str, tuple[str, str]]:
    out = {}
    for line in act.commands_for("operator"):
        m = re.fullmatch(r"(.+) \(rail \d+\): its cable from (.+) to (.+)", line)
        if m:
            out[m.group(1)] = (m.group(2), m.group(3))
    return out


@pytest.mark.parametrize(
    ("faults", "moved"),
    [
        (("miswire:dgx-0002:1:2",), 2),
        (("miswire:dgx-0005:0:3",), 2),
    ],
)
def test_a_miswire_gets_the_exact_recabling(faults: tuple[str, ...], moved: int) -> None:
    host = faults[0].split(":")[1]
    d = fabric_of("rail-small", faults)
    (act,) = repairs(d)
    assert act.kind is ActionKind.SWAP_CABLES and act.target == host
    assert act.evidence[0].startswith(f"discovery: {host}: ")
    moves = _moves(act)
    assert len(moves) == moved
    clean = _original_ports(fabric_of("rail-small"), host)
    now = _original_ports(d, host)
    for hca, (source, dest) in moves.items():
        assert source == now[hca]  # where it is
        assert dest == clean[hca]  # where its rail's leaf holds its port
    swaps = [c for c in act.commands_for("operator") if c.startswith("swap the cables of")]
    assert len(swaps) == (1 if moved == 2 else 0)


def _recabled(moves: dict[str, tuple[str, int]]) -> Discovery:
    """The clean rail-small fabric with the named HCAs' cables moved to (leaf, port)."""
    clean = fabric_of("rail-small")
    by_name = {c.name: g for g, c in clean.classification.nodes.items()}
    to = {by_name[h]: PortRef(by_name[leaf], port) for h, (leaf, port) in moves.items()}
    links = []
    for lk in clean.fabric.links:
        hca = next((e.guid for e in (lk.a, lk.b) if e.guid in to), None)
        links.append(Link(PortRef(hca, 1), to[hca], lk.width, lk.speed) if hca else lk)
    moved = Fabric.build(clean.fabric.nodes.values(), links, origin=clean.fabric.origin)
    return analyse(moved, "", "recabled")


def test_a_single_cable_on_the_wrong_leaf_moves_to_its_free_usual_port() -> None:
    d = _recabled({"dgx-0003 mlx5_1": ("leaf-su01-r2", 20)})
    assert [a.kind for a in d.anomalies] == ["rail_miswire"]
    (act,) = repairs(d)
    assert _moves(act) == {"dgx-0003 mlx5_1": ("leaf-su01-r2 port 20", "leaf-su01-r1 port 3")}
    assert "not known" not in act.reason


def test_three_cables_in_a_ring_each_go_home() -> None:
    d = _recabled(
        {
            "dgx-0003 mlx5_1": ("leaf-su01-r2", 3),
            "dgx-0003 mlx5_2": ("leaf-su01-r3", 3),
            "dgx-0003 mlx5_3": ("leaf-su01-r1", 3),
        }
    )
    (act,) = repairs(d)
    assert _moves(act) == {
        "dgx-0003 mlx5_1": ("leaf-su01-r2 port 3", "leaf-su01-r1 port 3"),
        "dgx-0003 mlx5_2": ("leaf-su01-r3 port 3", "leaf-su01-r2 port 3"),
        "dgx-0003 mlx5_3": ("leaf-su01-r1 port 3", "leaf-su01-r3 port 3"),
    }
    assert not [c for c in act.commands_for("operator") if c.startswith("swap the cables of")]


def test_a_cable_whose_home_port_is_taken_names_the_leaf_only() -> None:
    # dgx-0003's rail-1 cable sits on the rail-2 leaf, and its usual port on the rail-1 leaf is
    # taken by another host's cable: no port is invented.
    d = _recabled({"dgx-0003 mlx5_1": ("leaf-su01-r2", 20), "dgx-0004 mlx5_1": ("leaf-su01-r1", 3)})
    (act,) = [a for a in repairs(d) if a.target == "dgx-0003"]
    ((source, dest),) = _moves(act).values()
    assert source == "leaf-su01-r2 port 20"
    assert dest == "leaf-su01-r1 (rail 1; no free port is known for it)"
    assert "a destination port is not known" in act.reason


def test_flapping_means_two_downs_not_one() -> None:
    d = fabric_of("rail-small")
    row = link_row(d, "leaf-su01-r0:5", "critical", downs=2, flaps_per_hour=2.0)
    acts = repairs(d, [row])
    assert [a.kind for a in acts] == [ActionKind.ISOLATE_PORT, ActionKind.REPLACE_CABLE]
    assert acts[0].target == acts[1].target
    assert acts[1].reason.startswith("flapping: 2 link-downs")
    assert "2 link-down(s) in the window" in acts[1].evidence
    once = link_row(d, "leaf-su01-r0:5", "warn", downs=1)  # a reboot or a reseat
    assert [a.kind for a in repairs(d, [once])] == [ActionKind.ISOLATE_PORT]


def test_one_action_per_target_however_many_findings_point_at_it() -> None:
    # Three HCA cables of one host at 'watch', switch-to-host allowed: each would cut its HCA off,
    # so each asks for the same drain; and a repeat offender that also flaps is replaced once.
    d = fabric_of("rail-small")
    rows = [link_row(d, f"leaf-su01-r{r}:1", "watch") for r in range(3)]
    rows.append(link_row(d, "leaf-su01-r0:5", "critical", downs=3, repeat_days=4, repeat_offender=True))
    acts = repairs(d, rows, min_status="watch", policy=SafetyPolicy(allow_switch_to_host=True))
    keys = [(a.kind, a.target) for a in acts]
    assert len(keys) == len(set(keys))
    (drain,) = [a for a in acts if a.kind is ActionKind.DRAIN_NODE]
    assert drain.target == "dgx-0001"
    assert drain.reason.startswith("3 HCAs' only cables to the fabric are watch: ")
    assert all(f"leaf-su01-r{r}:1 <-> dgx-0001 mlx5_{r}:1" in drain.reason for r in range(3))
    (slurm,) = drain.commands_for("slurm")
    assert slurm.startswith('scontrol update NodeName=dgx-0001 State=DRAIN Reason="ibfab: 3 HCAs')
    (replace,) = [a for a in acts if a.kind is ActionKind.REPLACE_CABLE]
    assert "repeat offender" in replace.reason and "flapping: 3 link-downs" in replace.reason


def test_every_fault_kind_at_once_each_gets_its_repair_once() -> None:
    faults = ("miswire:dgx-0002:1:2", "degraded-width:leaf-su01-r0:1", "degraded-speed:leaf-su02-r1:5")
    d = fabric_of("rail-small", faults)
    acts = repairs(d)
    assert sorted(a.kind.value for a in acts) == ["replace_cable", "replace_cable", "swap_cables"]


# -- isolate exits 8 on any STOP verdict ------------------------------------------------------------
@pytest.fixture
def topo(tmp_path: Path) -> Path:
    path = tmp_path / "f.topo"
    path.write_text(to_ibnetdiscover(generate("rail-small")))
    return path


def test_isolate_dry_run_with_a_stop_verdict_exits_8(topo: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    base = ["isolate", "--input", str(topo), "--db", db]
    ok = CliRunner().invoke(main, [*base, "leaf-su01-r0:5"])
    assert ok.exit_code == 0 and "dry run: nothing changed" in ok.stdout
    res = CliRunner().invoke(main, [*base, "leaf-su01-r0:5", "leaf-su01-r0:6"])
    assert res.exit_code == 8
    assert "STOP" in res.stdout and "[uplink_floor]" in res.stdout
    assert "1 of 2 port(s) break safety rules (uplink_floor); nothing would be changed" in res.stderr
    host = CliRunner().invoke(main, [*base, "leaf-su01-r0:1", "--json"])
    assert (
        host.exit_code == 8 and json.loads(host.stdout)["safety"]["verdicts"][0]["rule"] == "disconnects_hca"
    )


# -- the site's thresholds decide what flapping is, as they do for health ---------------------------
def test_recommend_takes_flapping_from_the_thresholds_file(tmp_path: Path) -> None:
    from tests.tui_data import SNAPSHOT_EVERY_S, build_store, topology_file

    # 16 snapshots up to now, the flapping uplink down once more in each
    t0 = time.time() - 16 * SNAPSHOT_EVERY_S
    db, _, _, flappy = build_store(tmp_path / "s.db", t0=t0)
    topo = topology_file(tmp_path / "f.topo")
    strict = tmp_path / "strict.toml"
    strict.write_text("[health]\nflap_critical = 100\n")
    base = ["recommend", "--input", str(topo), "--db", str(db), "--json"]

    def replaced(*extra: str) -> list[dict[str, object]]:
        res = CliRunner().invoke(main, [*base, *extra])
        assert res.exit_code == 0, res.output
        out = json.loads(res.stdout)
        return [a for a in out["actions"] if a["kind"] == "replace_cable"]

    (act,) = replaced()
    downs = re.match(r"flapping: (\d+) link-downs", str(act["reason"]))
    assert downs is not None and 2 <= int(downs.group(1)) < 100
    assert act["port"] in [{"guid": e.guid, "port": e.port} for e in (flappy.a, flappy.b)]
    # The same store judged with the site's file: that many downs are not flapping there.
    assert replaced("--thresholds", str(strict)) == []
    # ... as health, given the same file, judges that link: warn (down at all), not critical.
    assert flapping_status(db, flappy) == "critical"
    assert flapping_status(db, flappy, "--thresholds", str(strict)) == "warn"


def flapping_status(db: Path, lk: Link, *extra: str) -> str:
    res = CliRunner().invoke(main, ["health", "--db", str(db), "--json", *extra])
    assert res.exit_code == 0, res.output
    ends = [{"guid": e.guid, "port": e.port} for e in (lk.a, lk.b)]
    (row,) = [r for r in json.loads(res.stdout)["links"] if [r["a"], r["b"]] in (ends, ends[::-1])]
    assert row["downs"] >= 2
    return str(row["status"])


def test_flapping_cable_actions_use_the_given_thresholds() -> None:
    from fabric.health.thresholds import HealthThresholds

    d = fabric_of("rail-small")
    row = link_row(d, "leaf-su01-r0:5", "critical", downs=3)
    assert [a.kind for a in repairs(d, [row])] == [ActionKind.ISOLATE_PORT, ActionKind.REPLACE_CABLE]
    t = HealthThresholds(flap_critical=4)
    assert [a.kind for a in repairs(d, [row], thresholds=t)] == [ActionKind.ISOLATE_PORT]
