"""Host roles (topology.hostroles): compute hosts are the dominant shape, a host of another shape
is a service host, a leaf of service hosts only is a service leaf judged against its own kind.

Each test names the rule its decision rests on. Generated fabrics carry service hosts and
service leaves (spec keys ``service=``, ``ufm=``: topology.generate_service); every real capture
is a case, with why each host is what it is."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import realdata_files
from topology.classify import Classification, Role, classify
from topology.generate import Design, generate, to_ibnetdiscover
from topology.hostroles import HostRule, decide_roles, service_name
from topology.ibnetdiscover import parse_ibnetdiscover, read_ibnetdiscover
from topology.model import Fabric
from topology.wiring import find_anomalies

CAPTURES = {p.name: p for p in realdata_files("ibnetdiscover")}


def _discover(design: Design) -> tuple[Fabric, Classification]:
    fabric = parse_ibnetdiscover(to_ibnetdiscover(design).splitlines(), design.spec.text())
    return fabric, classify(fabric)


def _rails(hosts: int, hcas: int, prefix: str = "dgx") -> dict[str, list[tuple[int | None, str]]]:
    """``hosts`` hosts with HCA r on leaf r (rail-optimized shapes)."""
    return {f"{prefix}{i:03d}": [(r, f"rail{r}") for r in range(hcas)] for i in range(hosts)}


# -- the rules, one by one ------------------------------------------------------------------------
def test_dominant_shape_and_other_shape() -> None:
    shapes = _rails(16, 8)
    shapes["nfs01"] = [(0, "leaf-x"), (1, "leaf-x")]  # no service word: the shape decides alone
    roles = decide_roles(shapes, {}, {})
    assert roles["dgx001"].rule is HostRule.DOMINANT_SHAPE and roles["dgx001"].role == "compute"
    assert roles["nfs01"].rule is HostRule.OTHER_SHAPE and roles["nfs01"].role == "service"
    assert "2 HCAs on 1 leaf where 16 hosts have 8 HCAs on 8 leaves" in roles["nfs01"].reason


def test_fewer_hcas_is_a_compute_host_short_of_an_adapter() -> None:
    """7 of 8 HCAs, on the compute leaves, each on its rail: a dead card, never a service host."""
    shapes = _rails(16, 8)
    shapes["dgx003"] = [(r, f"rail{r}") for r in range(8) if r != 5]
    leaf_rail = {f"rail{r}": r for r in range(8)}
    roles = decide_roles(shapes, leaf_rail, {r: r for r in range(8)})
    assert roles["dgx003"].rule is HostRule.FEWER_HCAS and roles["dgx003"].role == "compute"
    # half its adapters left: still a compute host short of adapters
    shapes["dgx004"] = [(r, f"rail{r}") for r in range(4)]
    # three of eight, each on its own rail's leaf: cabled as a compute host, so one
    shapes["dgx005"] = [(r, f"rail{r}") for r in (0, 3, 6)]
    # three of eight, one off its rail; one adapter alone on a rail leaf: nothing says compute
    shapes["odd01"] = [(0, "rail0"), (3, "rail3"), (6, "rail7")]
    shapes["odd02"] = [(0, "rail0")]
    roles = decide_roles(shapes, leaf_rail, {r: r for r in range(8)})
    assert roles["dgx004"].rule is HostRule.FEWER_HCAS and roles["dgx005"].rule is HostRule.FEWER_HCAS
    assert roles["odd01"].rule is HostRule.OTHER_SHAPE and "off their rails" in roles["odd01"].reason
    assert roles["odd02"].rule is HostRule.OTHER_SHAPE


def test_fewer_hcas_on_one_leaf_fat_tree() -> None:
    """A fat tree whose hosts carry 8 HCAs on one leaf: 7 working is a compute host short of one."""
    shapes = {f"node{i:02d}": [(r, f"leaf{i // 4}") for r in range(8)] for i in range(16)}
    shapes["node05"] = [(r, "leaf1") for r in range(7)]
    shapes["store1"] = [(0, "leaf9"), (1, "leaf9")]
    roles = decide_roles(shapes, {}, {})
    assert roles["node05"].rule is HostRule.FEWER_HCAS
    # two of eight: fewer than half, another machine (a storage server)
    assert roles["store1"].rule is HostRule.OTHER_SHAPE


def test_fewer_hcas_with_a_service_name_is_a_service_host() -> None:
    """The shape says it is not whole, the name says why: ``fewer_hcas_service_name``."""
    shapes = _rails(16, 4)
    shapes["login01"] = [(0, "rail0"), (1, "rail1")]
    shapes["dgx900"] = [(0, "rail0"), (1, "rail1")]  # the same shape, a compute name
    roles = decide_roles(shapes, {f"rail{r}": r for r in range(4)}, {r: r for r in range(4)})
    assert roles["login01"].rule is HostRule.FEWER_HCAS_SERVICE_NAME and roles["login01"].service
    assert roles["dgx900"].rule is HostRule.FEWER_HCAS and not roles["dgx900"].service


def test_names_alone_never_decide() -> None:
    """A host named login with the compute hosts' shape is a compute host."""
    shapes = _rails(16, 8)
    shapes["login-gpu01"] = [(r, f"rail{r}") for r in range(8)]
    shapes["nfs01"] = [(0, "leaf-x")]  # one host of another shape: the rest are the dominant one
    assert decide_roles(shapes, {}, {})["login-gpu01"].rule is HostRule.DOMINANT_SHAPE
    single = {f"n{i:03d}": [(0, f"leaf{i % 4}")] for i in range(20)} | {"login01": [(0, "leaf0")]}
    assert {r.rule for r in decide_roles(single, {}, {}).values()} == {HostRule.ALL_ALIKE}


def test_same_adapters_cabled_otherwise_stays_compute() -> None:
    """The compute hosts' adapters, all on one leaf where they spread them: a wiring fault for the
    anomaly checks (single_leaf_host), not another machine."""
    shapes = _rails(16, 4)
    shapes["dgx777"] = [(r, "rail0") for r in range(4)]
    assert decide_roles(shapes, {}, {})["dgx777"].rule is HostRule.SAME_ADAPTERS


def test_off_rail_adapters_are_a_service_host() -> None:
    """Two adapters, each on a leaf of another rail (the NDR SuperPOD's UFM server)."""
    shapes = _rails(16, 4)
    shapes["mgr-02"] = [(0, "rail2"), (1, "rail3")]
    roles = decide_roles(shapes, {f"rail{r}": r for r in range(4)}, {r: r for r in range(4)})
    assert roles["mgr-02"].rule is HostRule.OTHER_SHAPE
    assert "off their rails" in roles["mgr-02"].reason


def test_clean_fabrics_are_quiet() -> None:
    """All alike, too few hosts, or a mixed cluster: nobody is a service host."""
    assert {r.rule for r in decide_roles(_rails(32, 8), {}, {}).values()} == {HostRule.ALL_ALIKE}
    tiny = _rails(4, 8) | {"login01": [(0, "x")]}
    assert {r.rule for r in decide_roles(tiny, {}, {}).values()} == {HostRule.TOO_FEW_HOSTS}
    # 40 GPU nodes beside 50 CPU nodes: another partition, not 40 service hosts
    mixed = _rails(40, 8, "gpu") | {f"cpu{i:03d}": [(0, f"leaf{i % 5}")] for i in range(50)}
    roles = decide_roles(mixed, {}, {})
    assert {r.rule for r in roles.values()} == {HostRule.NO_DOMINANT_SHAPE}
    assert not any(r.service for r in roles.values())


def test_above_leaves() -> None:
    shapes = {f"n{i:03d}": [(0, f"leaf{i % 4}")] for i in range(20)}
    roles = decide_roles(shapes, {}, {}, frozenset({"tank1"}))
    assert roles["tank1"].rule is HostRule.ABOVE_LEAVES and roles["tank1"].service
    # too few hosts to say
    small = {f"n{i}": [(0, "leaf0")] for i in range(3)}
    assert "tank1" not in decide_roles(small, {}, {}, frozenset({"tank1"}))


def test_service_name_hint() -> None:
    assert service_name("B11-P1-CUFM-02") == "ufm"
    assert service_name("selene-login-01") == "login"
    assert service_name("dgx-0001") is None


# -- generated fabrics with service hosts and service leaves ---------------------------------------
SERVICE_SPECS = (
    "rail-small:service=1",
    "rail-small:service=1,ufm=1",
    "rail-3tier:service=2,ufm=1",
    "fattree-small:service=1,ufm=1",
    "fattree-small:service=3",
    "rail-small:service=1,side=1",
)


@pytest.mark.parametrize("spec", SERVICE_SPECS)
def test_generated_service_hosts_are_service_and_quiet(spec: str) -> None:
    design = generate(spec)
    fabric, cls = _discover(design)
    planted = {h.host: h.role for h in design.hcas}
    assert {h: cls.host_roles[h].role for h in planted} == planted
    for h in design.hcas:
        assert cls.nodes[h.guid].role is (Role.SERVICE if h.role == "service" else Role.COMPUTE)
    # service leaves: the service-leaf, and a side group's leaves when its hosts are service hosts
    side_service = any(h.role == "service" and h.host.startswith("mgmt-") for h in design.hcas)
    kinds = {"service-leaf", "side-leaf"} if side_service else {"service-leaf"}
    assert cls.service_leaves == {s.guid for s in design.switches if s.role in kinds}
    # Clean: a service leaf with two cables to one spine is its design, not a missing link.
    assert find_anomalies(fabric, cls) == []


def test_generated_service_leaf_judged_against_its_own_kind() -> None:
    """Three service leaves; one lost one of its two cables: reported against the other two,
    never against the 16 compute leaves (which have 4 uplinks each)."""
    design = generate("rail-small:service=3", ["missing-link:svc-leaf-02"])
    fabric, cls = _discover(design)
    found = find_anomalies(fabric, cls)
    assert [(a.kind, a.message.split(";")[0]) for a in found] == [
        ("missing_link", "svc-leaf-02 (service leaf) has 1 uplinks where its 2 peers have 2")
    ]
    (planted,) = design.planted
    assert set(planted.guids) <= set(found[0].nodes) | {p.guid for p in found[0].ports}


def test_generated_compute_host_short_of_an_hca_stays_compute() -> None:
    design = generate("rail-small:service=1", ["missing-hca:dgx-0003:5"])
    _, cls = _discover(design)
    assert cls.host_roles["dgx-0003"].rule is HostRule.FEWER_HCAS
    assert not cls.is_service_host("dgx-0003")
    assert cls.is_service_host("login-01") and cls.is_service_host("storage-01")


def test_service_spec_round_trips_and_is_checked() -> None:
    from topology.errors import UsageError
    from topology.generate import parse_fabric_spec

    spec = parse_fabric_spec("rail-small:service=2,ufm=1")
    assert parse_fabric_spec(spec.text()) == spec and "service=2" in spec.text()
    assert "service" not in parse_fabric_spec("rail-small").text()
    with pytest.raises(UsageError, match="spine-01 has no port left for svc-leaf-01"):
        generate("leafspine:leaves=4,spines=2,hosts=20,radix=40,service=1")  # spines full
    design = generate("rail-small:service=1")
    leaf = design.switch("svc-leaf-01")
    ups = Counter(lk.other(leaf.guid).guid for lk in design.built if leaf.guid in (lk.a.guid, lk.b.guid))
    spines = {s.guid for s in design.switches if s.role == "spine"}
    assert [n for g, n in ups.items() if g in spines] == [2]  # two cables to one spine


# -- every real capture ---------------------------------------------------------------------------
# Why each host is what it is, read from the capture as an operator would.
REAL_SERVICE: dict[str, tuple[set[str] | int, HostRule | None, str]] = {
    "garyli-ibdiagnet2-ndr-272nodes-label-ports.txt": (
        set(),
        HostRule.ALL_ALIKE,
        "32 DGX nodes with 8 HCAs over the 8 rail leaves each: all alike, nothing reclassified",
    ),
    "junousi-ibm-doc-sdr-2009-no-sysimgguid.txt": (set(), HostRule.TOO_FEW_HOSTS, "2 hosts"),
    "junousi-manpage-2007-voltaire-non-chassis-grouping.txt": (set(), None, "no named host"),
    "junousi-nvidia-kb-edr-fdr-mixed-loopbacks.txt": (
        set(),
        HostRule.TOO_FEW_HOSTS,
        "5 lab hosts (r-ufm96...: named after the UFM lab, not UFM servers): too few for a shape",
    ),
    "junousi-oracle-doc-sun-dcs36-qdr.txt": (set(), HostRule.TOO_FEW_HOSTS, "one host"),
    "loginoff-qdr-fdr10-152nodes.txt": (
        {"tank1", "tank2"},
        HostRule.ALL_ALIKE,
        "142 single-HCA hosts on six leaves are alike (atlas, booster1-4, rocket, sputnik1 share "
        "ib6 with stage121-135 and have their shape: names alone never decide); tank1 and tank2 "
        "hang off the spine ib7 (above_leaves): the storage servers",
    ),
    "superbench-faked-hdr-mcs8500-full-f-flags.txt": (set(), HostRule.ALL_ALIKE, "10 single-HCA hosts"),
    "topograph-dgx-ndr-superpod-622nodes.txt": (
        {"B11-P1-CUFM-02"},
        HostRule.DOMINANT_SHAPE,
        "109 DGX with HCA indexes 0,1,4,5 on the four rail leaves of their unit; the ten "
        "a05-p1-dgx-01-* have three named HCAs, their fourth is among the unnamed ones "
        "(fewer_hcas: compute); B11-P1-CUFM-02, the UFM server, has mlx5_0/mlx5_1 on the rail-2 "
        "and rail-3 leaves of unit 8 (other_shape: off its rails)",
    ),
    "topograph-gb200-single-ca-isolated.txt": (set(), None, "one HCA cabled to no switch"),
    "treydock-ibnetdiscover-p-ports-edr-osc.txt": (set(), HostRule.TOO_FEW_HOSTS, "3 hosts"),
    "treydock-ibnetdiscover-p-ports-hdr-qdr-odd-spaces.txt": (set(), HostRule.TOO_FEW_HOSTS, "1 host"),
    "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt": (
        170,
        HostRule.DOMINANT_SHAPE,
        "Selene's storage fabric: 458 DGX (luna-*) with mlx5_4/mlx5_10 on the two leaves of a leaf "
        "pair; the 160 DDN AI400X appliances have HCA-1/HCA-2 both on one storage leaf and the "
        "cache, login, Slurm, Swift and UFM servers one adapter of index 1 or 2 (other_shape)",
    ),
    "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt": (set(), HostRule.TOO_FEW_HOSTS, "5 lab hosts"),
}


def test_every_capture_has_a_role_expectation() -> None:
    assert set(CAPTURES) == set(REAL_SERVICE)


@pytest.mark.parametrize("name", sorted(REAL_SERVICE))
def test_roles_on_real_captures(name: str) -> None:
    want, compute_rule, _why = REAL_SERVICE[name]
    fabric = read_ibnetdiscover(CAPTURES[name])
    cls = classify(fabric)
    service = {h for h, r in cls.host_roles.items() if r.service}
    if isinstance(want, int):
        assert len(service) == want
    else:
        assert service == want
    compute_rules = Counter(r.rule for r in cls.host_roles.values() if not r.service)
    if compute_rule is not None:
        assert compute_rules.most_common(1)[0][0] is compute_rule
    # a compute host is never a service host's shape, and every host on a switch has a role
    on_switch = {h for h, gs in cls.hosts.items() if any(cls.nodes[g].leaf for g in gs)}
    assert set(cls.host_roles) == on_switch


def test_selene_service_hosts_and_leaves() -> None:
    cls = classify(read_ibnetdiscover(_capture("ufm-sdk-selene-storage-hdr-edr-1407nodes.txt")))
    service = {h for h, r in cls.host_roles.items() if r.service}
    assert {h.split("-")[0] for h in service} == {"ai400x", "selene"}
    assert not any(h.startswith("luna-") for h in service)
    assert {cls.host_roles[h].rule for h in service} == {HostRule.OTHER_SHAPE}
    # the storage leaves: AI400X and service hosts only (SLG04-13 also has one unnamed HCA)
    names = sorted(cls.nodes[g].name for g in cls.service_leaves)
    assert names == [f"SLG0{p}-{n}" for p in range(1, 5) for n in range(13, 17)]


def test_superpod_hosts_short_of_a_named_hca_stay_compute() -> None:
    cls = classify(read_ibnetdiscover(_capture("topograph-dgx-ndr-superpod-622nodes.txt")))
    short = {h for h, r in cls.host_roles.items() if r.rule is HostRule.FEWER_HCAS}
    assert len(short) == 10 and all(h.startswith("a05-p1-dgx-01-") for h in short)
    assert cls.host_roles["B11-P1-CUFM-02"].rule is HostRule.OTHER_SHAPE


def _capture(name: str) -> Path:
    if name not in CAPTURES:
        pytest.skip(f"{name} not in realdata")
    return CAPTURES[name]
