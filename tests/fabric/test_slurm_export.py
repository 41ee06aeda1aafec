"""The Slurm topology.conf export, loaded by a real slurmctld (Debian, 22.05) and read back with
``scontrol show topology``: switch names, levels, node sets and children must be what was written."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fabric.exports.slurm import topology_conf
from fabric.exports.tree import SchedulerTree, build_tree
from probes.inventory import expand_hosts
from tests.conftest import REALDATA
from tests.servers import free_port
from topology.classify import classify
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover, read_ibnetdiscover

pytestmark = pytest.mark.skipif(
    not (shutil.which("slurmctld") or Path("/usr/sbin/slurmctld").exists()) or not shutil.which("scontrol"),
    reason="slurmctld/scontrol not installed",
)
SLURMCTLD = shutil.which("slurmctld") or "/usr/sbin/slurmctld"


Switches = dict[str, tuple[int, frozenset[str], frozenset[str]]]


def parse_scontrol_topology(text: str) -> Switches:
    """name -> (level, nodes, child switches) from ``scontrol show topology``."""
    out: Switches = {}
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "SwitchName" not in fields:
            continue
        nodes = frozenset(expand_hosts(fields["Nodes"])) if fields.get("Nodes") else frozenset()
        kids = frozenset(expand_hosts(fields["Switches"])) if fields.get("Switches") else frozenset()
        out[fields["SwitchName"]] = (int(fields["Level"]), nodes, kids)
    return out


@pytest.fixture
def slurmctld(tmp_path: Path) -> Iterator[Callable[[str, list[str]], str]]:
    """start(topology_conf_text, node_names) -> ``scontrol show topology`` output."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(topology: str, nodes: list[str]) -> str:
        d = tmp_path / "slurm"
        (d / "state").mkdir(parents=True)
        (d / "spool").mkdir()
        (d / "topology.conf").write_text(topology)
        lines = [
            "ClusterName=ibfabtest",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={free_port()}",
            "AuthType=auth/none",
            "CredType=cred/none",
            "SlurmUser=root",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool'}",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}",
            f"SlurmctldLogFile={d / 'slurmctld.log'}",
            "TopologyPlugin=topology/tree",
            "SelectType=select/cons_tres",
            "ReturnToService=2",
        ]
        lines += [
            f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN" for n in nodes
        ]
        lines.append("PartitionName=all Nodes=ALL Default=YES State=UP")
        conf = d / "slurm.conf"
        conf.write_text("\n".join(lines) + "\n")
        env = {**os.environ, "SLURM_CONF": str(conf)}
        proc = subprocess.Popen(
            [SLURMCTLD, "-D", "-c"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        procs.append(proc)
        deadline = time.monotonic() + 30
        last = ""
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log = (d / "slurmctld.log").read_text() if (d / "slurmctld.log").exists() else ""
                pytest.fail(f"slurmctld exited {proc.returncode}: {log[-2000:]}")
            res = subprocess.run(
                ["scontrol", "show", "topology"], env=env, capture_output=True, text=True, timeout=20
            )
            if res.returncode == 0 and "SwitchName=" in res.stdout:
                return res.stdout
            last = res.stderr
            time.sleep(0.3)
        pytest.fail(f"slurmctld did not answer: {last}")

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _expected(tree: SchedulerTree) -> Switches:
    below: dict[str, frozenset[str]] = {}
    out: Switches = {}
    for level in tree.levels:
        for sw in level:
            nodes = (
                frozenset(sw.nodes) if sw.level == 0 else frozenset().union(*(below[c] for c in sw.children))
            )
            below[sw.name] = nodes
            out[sw.name] = (sw.level, nodes, frozenset(sw.children))
    return out


def _check(tree: SchedulerTree, read_back: str) -> Switches:
    got = parse_scontrol_topology(read_back)
    assert got == _expected(tree)
    return got


@pytest.mark.parametrize(
    "spec",
    [
        "superpod-4su",
        "rail-3tier",
        "fattree-small",
        "leafspine:leaves=16,hosts=4,directors=4,pods=8,fabric_boards=4",
    ],
)
def test_generated_fabrics_load_in_slurmctld(spec: str, slurmctld: Callable[[str, list[str]], str]) -> None:
    fabric = parse_ibnetdiscover(to_ibnetdiscover(generate(spec)).splitlines(), spec)
    cls = classify(fabric)
    tree = build_tree(fabric, cls)
    got = _check(tree, slurmctld(topology_conf(tree).text, list(tree.host_switch)))
    if spec == "superpod-4su":
        assert got["su01"] == (0, frozenset(expand_hosts("dgx-[0001-0032]")), frozenset())
        assert got["spine-01"][0] == 1 and got["spine-01"][2] == {"su01", "su02", "su03", "su04"}
        assert len(got["spine-16"][1]) == 128
    if spec == "rail-3tier":
        assert {name: lv for name, (lv, _, _) in got.items() if lv == 2} == {"core-01": 2, "core-02": 2}
    if "directors" in spec:  # leaves under their pods, pods under each whole director
        assert got["pod03"] == (
            1,
            frozenset(expand_hosts("cn[0017-0024]")),
            frozenset({"leaf-05", "leaf-06"}),
        )
        assert got["director-02"][0] == 2 and len(got["director-02"][1]) == 64


REAL = REALDATA / "ibnetdiscover"


@pytest.mark.skipif(not (REAL / "topograph-dgx-ndr-superpod-622nodes.txt").exists(), reason="capture missing")
def test_superpod_capture_loads_in_slurmctld(slurmctld: Callable[[str, list[str]], str]) -> None:
    fabric = read_ibnetdiscover(REAL / "topograph-dgx-ndr-superpod-622nodes.txt")
    cls = classify(fabric)
    tree = build_tree(fabric, cls)
    got = _check(tree, slurmctld(topology_conf(tree).text, list(tree.host_switch)))
    assert sorted(n for n, (lv, _, _) in got.items() if lv == 0) == [f"su0{i}" for i in range(1, 9)]
    assert got["su03"][1] == frozenset(expand_hosts("a07-p1-dgx-03-c[01-18]"))
    assert len([n for n, (lv, _, _) in got.items() if lv == 1]) == 9  # A10/B10 IBSPINE-01..09
    # The UFM server (two HCAs off the rails of unit 8's leaves) is a service host: no node of Slurm's.
    assert "B11-P1-CUFM-02" not in {h for _, hosts, _ in got.values() for h in hosts}


@pytest.mark.skipif(
    not (REAL / "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt").exists(), reason="capture missing"
)
def test_selene_capture_loads_in_slurmctld(slurmctld: Callable[[str, list[str]], str]) -> None:
    fabric = read_ibnetdiscover(REAL / "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt")
    cls = classify(fabric)
    tree = build_tree(fabric, cls)
    got = _check(tree, slurmctld(topology_conf(tree).text, list(tree.host_switch)))
    levels = {lv for lv, _, _ in got.values()}
    assert levels == {0, 1, 2}
    # Each DGX has its storage ports mlx5_4/mlx5_10 on the two leaves of a leaf pair (two rails):
    # the pair is the unit, SLG01-01 + SLG01-02 serve luna-0001..0024.
    assert got["su01"] == (0, frozenset(expand_hosts("luna-[0001-0024]")), frozenset())
    assert all(n.startswith("SSPINE") for n, (lv, _, _) in got.items() if lv == 1)
    # The four leaves of the third pod that have no hosts left (SLG03-09..12) are leaves, not
    # cores: only the 32 cores sit on top.
    top = {n for n, (lv, _, _) in got.items() if lv == 2}
    assert all(n.startswith("SCORE") for n in top)
    assert len(top) == 32
    # Under every core: the 458 DGX nodes; the storage appliances and service hosts are left out.
    assert got["SCORE2-007"][1] == frozenset(h for h in cls.hosts if h.startswith("luna-"))
