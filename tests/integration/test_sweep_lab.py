"""Sweeps end to end: lab fabrics with planted bad links (simulated traffic), and the SSH backend
against a real sshd on loopback (the real ib_write_bw, which finds no RDMA device here)."""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from fabric.app.session import Session, StoreAccess
from fabric.app.source import Source
from fabric.app.sweeps import sweep as sweeps
from fabric.cli.main import main
from fabric.lab import simulator as lab
from probes.inventory import HostEntry
from probes.ssh import ssh_transport_factory
from probes.sweep import LabTrafficBackend, run_pair, run_sweep
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
def test_planted_degraded_spine_link_is_the_one_suspect_through_the_cli(degraded_lab: str) -> None:
    res = CliRunner().invoke(main, ["sweep", "run", "--lab", degraded_lab, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["backend"] == "lab-simulated"
    assert all(r["backend"] == "lab-simulated" for r in doc["results"])
    assert [_end_names(s) for s in doc["suspects"]] == [{"spine-01/1", "leaf-su01-r0/5"}]
    assert doc["suspects"][0]["score"] == 1.0 and doc["tie"] == [] and doc["unexplained"] == []
    slow = [r for r in doc["results"] if r["gbps"] < 150]
    # 1x HDR = 50 Gb/s against 4x HDR = 200 Gb/s for the healthy pairs (ibsim trains NDR at HDR);
    # the route should give 200 (its peers' rate), so every such pair is stored as not ok.
    assert slow and all(r["gbps"] == pytest.approx(50 * 0.97) for r in slow)
    assert all(not r["ok"] and r["expected_gbps"] == 200.0 and r["error"].startswith("slow: ") for r in slow)
    assert all(r["ok"] for r in doc["results"] if r["gbps"] >= 150)
    # Re-tests went down to one probe at a time. The sweep alone ties the cable with the host
    # cables of its slow pairs; discovery splits the tie: only it trains below its peers, at a
    # rate that explains what the slow pairs measured.
    assert doc["retest_passes"] >= 1
    assert "it trains at 1xHDR where its peers give 200 Gb/s" in doc["suspects"][0]["reason"]
    assert doc["plan"]["coverage"]["cables_covered"] == doc["plan"]["coverage"]["cables_total"] == 64
    # Stored: show ranks the same link alone from the stored routes and verdicts.
    shown = CliRunner().invoke(main, ["sweep", "show", str(doc["sweep_id"]), "--json"])
    assert shown.exit_code == 0, shown.output
    stored = json.loads(shown.stdout)
    assert [_end_names(s) for s in stored["suspects"]] == [{"spine-01/1", "leaf-su01-r0/5"}]
    assert stored["followup_probes"] == doc["followup_probes"] and stored["tie"] == []
    assert not any(r["ok"] for r in stored["results"] if r["gbps"] is not None and r["gbps"] < 150)
    text = CliRunner().invoke(main, ["sweep", "show"]).stdout
    assert "re-tests: " in text and "spine-01/1" in text and "tie remains" not in text


@pytest.mark.lab
def test_error_rate_on_a_spine_port_is_the_one_suspect_in_its_direction(healthy_lab: str) -> None:
    ctx = sweeps.prepare(Session(Source.lab(healthy_lab)), "rail-pairs")  # discover before the drops start
    lab.set_error_rate(healthy_lab, "spine-01", 30, port=1)
    try:
        outcome = sweeps.run_lab(ctx, Session(Source.lab(healthy_lab)))
    finally:
        lab.set_error_rate(healthy_lab, "spine-01", 0, port=1)
    names = sweeps.names_of(ctx.discovery)
    assert len(outcome.suspects) == 1 and outcome.tie == [] and outcome.unexplained == []
    top = outcome.suspects[0]
    assert {names[top.link.a.guid], names[top.link.b.guid]} == {"spine-01", "leaf-su01-r0"}
    assert (
        top.direction is not None and names[top.direction] == "leaf-su01-r0"
    )  # the drops are of data entering spine-01
    assert outcome.retest_passes >= 1 and outcome.followup_probes >= 1


@pytest.mark.lab
def test_an_uplink_tied_with_a_host_cable_is_split_by_follow_ups(healthy_lab: str) -> None:
    # leaf-su02-r1 port 5 (from spine-01 port 10) drops 40 % of what arrives: with OpenSM's routes
    # every slow pair of the sweep also ends on one host's HCA, so the uplink and that host cable
    # tie on the sweep alone, and discovery sees nothing wrong with either. A follow-up between
    # two hosts of leaf-su02-r1 crosses the host cable without the uplink.
    ctx = sweeps.prepare(Session(Source.lab(healthy_lab)), "rail-pairs")
    lab.set_error_rate(healthy_lab, "leaf-su02-r1", 40, port=5)
    try:
        sweep_only = run_sweep(ctx.plan, _lab_backend(ctx, healthy_lab))
        outcome = sweeps.run_lab(ctx, Session(Source.lab(healthy_lab)))
    finally:
        lab.set_error_rate(healthy_lab, "leaf-su02-r1", 0, port=5)
    names = sweeps.names_of(ctx.discovery)
    assert len(sweep_only.tie) >= 2 and sweep_only.followup_probes == 0  # no routes given: no follow-up
    assert any(
        {names[s.link.a.guid], names[s.link.b.guid]} == {"spine-01", "leaf-su02-r1"} for s in sweep_only.tie
    )
    assert len(outcome.suspects) == 1 and outcome.tie == [] and outcome.followup_probes >= 1
    top = outcome.suspects[0]
    assert {names[top.link.a.guid], names[top.link.b.guid]} == {"spine-01", "leaf-su02-r1"}
    assert {top.link.a.port, top.link.b.port} == {10, 5}
    assert top.direction is not None and names[top.direction] == "spine-01"
    # The host cables that tied with it were cleared by fast follow-up pairs.
    cleared = {s.link.key for s in sweep_only.tie} - {top.link.key}
    fast = {lk.key for r in outcome.results if r.ok for lk in outcome.paths.get(r.key, ())}
    assert cleared and cleared <= fast


@pytest.mark.lab
def test_discovery_splits_a_tie_with_a_cable_below_its_peers() -> None:
    # The same tie with spine-01 port 10 trained at 1x: discovery knows that cable is below its
    # peers and its 1x rate is exactly what the slow pairs measured, so no follow-up is needed.
    lab.up("rail-small", ["degraded-width:spine-01:10"], name="sweeptie")
    try:
        ctx = sweeps.prepare(Session(Source.lab("sweeptie")), "rail-pairs")
        outcome = run_sweep(ctx.plan, _lab_backend(ctx, "sweeptie"))  # no routes: no follow-up
    finally:
        lab.down("sweeptie")
    names = sweeps.names_of(ctx.discovery)
    assert len(outcome.suspects) == 1 and outcome.tie == [] and outcome.followup_probes == 0
    top = outcome.suspects[0]
    assert {f"{names[top.link.a.guid]}/{top.link.a.port}", f"{names[top.link.b.guid]}/{top.link.b.port}"} == {
        "spine-01/10",
        "leaf-su02-r1/5",
    }
    assert "trains at 1xHDR where its peers give 200 Gb/s, which explains the slow pairs" in top.reason


def _lab_backend(ctx: sweeps.SweepContext, name: str) -> LabTrafficBackend:
    from probes.labtraffic import parse_error_rates

    rates = parse_error_rates(lab.console(name, "Dump"))
    return LabTrafficBackend(ctx.discovery.fabric, ctx.plan.paths, rates)


# -- each fault kind alone, and the same fabrics clean -----------------------------------------------
@pytest.mark.lab
@pytest.mark.parametrize(
    ("preset", "fault", "pattern", "ends"),
    [
        ("rail-small", "degraded-width:spine-01:3", "rail-pairs", {"spine-01/3", "leaf-su01-r2/5"}),
        ("rail-small", "degraded-speed:spine-02:6", "pairwise", None),
        ("rail-small", "degraded-width:leaf-su02-r3:2", "leaf-pairs", None),
        ("fattree-small", "degraded-width:leaf-01:3", "leaf-pairs", {"leaf-01/3", "cn0003 mlx5_0/1"}),
    ],
)
def test_a_degraded_cable_alone_is_the_only_suspect(
    preset: str, fault: str, pattern: str, ends: set[str] | None
) -> None:
    lab.up(preset, [fault], name="sweepkind")
    try:
        ctx = sweeps.prepare(Session(Source.lab("sweepkind")), pattern)
        outcome = sweeps.run_lab(ctx, Session(Source.lab("sweepkind")))
    finally:
        lab.down("sweepkind")
    names = sweeps.names_of(ctx.discovery)
    planted = list(ctx.plan.design_gbps)
    assert len(planted) == 1, "discovery sees the one degraded cable below its peers"
    assert [s.link.key for s in outcome.suspects] == planted
    assert outcome.tie == [] and outcome.unexplained == []
    if ends is not None:
        s = outcome.suspects[0]
        assert {f"{names[s.link.a.guid]}/{s.link.a.port}", f"{names[s.link.b.guid]}/{s.link.b.port}"} == ends


@pytest.mark.lab
def test_a_tie_no_probe_can_split_is_reported_as_one() -> None:
    # core-01 has eight cables to spine-su01-01 and eight to spine-su02-01, and OpenSM routes a
    # destination in by port 1 and out by port 9 alike: every pair crossing core-01/1 (dropping
    # 30 % of what arrives) also crosses core-01/9, whatever follow-up is tried, and discovery
    # sees nothing wrong with either. The sweep says so instead of guessing.
    lab.up("rail-3tier", (), name="sweeptie3")
    try:
        ctx = sweeps.prepare(Session(Source.lab("sweeptie3")), "pairwise")
        lab.set_error_rate("sweeptie3", "core-01", 30, port=1)
        outcome = sweeps.run_lab(ctx, Session(Source.lab("sweeptie3")))
    finally:
        lab.down("sweeptie3")
    names = sweeps.names_of(ctx.discovery)
    core = next(g for g, n in names.items() if n == "core-01")
    planted = next(lk.key for lk in ctx.discovery.fabric.links if (core, 1) in lk.key)
    assert outcome.followup_probes >= 1 and outcome.unexplained == []
    assert [s.link.key for s in outcome.suspects] == [s.link.key for s in outcome.tie]
    assert planted in {s.link.key for s in outcome.tie} and len(outcome.tie) == 2
    assert all("core-01" in (names[s.link.a.guid], names[s.link.b.guid]) for s in outcome.tie)
    from fabric.present.sweep import render_verdict

    text = render_verdict(
        outcome.results,
        retest_passes=outcome.retest_passes,
        followup_probes=outcome.followup_probes,
        efficiency=outcome.efficiency,
        tie=outcome.tie,
        unexplained=outcome.unexplained,
        names=names,
    )
    assert "tie remains between spine-su01-01/9 - core-01/1 and spine-su02-01/9 - core-01/9" in text


@pytest.mark.lab
@pytest.mark.parametrize(
    "fault", ["miswire:dgx-0002:1:2", "missing-link:spine-01:1", "missing-hca:dgx-0003:4"]
)
def test_faults_a_sweep_cannot_see_leave_it_quiet(fault: str) -> None:
    # Wrong or missing cabling is discovery's to report; the routes go around it, so every pair
    # gets what its route should give and no cable is suspected.
    lab.up("rail-small", [fault], name="sweepquiet")
    try:
        quiet = Session(Source.lab("sweepquiet"))
        outcomes = [sweeps.run_lab(sweeps.prepare(quiet, p), quiet) for p in _PATTERNS]
    finally:
        lab.down("sweepquiet")
    for o in outcomes:
        assert all(r.ok for r in o.results) and o.suspects == () and o.retest_passes == 0


_PATTERNS = ("rail-pairs", "pairwise", "leaf-pairs")


@pytest.mark.lab
@pytest.mark.parametrize("preset", ["rail-small", "rail-3tier", "fattree-small"])
def test_clean_fabrics_give_no_slow_pair_and_no_suspect_for_every_pattern(
    preset: str, tmp_path: Path
) -> None:
    lab.up(preset, (), name="sweepclean")
    try:
        contexts = [sweeps.prepare(Session(Source.lab("sweepclean")), p) for p in _PATTERNS]
        hosts = sorted({e.host for p in contexts[0].plan.probes for e in (p.client, p.server)})
        pairs = tmp_path / "pairs.txt"
        pairs.write_text("".join(f"{a} {b}\n" for a, b in itertools.pairwise(hosts)))
        contexts.append(sweeps.prepare(Session(Source.lab("sweepclean")), "custom", pairs_path=str(pairs)))
        outcomes = [sweeps.run_lab(ctx, Session(Source.lab("sweepclean"))) for ctx in contexts]
    finally:
        lab.down("sweepclean")
    for ctx, o in zip(contexts, outcomes, strict=True):
        assert ctx.plan.design_gbps == {}
        assert o.results and all(r.ok for r in o.results), ctx.plan.pattern
        assert o.suspects == () and o.retest_passes == 0 and o.followup_probes == 0, ctx.plan.pattern
        assert all(r.expected_gbps for r in o.results)


@pytest.mark.lab
def test_a_1024_hca_clean_fabric_pairwise_is_quiet_and_stored_ok() -> None:
    # The pattern's own contention (up to 512 pairs a round over 16 spines) is expected, not slow.
    lab.up("superpod-4su", (), name="sweepbig")
    try:
        res = CliRunner().invoke(
            main, ["sweep", "run", "--lab", "sweepbig", "--pattern", "pairwise", "--json"]
        )
    finally:
        lab.down("sweepbig")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert len(doc["results"]) == 65024 and doc["suspects"] == [] and doc["retest_passes"] == 0
    assert all(r["ok"] for r in doc["results"])
    shared = [r for r in doc["results"] if r["expected_gbps"] < r["line_rate_gbps"]]
    assert shared, "some pairs of a round share a cable: they are expected at a share of it"


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
    ctx = sweeps.prepare(Session(sweeps.sweep_source(None, str(topo))), "pairwise")
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
    sweep_id = sweeps.save(outcome, ctx.source, None, StoreAccess.at())
    shown = sweeps.show(sweep_id, StoreAccess.at())
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
