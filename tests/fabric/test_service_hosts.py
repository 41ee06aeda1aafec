"""Compute by default: no service host in a placement, an export or a sweep plan unless
``--include-service``; what was left out counted in one stderr line; and a job that fits under one
spine group is placed under one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.placement import LeftOut, host_sites, place
from fabric.present.placement import left_out_line
from probes.inventory import expand_hosts
from probes.plan import endpoints, plan_sweep
from topology.classify import Classification, classify
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric, Guid, Link, Node, NodeKind, PortRef

SPEC = "rail-small:service=1,ufm=1"  # 8 DGX; login-01, storage-01 on svc-leaf-01; ufm-01
SERVICE = {"login-01", "storage-01", "ufm-01"}


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("svc") / "fabric.topo"
    path.write_text(to_ibnetdiscover(generate(SPEC)))
    return path


def _run(*args: str) -> tuple[str, str]:
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return r.stdout, r.stderr


def _names(text: str) -> set[str]:
    """The hosts an output gives a job or a probe (in JSON: its hosts or probes, not its list
    of what was left out)."""
    if text.startswith("{"):
        doc = json.loads(text)
        if "probes" in doc:
            text = " ".join(f"{p['client']} {p['server']}" for p in doc["probes"])
        else:
            text = " ".join(h if isinstance(h, str) else h["host"] for h in doc["hosts"])
    words = set()
    for token in text.replace("/", " ").replace(":", " ").split():
        _, eq, value = token.partition("Nodes=")  # topology.conf folds its host lists
        words.update(expand_hosts(value) if eq else [token])
    return words & (SERVICE | {f"dgx-{i:04d}" for i in range(1, 9)})


LEFT = "left out: 3 service hosts (login-01,storage-01,ufm-01); --include-service adds the service hosts"


@pytest.mark.parametrize(
    "command",
    [
        ("place", "--nodes", "8"),
        ("place", "--nodes", "8", "--format", "json"),
        ("export", "slurm-topology"),
        ("export", "slurm-topology", "--plugin", "block"),
        ("export", "k8s-labels"),
        ("export", "hostfile"),
        ("export", "json"),
        ("sweep", "plan", "--pattern", "rail-pairs", "--json"),
        ("sweep", "plan", "--pattern", "pairwise", "--json"),
    ],
    ids=lambda c: " ".join(c),
)
def test_no_service_host_unless_asked(topo: Path, command: tuple[str, ...]) -> None:
    out, err = _run(*command, "--input", str(topo))
    assert _names(out) == {f"dgx-{i:04d}" for i in range(1, 9)}
    assert LEFT in err.splitlines()
    out, err = _run(*command, "--input", str(topo), "--include-service")
    if command[0] == "place":  # 8 of 11 hosts: the 8 DGX still pack best; 11 takes them all
        out, err = _run(*command[:2], "11", *command[3:], "--input", str(topo), "--include-service")
    assert _names(out) >= SERVICE
    assert "service host" not in err


def test_place_without_service_hosts_is_short_of_hosts(topo: Path) -> None:
    r = CliRunner().invoke(main, ["place", "--nodes", "9", "--input", str(topo)])
    assert r.exit_code == 2 and "only 8 free compute hosts" in r.output


def test_place_names_a_free_service_host_once(topo: Path, tmp_path: Path) -> None:
    free = tmp_path / "free"
    free.write_text("dgx-[0001-0004]\nlogin-01\n")
    _, err = _run("place", "--nodes", "4", "--free", str(free), "--input", str(topo))
    assert "not a compute host" not in err and "login-01" in err  # counted as a service host
    assert sum("left out:" in ln for ln in err.splitlines()) == 1


def test_scheduler_json_and_placement_json_list_roles(topo: Path) -> None:
    out, _ = _run("export", "json", "--input", str(topo), "--include-service")
    roles = {h["host"]: h["role"] for h in json.loads(out)["hosts"]}
    assert {h for h, r in roles.items() if r == "service"} == SERVICE
    assert len([r for r in roles.values() if r == "compute"]) == 8
    out, _ = _run("place", "--nodes", "11", "--format", "json", "--input", str(topo), "--include-service")
    roles = json.loads(out)["roles"]
    assert {h for h, r in roles.items() if r == "service"} == SERVICE and len(roles) == 11


def test_sweep_plan_probe_ends_and_bound() -> None:
    """A rail-pairs plan pairs GPU nodes with GPU nodes only: the storage node's two adapters on
    one leaf never set the round bound."""
    fabric = parse_ibnetdiscover(to_ibnetdiscover(generate(SPEC)).splitlines(), SPEC)
    cls = classify(fabric)
    hosts = {e.host for e in endpoints(fabric, cls)}
    assert hosts == {f"dgx-{i:04d}" for i in range(1, 9)}
    assert {e.host for e in endpoints(fabric, cls, include_service=True)} >= SERVICE
    plan = plan_sweep(fabric, cls, "rail-pairs")
    assert {e.host for p in plan.probes for e in (p.client, p.server)} <= hosts
    clean = plan_sweep(*_fabric("rail-small"), "rail-pairs")
    assert (plan.rounds, plan.lower_bound) == (clean.rounds, clean.lower_bound)


def _fabric(spec: str) -> tuple[Fabric, Classification]:
    f = parse_ibnetdiscover(to_ibnetdiscover(generate(spec)).splitlines(), spec)
    return f, classify(f)


def test_left_out_is_one_line_never_one_per_node() -> None:
    items = [
        LeftOut(f"Mellanox Technologies Aggregation Node (0x{i:016x})", "SHARP aggregation node")
        for i in range(666)
    ]
    items += [LeftOut(h, "service host") for h in ("login01", "ufm01", "slurm01", "cache01")]
    items += [LeftOut(f"MT4129 (0x{i:016x})", "HCA without a host name") for i in range(12)]
    assert left_out_line(items) == (
        "left out: 666 aggregation nodes, 4 service hosts (cache01,login01,slurm01,ufm01), 12 unnamed HCAs; "
        "--include-service adds the service hosts"
    )
    many = [LeftOut(f"storage-node-{i:03d}-of-the-cluster-{i}", "service host") for i in range(40)]
    line = left_out_line(many)
    assert (
        line is not None and line.startswith("left out: 40 service hosts (storage-node-000") and "..." in line
    )
    assert left_out_line([]) is None


# -- the tier above the leaves ---------------------------------------------------------------------
def _pods_fabric() -> Fabric:
    """Two spine groups under two cores. Group A: unit a (4 hosts on leaves A1+A2) and unit b
    (4 hosts over A3, A4, A5); group B: unit c (7 hosts on B1+B2). Every host has two HCAs on two
    leaves of its unit."""
    nodes: list[Node] = []
    links: list[Link] = []
    guid = iter(range(1, 10_000))
    ports: dict[str, int] = {}
    ids: dict[str, Guid] = {}

    def switch(name: str) -> None:
        ids[name] = Guid(f"0x{next(guid):016x}")
        nodes.append(Node(ids[name], NodeKind.SWITCH, f"MF0;{name}:MQM8700/U1", 40))

    def cable(a: str, b: str) -> None:
        for x in (a, b):
            ports[x] = ports.get(x, 0) + 1
        links.append(Link(PortRef(ids[a], ports[a]), PortRef(ids[b], ports[b]), 4, "HDR"))

    for name in ("A1", "A2", "A3", "A4", "A5", "B1", "B2", "sA1", "sA2", "sB1", "sB2", "c1", "c2"):
        switch(name)
    for leaf in ("A1", "A2", "A3", "A4", "A5"):
        cable(leaf, "sA1")
        cable(leaf, "sA2")
    for leaf in ("B1", "B2"):
        cable(leaf, "sB1")
        cable(leaf, "sB2")
    for spine in ("sA1", "sA2", "sB1", "sB2"):
        cable(spine, "c1")
        cable(spine, "c2")
    homes = [("A1", "A2")] * 4 + [("A3", "A4"), ("A4", "A5"), ("A3", "A5"), ("A3", "A4")] + [("B1", "B2")] * 7
    for h, pair in enumerate(homes, 1):
        for i, leaf in enumerate(pair):
            name = f"h{h:02d}/{i}"
            ids[name] = Guid(f"0x{0x1000 + next(guid):016x}")
            nodes.append(Node(ids[name], NodeKind.HCA, f"h{h:02d} mlx5_{i}", 1))
            cable(name, leaf)
    return Fabric.build(nodes, links, source="two spine groups")


def test_a_job_that_fits_one_spine_group_is_not_spread_over_two() -> None:
    fabric = _pods_fabric()
    cls = classify(fabric)
    sites = host_sites(fabric, cls)
    assert sites.pods == 2
    p = place(fabric, cls, 8)
    # unit c (7 hosts, 2 leaves) + 1 of unit a would be 2 units on 4 leaves, across the cores;
    # units a + b are 2 units on 5 leaves under the same spines.
    assert set(p.hosts) == {f"h{i:02d}" for i in range(1, 9)}
    assert (p.cost.spine_groups, p.cost.spine_groups_min) == (1, 1)
    # 12 hosts fit no single group: both groups, and said so
    p = place(fabric, cls, 12)
    assert (p.cost.spine_groups, p.cost.spine_groups_min) == (2, 2)


def test_demo_checks_roles_against_its_design() -> None:
    """The demo's discovery step: roles as planted on its own design (the lab runs the same
    cabling), and a miss said so when they are not."""
    from fabric.app.discovery.discover import analyse
    from fabric.app.lab.demo import DEMO_FAULTS, DEMO_SPEC, roles_as_planted

    design = generate(DEMO_SPEC, DEMO_FAULTS)
    d = analyse(parse_ibnetdiscover(to_ibnetdiscover(design).splitlines(), DEMO_SPEC))
    ok, words = roles_as_planted(design, d)
    assert ok, words
    assert words.startswith("hosts by role as planted: 8 compute, 2 service (login-01, storage-01)")
    assert d.classification.host_roles["dgx-0003"].rule.value == "fewer_hcas"  # missing-hca: compute
    other = analyse(parse_ibnetdiscover(to_ibnetdiscover(generate("rail-small")).splitlines(), "x"))
    ok, words = roles_as_planted(design, other)
    assert not ok and words.startswith("MISSED: roles not as planted for login-01, storage-01")


def test_nccl_advice_reads_the_compute_hosts_only() -> None:
    """A UFM server's two adapters sit on the leaves of rails 1 and 0: the GPU nodes' rails are
    still strict (NCCL_CROSS_NIC=0 holds for them) and NCCL_IB_HCA lists their adapters."""
    from fabric.advise.routing_advice import rail_adapters, strictly_rail_optimized

    fabric, cls = _fabric("rail-small:ufm=1")
    assert cls.is_service_host("ufm-01")
    assert strictly_rail_optimized(fabric, cls)
    assert rail_adapters(cls) == [f"mlx5_{i}" for i in range(8)]
