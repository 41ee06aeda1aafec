"""`ibfab counters collect` through the CLI against a lab running the real ibqueryerrors."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.core.units import parse_duration
from fabric.lab import simulator as lab
from fabric.store import Store
from topology.errors import UsageError

SPEC = "leafspine:leaves=2,spines=2,hosts=2"  # 4 switches, 4 HCAs, 8 cables = 16 cabled ports
CABLED_PORTS = 16


@pytest.fixture
def lab_name() -> Iterator[str]:
    lab.up(SPEC, name="cli")
    try:
        yield "cli"
    finally:
        lab.down("cli")


def _collect(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, ["counters", "collect", *args])
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.lab
def test_every_1s_count_2_stores_two_complete_snapshots(lab_name: str, tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    start = time.monotonic()
    code, out, err = _collect("--lab", lab_name, "--every", "1s", "--count", "2", "--db", db)
    assert code == 0, err
    assert time.monotonic() - start >= 1.0  # the second collection waited for the interval
    lines = out.strip().splitlines()
    assert len(lines) == 2
    assert all(f"{CABLED_PORTS} ports read, 0 unreachable" in ln for ln in lines)
    assert "topology 1 saved" in lines[0] and "topology" not in lines[1]
    with Store.open(db) as store:
        snaps = store.list_counter_snapshots()
        assert [s.ports for s in snaps] == [CABLED_PORTS, CABLED_PORTS]
        # one collection a second: each started at least 1 s after the one before (when each read
        # its counters within its run depends on the machine's load, not on the interval)
        runs = sorted(r.started for r in store.list_runs())
        assert len(runs) == 2 and runs[1] - runs[0] >= 0.99
        assert snaps[0].taken_at < snaps[1].taken_at
        assert len(store.list_topologies()) == 1
        rows = store.load_port_counters(snaps[0].id)
        assert all(r.reachable and "xmit_data" in r.counters and "symbol_errors" in r.counters for r in rows)
        assert {c.tool for c in store.snapshot_captures(snaps[0].id)} == {"ibqueryerrors"}
        assert [r.ok for r in store.list_runs()] == [True, True]


@pytest.mark.lab
def test_json_lines(lab_name: str, tmp_path: Path) -> None:
    import json

    code, out, err = _collect("--lab", lab_name, "--count", "1", "--json", "--db", str(tmp_path / "j.db"))
    assert code == 0, err
    data = json.loads(out)
    assert data["ports_read"] == CABLED_PORTS and data["unreachable"] == 0 and data["topology_saved"]


def test_lab_not_running_is_one_line_error(tmp_path: Path) -> None:
    code, out, err = _collect("--lab", "nosuch", "--count", "1", "--db", str(tmp_path / "n.db"))
    assert code == 6
    assert out == ""
    assert err.strip().count("\n") == 0 and err.startswith("ibfab: error:") and "nosuch" in err
    assert "Traceback" not in err


@pytest.mark.lab
def test_lab_stopped_after_start_is_one_line_error(tmp_path: Path) -> None:
    lab.up(SPEC, name="gone")
    lab.down("gone")
    code, _, err = _collect("--lab", "gone", "--count", "1", "--db", str(tmp_path / "g.db"))
    assert code == 6 and err.startswith("ibfab: error:") and err.strip().count("\n") == 0


@pytest.mark.parametrize("bad", ["soon", "5x", "0s", "-1m", ""])
def test_bad_every_is_a_usage_error(bad: str, tmp_path: Path) -> None:
    code, _, err = _collect("--every", bad, "--count", "1", "--db", str(tmp_path / "b.db"))
    assert code == 2
    assert "--every" in err
    assert not (tmp_path / "b.db").exists()


def test_durations() -> None:
    assert [parse_duration(x) for x in ("30s", "5m", "1h", "0.2s", "90", "2d")] == [
        30.0,
        300.0,
        3600.0,
        0.2,
        90.0,
        172800.0,
    ]
    with pytest.raises(UsageError, match="--every '1 hour'"):
        parse_duration("1 hour")


@pytest.mark.lab
def test_unplugged_hca_ports_are_recorded_unreachable(lab_name: str, tmp_path: Path) -> None:
    db = str(tmp_path / "u.db")
    assert _collect("--lab", lab_name, "--count", "1", "--db", db)[0] == 0
    lab.link_down(lab_name, "cn0003 mlx5_0", 1)
    code, out, err = _collect("--lab", lab_name, "--count", "1", "--db", db)
    assert code == 0, err
    assert f"{CABLED_PORTS - 2} ports read, 1 unreachable" in out and "1 links down" in out
    with Store.open(db) as store:
        snap = store.list_counter_snapshots()[-1]
        assert snap.ports == CABLED_PORTS - 2 + 1  # the leaf end is no longer cabled; the HCA is a gap
        missing = [r for r in store.load_port_counters(snap.id) if not r.reachable]
        before = store.load_topology(1).fabric
        hca = next(n for n in before.nodes.values() if n.description == "cn0003 mlx5_0")
        assert [(r.guid, r.port) for r in missing] == [(hca.guid, 1)]
        assert missing[0].counters == {} and "not found by ibnetdiscover" in (
            missing[0].unreachable_reason or ""
        )
        events = store.load_link_events()
        assert [(e.kind, hca.guid in {e.link[0][0], e.link[1][0]}) for e in events] == [("down", True)]
    lab.link_up(lab_name, "cn0003 mlx5_0", 1)
    code, out, _ = _collect("--lab", lab_name, "--count", "1", "--db", db)
    assert f"{CABLED_PORTS} ports read, 0 unreachable" in out and "1 up" in out


def test_parse_duration_rejects_zero() -> None:
    with pytest.raises(UsageError):
        parse_duration("0")
