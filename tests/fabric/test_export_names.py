"""Names from the fabric never reach an export unchecked.

A crafted fabric (the generator's fat tree with some hosts' NodeDescriptions replaced by names
someone could have set) goes through every export from the command line: each name a format
cannot carry is left out of that output with one line on stderr naming it and the format, every
other host is written, and a clean fabric writes every host and says nothing.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.exports.fitnames import fitting_tree
from fabric.exports.k8s import k8s_labels
from fabric.exports.slurm import topology_conf
from fabric.exports.tree import build_tree
from probes.inventory import expand_hosts
from tests.conftest import realdata_files
from topology.cableplan import parse_cable_plan
from topology.classify import classify
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import read_ibnetdiscover
from topology.nameformats import HOSTFILE
from topology.plancheck import checked_plan_rows

SPEC = "fattree-small"  # 32 hosts cn0001..cn0032, one HCA each ("cn0001 mlx5_0")
CRAFTED = {
    "cn0001": "evil#1",
    "cn0002": "dgx-[0001-0999]",
    "cn0003": "$(reboot)",
    "cn0004": "a b c",  # names no host at all: an unnamed HCA, left out as such already
    "cn0005": "Ünï-05",
    "cn0006": "node_06",
    "cn0007": "Node07",
    "cn0008": "=cmd",
    "cn0009": "bell\x07",
    "cn0010": "x,y",
}
HOSTS = [f"cn{k:04d}" for k in range(1, 33)]
CRAFTED_HOSTS = [CRAFTED.get(h, h) for h in HOSTS if h != "cn0004"]
NOT_A_HOST_NAME = {"evil#1", "dgx-[0001-0999]", "$(reboot)", "Ünï-05", "=cmd", "bell\x07", "x,y"}
UNFIT = {
    "slurm": NOT_A_HOST_NAME,
    "hostfile": NOT_A_HOST_NAME,
    "k8s": NOT_A_HOST_NAME | {"node_06"},  # '_' is not in an RFC 1123 node name
    "plan": {"=cmd", "bell\x07"},  # CSV quotes the rest; these would be a formula or split a row
}


def _fabric(tmp_path: Path, crafted: bool) -> str:
    text = to_ibnetdiscover(generate(SPEC))
    if crafted:
        for host, name in CRAFTED.items():
            text = text.replace(f'"{host} mlx5_0"', f'"{name} mlx5_0"')
    path = tmp_path / "fabric.topo"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _run(args: list[str]) -> tuple[str, list[str]]:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    return r.stdout, r.stderr.splitlines()


def _conf_nodes(text: str) -> list[str]:
    return [
        h
        for line in text.splitlines()
        for f in line.split()
        if f.startswith("Nodes=")
        for h in expand_hosts(f[6:])
    ]


def _hostfile_hosts(text: str) -> list[str]:
    return [line.split()[0].split(":")[0] for line in text.splitlines()]


def _kubectl_hosts(text: str) -> list[str]:
    return [shlex.split(line)[3] for line in text.splitlines()]


def _plan_devices(text: str) -> set[str]:
    return {e.device for c in parse_cable_plan(text, "plan").cables for e in (c.start, c.end)}


# export, args, what the output holds (host names), the rule's key
EXPORTS = [
    ("slurm-topology tree", ["slurm-topology"], _conf_nodes, "slurm"),
    ("slurm-topology block", ["slurm-topology", "--plugin", "block"], _conf_nodes, "slurm"),
    ("hostfile openmpi", ["hostfile"], _hostfile_hosts, "hostfile"),
    ("hostfile mpich", ["hostfile", "--style", "mpich"], _hostfile_hosts, "hostfile"),
    ("k8s-labels kubectl", ["k8s-labels"], _kubectl_hosts, "k8s"),
    ("k8s-labels json", ["k8s-labels", "--format", "json"], lambda t: list(json.loads(t)["nodes"]), "k8s"),
]
OUTPUT = {"slurm": "Slurm's node names", "hostfile": "the MPI hostfile", "k8s": "Kubernetes node names"}


@pytest.mark.parametrize(("label", "args", "hosts_of", "rule"), EXPORTS, ids=[e[0] for e in EXPORTS])
def test_unfit_names_are_left_out_each_with_its_line(
    label: str, args: list[str], hosts_of: object, rule: str, tmp_path: Path
) -> None:
    out, err = _run(["export", *args, "--input", _fabric(tmp_path, crafted=True)])
    assert callable(hosts_of)
    written = hosts_of(out)
    fit = [h for h in CRAFTED_HOSTS if h not in UNFIT[rule]]
    lowered = rule == "k8s"
    assert sorted(written) == sorted(h.lower() if lowered else h for h in fit)
    for name in NOT_A_HOST_NAME | {"node_06"}:  # nothing of an unfit name reaches the output
        if name in UNFIT[rule]:
            assert name not in out and name.lower() not in out
    unfit_lines = [ln for ln in err if " left out of " in ln]
    assert sorted(unfit_lines) == sorted(
        ln for ln in unfit_lines if ln.startswith("left out: ") and f" left out of {OUTPUT[rule]}: " in ln
    )
    assert sorted(ln.split(" left out of ")[0] for ln in unfit_lines) == sorted(
        f"left out: {name!r}" for name in UNFIT[rule]
    )
    # The HCA whose description names no host is left out as an unnamed HCA, counted in the one
    # line that counts every non-candidate (fabric.present.placement.left_out_line).
    assert [ln for ln in err if ln.startswith("left out: ") and "1 unnamed HCA" in ln]
    assert "a b c" not in out


def test_topology_conf_keeps_its_lines_whole(tmp_path: Path) -> None:
    out, _ = _run(["export", "slurm-topology", "--input", _fabric(tmp_path, crafted=True)])
    for line in out.splitlines():
        if not line.startswith("#"):
            assert "#" not in line and "$" not in line and line.count("=") == 2, line


def test_cable_plan_names_unfit_nodes_by_guid(tmp_path: Path) -> None:
    path = _fabric(tmp_path, crafted=True)
    out, err = _run(["export", "plan", "--input", path])
    devices = _plan_devices(out)
    # The unnamed HCA goes by its whole NodeDescription, which a CSV cell carries.
    fit = {h for h in CRAFTED_HOSTS if h not in UNFIT["plan"]} | {"a b c mlx5_0"}
    assert {d for d in devices if not d.startswith(("0x", "leaf-", "spine-"))} == fit
    assert sum(d.startswith("0x") for d in devices) == len(UNFIT["plan"])
    assert sorted(ln.split(" left out of ")[0] for ln in err) == sorted(
        f"left out: {n!r}" for n in UNFIT["plan"]
    )
    assert all("the cable plan: " in ln and "by GUID" in ln for ln in err)
    # The plan written reads back and matches the fabric it came from.
    plan = tmp_path / "plan.csv"
    plan.write_text(out, encoding="utf-8")
    r = CliRunner().invoke(main, ["topology", "check", "--plan", str(plan), "--input", path])
    assert r.exit_code == 0, r.output
    assert "The fabric matches the plan." in r.stdout


@pytest.mark.parametrize(("label", "args", "hosts_of", "rule"), EXPORTS, ids=[e[0] for e in EXPORTS])
def test_a_clean_fabric_writes_every_host_and_says_nothing(
    label: str, args: list[str], hosts_of: object, rule: str, tmp_path: Path
) -> None:
    out, err = _run(["export", *args, "--input", _fabric(tmp_path, crafted=False)])
    # nothing left out; a hostfile says where its slots come from (here: the fabric cannot tell)
    assert [line for line in err if not line.startswith("slots: ")] == []
    assert [line.startswith("slots: 1 per host") for line in err] == ([True] if "hostfile" in args else [])
    assert callable(hosts_of) and sorted(hosts_of(out)) == HOSTS


@pytest.mark.parametrize("export", ["plan", "kueue", "json"])
def test_a_clean_fabric_says_nothing(export: str, tmp_path: Path) -> None:
    _, err = _run(["export", export, "--input", _fabric(tmp_path, crafted=False)])
    assert err == []


def test_kueue_holds_no_fabric_name(tmp_path: Path) -> None:
    out, err = _run(["export", "kueue", "--input", _fabric(tmp_path, crafted=True)])
    assert not any(name in out for name in CRAFTED.values())
    assert not [ln for ln in err if " left out of " in ln]


def test_placement_never_chooses_a_name_a_node_list_cannot_carry(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        main, ["place", "--nodes", "24", "--format", "slurm", "--input", _fabric(tmp_path, True)]
    )
    assert r.exit_code == 0, r.output
    placed = expand_hosts(r.stdout.strip())
    assert sorted(placed) == sorted(h for h in CRAFTED_HOSTS if h not in NOT_A_HOST_NAME)
    said = [
        ln for ln in r.stderr.splitlines() if "not a host name a hostfile or Slurm node list can carry" in ln
    ]
    assert sorted(ln.rsplit(": ", 1)[1] for ln in said) == sorted(repr(n) for n in NOT_A_HOST_NAME)


CAPTURES = realdata_files("ibnetdiscover")


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_real_sites_names_all_fit(path: Path) -> None:
    # No false refusal: every host name of every real capture fits every format, and its plan
    # names every node by name where the name is unique.
    fabric = read_ibnetdiscover(path)
    tree = build_tree(fabric, classify(fabric))
    for export in (topology_conf(tree), k8s_labels(tree)):
        assert export.unfit == ()
    assert fitting_tree(tree, HOSTFILE)[1] == ()
    assert checked_plan_rows(fabric)[1] == ()
