"""Exports over every real ibnetdiscover capture and generated fabrics: every compute host exactly
once, the non-compute HCAs left out and listed, labels valid, Kueue levels in label order."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.exports.hostfile import hostfile
from fabric.exports.json import scheduler_document
from fabric.exports.k8s import fnv1a_64, is_label_value, k8s_labels, label_keys, label_value, node_labels
from fabric.exports.kueue import kueue_topology
from fabric.exports.slurm import block_sizes, topology_conf
from fabric.exports.tree import SchedulerTree, build_tree
from fabric.placement import HostHealth, PlacementHealth, host_sites
from probes.inventory import expand_hosts
from tests.conftest import realdata_files
from topology.classify import Classification, Role, classify
from topology.errors import UsageError
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover, read_ibnetdiscover
from topology.model import Fabric

CAPTURES = realdata_files("ibnetdiscover")


def _conf_nodes(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        for field in line.split():
            if field.startswith("Nodes="):
                out += expand_hosts(field[len("Nodes=") :])
    return out


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_capture_exports_make_sense(path: Path) -> None:
    fabric = read_ibnetdiscover(path)
    cls = classify(fabric)
    tree = build_tree(fabric, cls)
    conf = topology_conf(tree)
    everyone = {h for h, gs in cls.hosts.items() if any(cls.nodes[g].leaf for g in gs)}
    service = {h for h in everyone if cls.is_service_host(h)}
    cabled = everyone - service
    nodes = _conf_nodes(conf.text)
    assert Counter(nodes) == Counter(cabled)  # every compute host exactly once, no service host
    not_hosts = sum(1 for c in cls.nodes.values() if c.role not in (Role.COMPUTE, Role.SERVICE, Role.SWITCH))
    assert len(conf.skipped) == not_hosts + len(service) + len(set(cls.hosts) - everyone)
    with_service = topology_conf(build_tree(fabric, cls, host_sites(fabric, cls, include_service=True)))
    assert Counter(_conf_nodes(with_service.text)) == Counter(everyone)
    block = topology_conf(tree, "block")
    assert Counter(_conf_nodes(block.text)) == Counter(cabled)
    labels = node_labels(tree, "both")
    assert set(labels) == cabled
    assert all(is_label_value(v) for kv in labels.values() for v in kv.values())
    doc = json.loads(json.dumps(scheduler_document(fabric, cls, tree)))
    assert {h["host"] for h in doc["hosts"]} == cabled


def _capture(name: str) -> Path:
    hits = [p for p in CAPTURES if p.name == name]
    if not hits:
        pytest.skip(f"{name} not in realdata")
    return hits[0]


def test_superpod_capture_left_out_and_units() -> None:
    fabric = read_ibnetdiscover(_capture("topograph-dgx-ndr-superpod-622nodes.txt"))
    cls = classify(fabric)
    tree = build_tree(fabric, cls)
    conf = topology_conf(tree)
    reasons = Counter(item.reason for item in conf.skipped)
    # B11-P1-CUFM-02 is the UFM server (topology.hostroles: other_shape): no scheduler's node
    assert reasons == {"HCA without a host name": 74, "SHARP aggregation node": 40, "service host": 1}
    assert "SwitchName=su03 Nodes=a07-p1-dgx-03-c[01-18]" in conf.text.splitlines()
    assert len(_conf_nodes(conf.text)) == 119 and "B11-P1-CUFM-02" not in conf.text
    doc = scheduler_document(fabric, cls, tree)
    miswired = next(h for h in doc["hosts"] if h["host"] == "b08-p1-dgx-08-c01")
    assert miswired["unit"] == "su08" and len(miswired["leaves"]) == 4  # rails of HCA indexes 0,1,4,5
    assert len(doc["hosts"][0]["spines"]) == 9


def test_selene_tree_has_leaves_under_spines_under_cores() -> None:
    fabric = read_ibnetdiscover(_capture("ufm-sdk-selene-storage-hdr-edr-1407nodes.txt"))
    cls = classify(fabric)
    tree = build_tree(fabric, cls)
    # The DGX storage ports (mlx5_4/mlx5_10) are two rails over leaf pairs: a pair is one unit.
    # The 16 storage leaves' units (AI400X appliances, cache, login, UFM: service hosts) are not
    # in it: 22 units of DGX nodes.
    assert [len(level) for level in tree.levels] == [22, 64, 32]
    assert tree.levels[0][0].name == "su01" and tree.levels[0][0].nodes[0] == "luna-0001"
    assert all(sw.name.startswith("SSPINE") for sw in tree.levels[1])
    assert all(set(sw.children) <= {s.name for s in tree.levels[0]} for sw in tree.levels[1])
    assert all(set(sw.children) <= {s.name for s in tree.levels[1]} for sw in tree.levels[2])
    keys = label_keys(tree, "tier-n")
    assert keys == [f"fabric.topograph.run/tier-{k}" for k in range(3)]


def _generated(spec: str) -> tuple[Fabric, Classification, SchedulerTree]:
    fabric = parse_ibnetdiscover(to_ibnetdiscover(generate(spec)).splitlines(), spec)
    cls = classify(fabric)
    return fabric, cls, build_tree(fabric, cls)


def test_k8s_labels_and_kueue_levels() -> None:
    _, _, tree = _generated("rail-3tier")
    health = PlacementHealth({"dgx-0002": HostHealth("critical", ("critical link leaf-su01-r1:2",))})
    text = k8s_labels(tree, "both", "kubectl", health).text.splitlines()
    assert text[0] == (
        "kubectl label node dgx-0001 --overwrite fabric.topograph.run/tier-0=su01 "
        "fabric.topograph.run/tier-1=spines-01 fabric.topograph.run/tier-2=cores-01 "
        "network.topology.nvidia.com/leaf=su01 network.topology.nvidia.com/spine=spines-01 "
        "network.topology.nvidia.com/core=cores-01 ibfab.io/health=ok"
    )
    assert text[1].endswith("ibfab.io/health=critical")
    legacy = node_labels(tree, "legacy")["dgx-0005"]
    assert legacy == {
        "network.topology.nvidia.com/leaf": "su02",
        "network.topology.nvidia.com/spine": "spines-02",
        "network.topology.nvidia.com/core": "cores-01",
    }
    yaml = kueue_topology(tree).text
    levels = [ln.split('"')[1] for ln in yaml.splitlines() if "nodeLabel" in ln]
    assert levels == [
        "fabric.topograph.run/tier-2",
        "fabric.topograph.run/tier-1",
        "fabric.topograph.run/tier-0",
        "kubernetes.io/hostname",
    ]
    assert "kind: Topology" in yaml and "apiVersion: kueue.x-k8s.io/v1alpha1" in yaml


def test_label_values() -> None:
    assert fnv1a_64("") == 0xCBF29CE484222325 and fnv1a_64("a") == 0xAF63DC4C8601EC8C
    assert label_value("MF0;leaf 01:MQM9700/U1") == "MF0-leaf-01-MQM9700-U1"
    long = label_value("s" * 70)
    assert long == f"x{fnv1a_64('s' * 70):x}" and len(long) <= 63 and is_label_value(long)
    assert not is_label_value("-bad") and not is_label_value("a" * 64) and is_label_value("")


def test_hostfile_and_block_sizes() -> None:
    assert hostfile(["a", "b"], "openmpi", 8) == "a slots=8\nb slots=8\n"
    assert hostfile(["a"], "mpich", 4) == "a:4\n"
    with pytest.raises(UsageError):
        hostfile(["a"], "lam")
    assert block_sizes([32, 32, 32, 32]) == [32, 64, 128]
    assert block_sizes([18, 10]) == [10, 20]


def test_cli_exports(tmp_path: Path) -> None:
    topo = tmp_path / "f.topo"
    topo.write_text(to_ibnetdiscover(generate("superpod-4su")))
    run = CliRunner().invoke
    r = run(main, ["export", "slurm-topology", "--input", str(topo)])
    assert r.exit_code == 0 and "SwitchName=su04 Nodes=dgx-[0097-0128]" in r.stdout
    r = run(main, ["export", "slurm-topology", "--plugin", "block", "--input", str(topo)])
    assert "BlockName=su01 Nodes=dgx-[0001-0032]" in r.stdout and "BlockSizes=32,64,128" in r.stdout
    r = run(main, ["export", "hostfile", "--style", "mpich", "--slots", "8", "--input", str(topo)])
    assert r.stdout.splitlines()[:2] == ["dgx-0001:8", "dgx-0002:8"] and len(r.stdout.splitlines()) == 128
    r = run(main, ["export", "k8s-labels", "--format", "json", "--legacy", "--input", str(topo)])
    assert json.loads(r.stdout)["nodes"]["dgx-0128"] == {
        "network.topology.nvidia.com/leaf": "su04",
        "network.topology.nvidia.com/spine": "spines-01",
    }
    r = run(main, ["export", "json", "--input", str(topo)])
    host = json.loads(r.stdout)["hosts"][0]
    assert host["leaves"] == {str(i): f"leaf-su01-r{i}" for i in range(8)} and len(host["spines"]) == 16
    r = run(main, ["export", "k8s-labels", "--health", "--input", str(topo), "--db", str(tmp_path / "no.db")])
    assert r.exit_code != 0 and r.stderr.count("\n") == 1


def test_cli_export_lists_left_out_on_stderr() -> None:
    path = _capture("topograph-dgx-ndr-superpod-622nodes.txt")
    r = CliRunner().invoke(main, ["export", "slurm-topology", "--input", str(path)])
    assert r.exit_code == 0
    # One line, never one per node (114 lines before).
    assert r.stderr.splitlines() == [
        "left out: 40 aggregation nodes, 1 service host (B11-P1-CUFM-02), 74 unnamed HCAs; "
        "--include-service adds the service hosts"
    ]
    assert "left out: " not in r.stdout
    r = CliRunner().invoke(main, ["export", "slurm-topology", "--include-service", "--input", str(path)])
    assert r.exit_code == 0 and "B11-P1-CUFM-02" in r.stdout
    assert r.stderr.splitlines() == ["left out: 40 aggregation nodes, 74 unnamed HCAs"]
