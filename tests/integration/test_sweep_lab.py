"""Sweeps end to end: lab fabrics with planted bad links (simulated traffic), and the SSH backend
against a real sshd on loopback (the real ib_write_bw, which finds no RDMA device here)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from fabric import lab
from fabric.app import sweep as sweeps
from fabric.cli.main import main
from probes.inventory import HostEntry
from probes.ssh import ssh_transport_factory
from probes.sweep import run_pair
from tests.sshd import Sshd, sshd_server
from topology.generate import generate, to_ibnetdiscover

__all__ = ["sshd_server"]


@pytest.fixture
def degraded_lab() -> Iterator[str]:
    # spine-01 port 1 is the cable to leaf-su01-r0 port 5; it trains at 1x (both ends annotated).
    lab.up("rail-small", ["degraded-width:spine-01:1"], name="sweepdeg")
    try:
        yield "sweepdeg"
    finally:
        lab.down("sweepdeg")


@pytest.fixture
def healthy_lab() -> Iterator[str]:
    lab.up("rail-small", (), name="sweeperr")
    try:
        yield "sweeperr"
    finally:
        lab.down("sweeperr")


def _end_names(suspect: dict[str, object]) -> set[str]:
    a, b = suspect["a"], suspect["b"]
    assert isinstance(a, dict) and isinstance(b, dict)
    return {f"{a['name']}/{a['port']}", f"{b['name']}/{b['port']}"}


@pytest.mark.lab
def test_planted_degraded_spine_link_ranks_first_through_the_cli(degraded_lab: str) -> None:
    res = CliRunner().invoke(main, ["sweep", "run", "--lab", degraded_lab, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["backend"] == "lab-simulated"
    assert all(r["backend"] == "lab-simulated" for r in doc["results"])
    assert _end_names(doc["suspects"][0]) == {"spine-01/1", "leaf-su01-r0/5"}
    assert doc["suspects"][0]["score"] == 1.0
    slow = [r for r in doc["results"] if r["attempt"] == 0 and r["gbps"] < 150]
    # 1x HDR = 50 Gb/s against 4x HDR = 200 Gb/s for the healthy pairs (ibsim trains NDR at HDR).
    assert slow and all(r["gbps"] == pytest.approx(50 * 0.97) for r in slow)
    assert doc["plan"]["coverage"]["cables_covered"] == doc["plan"]["coverage"]["cables_total"] == 64
    # Stored: show ranks the same link first from the stored routes.
    shown = CliRunner().invoke(main, ["sweep", "show", str(doc["sweep_id"]), "--json"])
    assert shown.exit_code == 0, shown.output
    assert _end_names(json.loads(shown.stdout)["suspects"][0]) == {"spine-01/1", "leaf-su01-r0/5"}
    text = CliRunner().invoke(main, ["sweep", "show"])
    assert "spine-01/1" in text.stdout.splitlines()[3] or "spine-01/1" in text.stdout.splitlines()[2]


@pytest.mark.lab
def test_error_rate_on_a_spine_port_ranks_that_link_first(healthy_lab: str) -> None:
    ctx = sweeps.prepare("rail-pairs", lab=healthy_lab)  # discover before the drops start
    lab.set_error_rate(healthy_lab, "spine-01", 30, port=1)
    try:
        outcome = sweeps.run_lab(ctx, healthy_lab)
    finally:
        lab.set_error_rate(healthy_lab, "spine-01", 0, port=1)
    names = sweeps.names_of(ctx.discovery)
    top = outcome.suspects[0]
    assert {names[top.link.a.guid], names[top.link.b.guid]} == {"spine-01", "leaf-su01-r0"}
    assert (
        top.direction is not None and names[top.direction] == "leaf-su01-r0"
    )  # the drops are of data entering spine-01
    assert outcome.retest_passes >= 1 and outcome.followup_probes >= 1
    assert outcome.suspects[1].score <= top.score and len(outcome.suspects[1].slow_pairs) < len(
        top.slow_pairs
    )


@pytest.mark.lab
def test_degraded_uplink_tied_with_a_host_cable_is_split_by_follow_ups() -> None:
    # spine-01 port 10 <-> leaf-su02-r1 port 5 at 1x: with OpenSM's routes every slow pair of the
    # sweep also ends on dgx-0005's HCA, so the uplink and that host cable tie on the sweep alone.
    # A follow-up between two hosts of leaf-su02-r1 crosses the host cable without the uplink.
    lab.up("rail-small", ["degraded-width:spine-01:10"], name="sweeptie")
    try:
        ctx = sweeps.prepare("rail-pairs", lab="sweeptie")
        outcome = sweeps.run_lab(ctx, "sweeptie")
    finally:
        lab.down("sweeptie")
    names = sweeps.names_of(ctx.discovery)
    top, second = outcome.suspects[0], outcome.suspects[1]
    assert {names[top.link.a.guid], names[top.link.b.guid]} == {"spine-01", "leaf-su02-r1"}
    assert {top.link.a.port, top.link.b.port} == {10, 5}
    assert outcome.followup_probes >= 1
    assert (second.score, len(second.slow_pairs)) < (top.score, len(top.slow_pairs))
    assert "dgx-0005" in names[second.link.a.guid] + names[second.link.b.guid]
    assert second.fast_pairs, "the host cable is cleared by a fast follow-up pair"


@pytest.mark.lab
def test_plan_cli_reports_rounds_bound_and_coverage(healthy_lab: str) -> None:
    res = CliRunner().invoke(main, ["sweep", "plan", "--lab", healthy_lab, "--pattern", "pairwise"])
    assert res.exit_code == 0, res.output
    assert "224 probes in 7 rounds (lower bound 7" in res.stdout
    assert "64/64 (from routes)" in res.stdout


def test_sweep_run_without_a_backend_is_a_one_line_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["sweep", "run", "--input", str(tmp_path / "x.topo")])
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "--inventory" in res.output


# -- SSH backend ----------------------------------------------------------------------------------
def _setup_ssh(server: Sshd, tmp_path: Path, hosts: int = 4) -> tuple[Path, Path, Path]:
    topo = tmp_path / "fabric.topo"
    topo.write_text(to_ibnetdiscover(generate("leafspine:leaves=2,spines=1,hosts=2,radix=40")))
    inventory = tmp_path / "hosts.txt"
    lines = [
        f"cn{i:04d} address=127.0.0.{i + 1} user={server.user} port={server.port} key_file={server.user_key}"
        for i in range(1, hosts + 1)
    ]
    inventory.write_text("\n".join(lines) + "\n")
    known = server.write_known_hosts(tmp_path / "known_hosts")
    return topo, inventory, known


def _leftovers(ports: range) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"ib_write_bw") and any(str(p).encode() in argv for p in ports):
            found.append(proc.name)
    return found


@pytest.mark.sshd
def test_ssh_sweep_records_every_pair_failure_and_cleans_up(sshd_server: Sshd, tmp_path: Path) -> None:
    topo, inventory, known = _setup_ssh(sshd_server, tmp_path)
    ctx = sweeps.prepare("pairwise", input_path=str(topo))
    assert len(ctx.plan.probes) == 6
    before = set(Path("/tmp").glob("ibfab-sweep-*.pid"))
    outcome = sweeps.run_ssh(
        ctx, str(inventory), known_hosts=str(known), timeout=20, base_port=18700, concurrency=4
    )
    assert len([r for r in outcome.results if r.attempt == 0]) == 6
    for r in outcome.results:
        assert not r.ok and r.gbps is None and r.backend == "ssh"
        assert r.error is not None and "Did not detect devices" in r.error and "client cn" in r.error
    # Both sides' raw output kept for the store; the server found no device either.
    assert all("Did not detect devices" in s for _, s in outcome.raw_outputs.values())
    assert set(Path("/tmp").glob("ibfab-sweep-*.pid")) == before
    assert _leftovers(range(18700, 18720)) == []
    sweep_id = sweeps.save(outcome, ctx.source)
    shown = sweeps.show(sweep_id)
    assert len(shown.results) == len(outcome.results) and shown.suspects == ()


@pytest.mark.sshd
def test_server_is_killed_by_pid_when_the_client_fails(sshd_server: Sshd, tmp_path: Path) -> None:
    _, _, known = _setup_ssh(sshd_server, tmp_path)
    entry = HostEntry("cn0001", "127.0.0.2", sshd_server.user, sshd_server.port, str(sshd_server.user_key))
    make = ssh_transport_factory(known_hosts=known, ssh_config=None)
    marker = f"ibfab-test-{os.getpid()}-{time.monotonic_ns()}"
    start = time.monotonic()
    # A stand-in server that would wait 60 s (ib_write_bw cannot listen without a device here).
    run = run_pair(
        make(entry),
        make(entry),
        make(entry),
        ["sh", "-c", f"sleep 60; echo {marker}"],
        ["false"],
        timeout=60,
        start_delay=0.5,
    )
    assert time.monotonic() - start < 20
    assert run.client.exit_code == 1 and run.cleanup is not None and run.cleanup.ok
    assert run.server.exit_code != 0 and marker not in run.server.stdout
    assert not any(
        marker.encode() in (p / "cmdline").read_bytes()
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and (p / "cmdline").exists()
    )


@pytest.mark.sshd
def test_unreachable_host_stops_the_sweep_before_it_starts(sshd_server: Sshd, tmp_path: Path) -> None:
    topo, inventory, known = _setup_ssh(sshd_server, tmp_path)
    text = inventory.read_text().replace(f"port={sshd_server.port}", "port=1", 1)
    inventory.write_text(text)
    res = CliRunner().invoke(
        main,
        ["sweep", "run", "--input", str(topo), "--inventory", str(inventory), "--known-hosts", str(known)],
    )
    assert res.exit_code == 7 and "sweep cannot start: cn0001 unreachable" in res.output
    assert res.output.count("\n") == 1


@pytest.mark.sshd
def test_sweep_run_takes_the_shared_ssh_options(sshd_server: Sshd, tmp_path: Path) -> None:
    # The inventory names no key: --identity supplies it, as for discover/counters/hosts.
    topo, inventory, known = _setup_ssh(sshd_server, tmp_path)
    inventory.write_text(inventory.read_text().replace(f" key_file={sshd_server.user_key}", ""))
    args = ["sweep", "run", "--input", str(topo), "--inventory", str(inventory), "--known-hosts", str(known)]
    res = CliRunner().invoke(
        main, [*args, "--identity", str(sshd_server.user_key), "--timeout", "20", "--json"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["backend"] == "ssh" and doc["results"]
    # SSH worked on every host; the pairs fail only because no RDMA device exists here.
    assert all("Did not detect devices" in (r["error"] or "") for r in doc["results"])
    hosts = CliRunner().invoke(
        main,
        [
            "hosts",
            "run",
            "-i",
            str(inventory),
            "--known-hosts",
            str(known),
            "--identity",
            str(sshd_server.user_key),
            "--",
            "echo",
            "hi",
        ],
    )
    assert hosts.exit_code == 0, hosts.output
    assert "cn[0001-0004]" in hosts.output and "hi" in hosts.output


def test_progress_bar_on_a_terminal_and_lines_otherwise() -> None:
    from click.testing import CliRunner

    from fabric.cli.sweep import ProgressLine
    from probes.sweep import SweepStep

    @click.command()
    @click.option("--tty", is_flag=True)
    def show(tty: bool) -> None:
        p = ProgressLine(tty)
        p(SweepStep(1, 4, 10, 40, 0, "round 1/4: 10 pairs, 0 failed"))
        p(SweepStep(4, 4, 40, 40, 2, "round 4/4: 10 pairs, 2 failed"))
        p.done()

    bar = CliRunner().invoke(show, ["--tty"]).stderr
    assert "\r[#######-----------------------] round 1/4  10/40 pairs  0 failed" in bar
    assert "\r[" + "#" * 30 + "] round 4/4  40/40 pairs  2 failed" in bar and bar.endswith("\n")
    lines = CliRunner().invoke(show).stderr.splitlines()
    assert lines == ["sweep: round 1/4: 10 pairs, 0 failed", "sweep: round 4/4: 10 pairs, 2 failed"]
