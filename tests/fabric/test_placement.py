"""Placement on generated fabrics: exact counts, free sets and exclusions respected, the optimum
found (checked by brute force over host subsets), deterministic output, ring crossings counted."""

from __future__ import annotations

import random
from collections.abc import Iterable
from functools import cache
from itertools import combinations
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabric.cli.main import main
from fabric.placement import (
    PlacementHealth,
    health_view_from_links,
    parse_host_list,
    place,
    unhealthy_hosts,
)
from probes.slurm import SlurmUnavailable
from topology.classify import Classification, classify
from topology.errors import UsageError
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric

SMALL = (
    "rail:units=3,nodes=4,hcas=2,spines=2",  # rail-optimized, 3 units of 4
    "leafspine:leaves=4,spines=2,hosts=3",  # fat tree, 4 leaves of 3
    "rail-3tier",  # 2 units of 4 with cores
)


@cache
def fabric_of(spec: str) -> tuple[Fabric, Classification]:
    fabric = parse_ibnetdiscover(to_ibnetdiscover(generate(spec)).splitlines(), spec)
    return fabric, classify(fabric)


# -- an independent model of the fabric, straight from the classification --------------------------
def units_leaves(cls: Classification, hosts: Iterable[str]) -> tuple[int, int]:
    units, leaves = set(), set()
    for h in hosts:
        for g in cls.hosts[h]:
            units.add(cls.nodes[g].group)
            leaves.add(cls.nodes[g].leaf)
    return len(units), len(leaves)


def domain_of(cls: Classification, host: str) -> object:
    if cls.rail_optimized:
        return cls.nodes[cls.hosts[host][0]].group
    return frozenset(cls.nodes[g].leaf for g in cls.hosts[host])


def brute_force(cls: Classification, free: list[str], n: int) -> tuple[tuple[int, int], int]:
    """(fewest units, then leaves) and the fewest domains over every n-subset of ``free``."""
    best = min(units_leaves(cls, c) for c in combinations(free, n))
    fewest_domains = min(len({domain_of(cls, h) for h in c}) for c in combinations(free, n))
    return best, fewest_domains


def crossings(cls: Classification, ring: tuple[str, ...]) -> int:
    d = [domain_of(cls, h) for h in ring]
    return sum(1 for i in range(len(d)) if len(d) > 1 and d[i] != d[i - 1])


@pytest.mark.parametrize("spec", SMALL)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_pack_is_optimal_on_random_free_sets(spec: str, data: st.DataObject) -> None:
    fabric, cls = fabric_of(spec)
    hosts = sorted(cls.hosts)
    free = sorted(data.draw(st.sets(st.sampled_from(hosts), min_size=1)))
    excluded = set(data.draw(st.sets(st.sampled_from(free), max_size=len(free) - 1)))
    pool = [h for h in free if h not in excluded]
    n = data.draw(st.integers(1, min(len(pool), 7)))
    p = place(fabric, cls, n, free=free, exclude={h: "test" for h in excluded})

    assert len(p.hosts) == n == len(set(p.hosts))
    assert set(p.hosts) <= set(pool)
    assert not set(p.hosts) & excluded
    (units, leaves), fewest_domains = brute_force(cls, pool, n)
    assert units_leaves(cls, p.hosts) == (units, leaves) == (p.cost.units, p.cost.leaves)
    assert (p.cost.units_min, p.cost.leaves_min) == (units, leaves)
    assert p.cost.crossings == crossings(cls, p.hosts)
    assert p.cost.crossings_min == (0 if fewest_domains == 1 else fewest_domains)
    assert p.cost.crossings == (
        0 if len({domain_of(cls, h) for h in p.hosts}) == 1 else len({domain_of(cls, h) for h in p.hosts})
    )
    reasons = {lo.name: lo.reason for lo in p.left_out}
    assert all(reasons[h] == "excluded: test" for h in excluded)
    assert all(reasons[h] == "not free" for h in hosts if h not in free)
    # same answer whatever order the free set comes in
    shuffled = list(free)
    random.Random(n).shuffle(shuffled)
    assert place(fabric, cls, n, free=shuffled, exclude={h: "test" for h in excluded}).hosts == p.hosts


@pytest.mark.parametrize("spec", SMALL)
def test_spread_uses_every_unit_it_can(spec: str) -> None:
    fabric, cls = fabric_of(spec)
    n_units = len(cls.groups)
    for n in range(1, len(cls.hosts) + 1):
        p = place(fabric, cls, n, policy="spread")
        assert len(p.hosts) == n
        assert p.cost.units == min(n, n_units) if cls.rail_optimized else p.cost.units >= 1
        assert p.cost.crossings == crossings(cls, p.hosts)


def test_fat_tree_spread_touches_every_leaf_and_pack_one() -> None:
    fabric, cls = fabric_of("leafspine:leaves=4,spines=2,hosts=3")
    spread = place(fabric, cls, 4, policy="spread")
    pack = place(fabric, cls, 3)
    assert spread.cost.leaves == 4 and spread.cost.crossings == 4
    assert pack.cost.leaves == 1 and pack.cost.crossings == 0 and pack.cost.crossings_min == 0


def test_superpod_pack_fills_whole_units_in_ring_order() -> None:
    fabric, cls = fabric_of("superpod-4su")
    free = [f"dgx-{i:04d}" for i in range(1, 129) if i % 3]  # 2/3 of each unit free
    p = place(fabric, cls, 40, free=free)
    assert (p.cost.units, p.cost.leaves) == (2, 16)
    assert p.cost.crossings == 2 == p.cost.crossings_min
    # ring: one unit's hosts together, in name order, then the other's
    su = [int(h.split("-")[1]) // 33 for h in p.hosts]
    assert su == sorted(su) and len(set(su)) == 2


def test_too_many_nodes_and_bad_policy_are_usage_errors() -> None:
    fabric, cls = fabric_of(SMALL[0])
    with pytest.raises(UsageError, match="only 2 free compute hosts"):
        place(fabric, cls, 3, free=["dgx-0001", "dgx-0002", "nope-1"])
    with pytest.raises(UsageError, match="policy"):
        place(fabric, cls, 1, policy="random")
    p = place(fabric, cls, 1, free=["dgx-0001", "nope-1"])
    assert ("nope-1", "not a compute host of this fabric") in {(lo.name, lo.reason) for lo in p.left_out}


def _host_link(fabric: Fabric, cls: Classification, host: str) -> tuple[tuple[str, int], tuple[str, int]]:
    return fabric.links_of(cls.hosts[host][1])[0].key


def test_health_view_excludes_and_names_the_worst_link() -> None:
    fabric, cls = fabric_of(SMALL[0])
    bad = _host_link(fabric, cls, "dgx-0002")  # dgx-0002 mlx5_1 on leaf-su01-r1
    view = health_view_from_links(
        fabric,
        cls,
        [(bad, "critical", ["BER 3e-12"], False), (_host_link(fabric, cls, "dgx-0003"), "watch", [], True)],
    )
    assert view.hosts["dgx-0002"].status == "critical"
    exclude = unhealthy_hosts(view)
    assert set(exclude) == {"dgx-0002", "dgx-0003"}
    assert (
        exclude["dgx-0002"].startswith("critical link leaf-su01-r1:") and "(BER 3e-12)" in exclude["dgx-0002"]
    )
    assert exclude["dgx-0003"].startswith("repeat offender")
    with_bad = place(fabric, cls, 4, free=[f"dgx-{i:04d}" for i in range(1, 5)], health=view)
    assert with_bad.cost.worst_link == "critical"
    assert any("leaf-su01-r1" in name and "dgx-0002 mlx5_1" in name for name in with_bad.cost.worst_links)
    avoided = place(fabric, cls, 4, exclude=exclude, health=view)
    assert not {"dgx-0002", "dgx-0003"} & set(avoided.hosts)
    assert avoided.cost.worst_link == "ok"
    assert place(fabric, cls, 2, health=PlacementHealth()).cost.worst_link is None


def test_free_lists() -> None:
    assert parse_host_list("dgx-[0001-0003]\n# busy\n\ndgx-0007  # spare\n", "f") == [
        "dgx-0001",
        "dgx-0002",
        "dgx-0003",
        "dgx-0007",
    ]
    with pytest.raises(UsageError, match="f:2"):
        parse_host_list("dgx-0001\ndgx-[0002-\n", "f")


def _topo_file(tmp_path: Path, spec: str) -> Path:
    path = tmp_path / "fabric.topo"
    path.write_text(to_ibnetdiscover(generate(spec)))
    return path


def test_cli_place_hostfile_slurm_and_json(tmp_path: Path) -> None:
    topo = _topo_file(tmp_path, "superpod-4su")
    free = tmp_path / "free"
    free.write_text("dgx-[0020-0070]\n")
    r = CliRunner().invoke(
        main,
        ["place", "--nodes", "40", "--free", str(free), "--input", str(topo), "--exclude", "dgx-[0033-0034]"],
    )
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    # su02 has 30 free (0035-0064), su01 13 (0020-0032): the fuller unit whole, the rest from su01
    # 8 slots: each of a DGX's 8 GPUs has its own rail HCA (the rule is said on stderr)
    want = [f"dgx-{i:04d} slots=8" for i in (*range(20, 30), *range(35, 65))]
    assert lines == want
    assert "slots: 8 per host, one rank per GPU: on this rail-optimized fabric" in r.stderr
    assert "placed 40 hosts (pack): 2 units (min 2), 16 leaves (min 16), 2 spine crossings" in r.stderr
    assert "left out (2) excluded: on the command line: dgx-[0033-0034]" in r.stderr
    r = CliRunner().invoke(
        main, ["place", "--nodes", "36", "--free", str(free), "--input", str(topo), "--format", "slurm"]
    )
    assert r.stdout.strip() == "dgx-[0020-0023,0033-0064]"  # all of su02, 4 of su01
    r = CliRunner().invoke(
        main, ["place", "--nodes", "3", "--policy", "spread", "--input", str(topo), "--format", "json"]
    )
    import json

    doc = json.loads(r.stdout)
    assert doc["hosts"] == ["dgx-0001", "dgx-0033", "dgx-0065"] and doc["cost"]["units"] == 3
    assert doc["slots"] == {"rule": "rails", "per_host": dict.fromkeys(doc["hosts"], 8)}


@pytest.mark.parametrize(
    ("spec", "args", "slots", "rule"),
    [
        ("rail-small", (), 8, "slots: 8 per host, one rank per GPU"),
        ("rail-small", ("--slots", "2"), 2, "slots: 2 per host (--slots)"),
        ("fattree-small", (), 1, "slots: 1 per host: the fabric does not say how many GPUs a host has"),
        ("rail-small:hcas=4", (), 4, "slots: 4 per host, one rank per GPU"),
    ],
)
def test_hostfile_slots_are_gpus_where_the_fabric_tells(
    tmp_path: Path, spec: str, args: tuple[str, ...], slots: int, rule: str
) -> None:
    """A hostfile's slots: the HCAs of a compute host on a rail-optimized fabric (one GPU per rail
    HCA: 8 for a DGX), 1 where the fabric cannot tell, --slots when given; the rule on stderr.
    A host short of an HCA keeps its GPUs' slots."""
    topo = tmp_path / "f.topo"
    topo.write_text(to_ibnetdiscover(generate(spec, ["missing-hca:dgx-0002:3"] if "rail" in spec else [])))
    for command in (["place", "--nodes", "4"], ["export", "hostfile"]):
        r = CliRunner().invoke(main, [*command, "--input", str(topo), *args])
        assert r.exit_code == 0, r.output
        assert {line.split(" slots=")[1] for line in r.stdout.splitlines()} == {str(slots)}
        assert rule in r.stderr


def test_cli_place_missing_sinfo_and_health_are_one_line_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    topo = _topo_file(tmp_path, SMALL[0])
    monkeypatch.setenv("PATH", str(tmp_path))  # no Slurm client on this PATH
    r = CliRunner().invoke(main, ["place", "--nodes", "2", "--free-slurm", "gpu", "--input", str(topo)])
    assert r.exit_code == SlurmUnavailable.exit_code
    assert r.stderr.count("\n") == 1 and "Slurm is not installed here (scontrol not found" in r.stderr
    r = CliRunner().invoke(
        main,
        [
            "place",
            "--nodes",
            "2",
            "--exclude-unhealthy",
            "--input",
            str(topo),
            "--db",
            str(tmp_path / "none.db"),
        ],
    )
    assert r.exit_code != 0 and r.stderr.count("\n") == 1 and "store" in r.stderr
