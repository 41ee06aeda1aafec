"""Repairs for the cabling faults discovery finds beside degraded cables and miswires: a missing
uplink or rail HCA gets ``connect_cable`` with both ends named from the peers (or the end said to
be unknown), a down port its reseat/replace with the far end said to be unknown, uneven uplinks
the exact moves, an unnamed HCA its node description. Each planted alone yields exactly its
action; the clean fabric none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fabric.advise.actions import Action, ActionKind
from fabric.advise.candidates import findings_from_dict
from fabric.advise.recommend import recommend
from fabric.app.discovery.discover import Discovery, analyse
from tests.advise_fabrics import fabric_of, guid_of
from tests.fabric.test_advise import UPSTREAM
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric, Link, PortRef, UnconnectedPort

ROUTING = {
    ActionKind.SET_NCCL_ENV,
    ActionKind.SET_ROUTING_ENGINE,
    ActionKind.ENABLE_AR,
    ActionKind.DISABLE_AR,
}
FOUR_SPINES = "leafspine:leaves=4,spines=4,hosts=8,radix=40"  # two cables from each leaf to each spine


def repairs(d: Discovery) -> list[Action]:
    recs = recommend(
        d.fabric, d.classification, findings_from_dict({"links": []}), sm=UPSTREAM, anomalies=d.anomalies
    )
    return [a for a in recs.actions if a.kind not in ROUTING]


def only(d: Discovery, kind: str) -> Action:
    """The one anomaly of ``kind`` gets exactly one action, and nothing else is flagged."""
    assert [a.kind for a in d.anomalies] == [kind], d.anomalies
    (act,) = repairs(d)
    assert act.evidence[0] == f"discovery: {d.anomalies[0].message}"
    return act


def operator_line(act: Action) -> str:
    (line,) = act.commands_for("operator")
    return line


@pytest.mark.parametrize("spec", ["rail-small", "fattree-small", "rail-3tier", FOUR_SPINES])
def test_a_clean_fabric_gets_no_cabling_action(spec: str) -> None:
    d = fabric_of(spec)
    assert d.anomalies == ()
    assert repairs(d) == []


@pytest.mark.parametrize(
    ("spec", "fault", "target"),
    [
        ("rail-small", "missing-link:leaf-su01-r0", "leaf-su01-r0:5 <-> spine-01:1"),
        ("fattree-small", "missing-link:leaf-02", "leaf-02:9 <-> spine-01:5"),
        (FOUR_SPINES, "missing-link:leaf-03:14", "leaf-03:14 <-> spine-03:6"),
    ],
)
def test_a_missing_uplink_names_both_ends_from_its_peers(spec: str, fault: str, target: str) -> None:
    d = fabric_of(spec, (fault,))
    act = only(d, "missing_link")
    assert act.kind is ActionKind.CONNECT_CABLE and act.target == target
    # The ends named are those of the cable the fault took out of the clean fabric.
    clean = fabric_of(spec)
    near, far = target.split(" <-> ")
    (node, port), (far_node, far_port) = (e.rsplit(":", 1) for e in (near, far))
    ref = PortRef(guid_of(clean, node), int(port))
    lk = next(lk for p, _, lk in clean.fabric.neighbours(ref.guid) if p == ref.port)
    assert lk.other(ref.guid) == PortRef(guid_of(clean, far_node), int(far_port))
    line = operator_line(act)
    assert line.startswith(f"check the cable between {node} port {port} and {far_node} port {far_port}: ")
    assert f"peers: port {port} goes to {far_node} on " in act.evidence[1]


@pytest.mark.parametrize("spine", ["spine-su01-01", "spine-su01-02", "spine-su02-01", "spine-su02-02"])
def test_a_spines_missing_core_cable_is_named_from_its_block_on_the_core(spine: str) -> None:
    """rail-3tier: each spine sends all 8 core cables to one core, in a block of the core's ports
    (1-8, 9-16); no other core tells the port, the block does: its one uncabled port."""
    d = fabric_of("rail-3tier", (f"missing-link:{spine}",))
    act = only(d, "missing_link")
    clean = fabric_of("rail-3tier")
    ref = PortRef(guid_of(clean, spine), 9)
    far = next(lk for p, _, lk in clean.fabric.neighbours(ref.guid) if p == 9).other(ref.guid)
    core = clean.classification.nodes[far.guid].name
    assert act.target == f"{spine}:9 <-> {core}:{far.port}"
    first = far.port  # the missing cable held the first port of the spine's block
    assert act.evidence[-1] == (
        f"{core}: its ports {first}-{first + 7} (a block of 8, as {spine}'s peers have there) hold "
        f"{spine}'s other cables and no other switch's; uncabled: port {far.port}"
    )


def test_a_missing_uplink_says_which_end_is_not_known() -> None:
    """The block rule names nothing where the core's ports are not in regular blocks: here a
    second fault moved spine-su01-01's cable from core-01 port 8 to port 10, beside
    spine-su02-01's missing one (core-01 port 9)."""
    clean = fabric_of("rail-3tier")
    core, s1, s2 = (guid_of(clean, n) for n in ("core-01", "spine-su01-01", "spine-su02-01"))

    def change(f: Fabric) -> tuple[list[Link], list[UnconnectedPort]]:
        at = {p: lk for p, _, lk in f.neighbours(core)}
        assert at[8].other(core).guid == s1 and at[9].other(core).guid == s2
        moved = Link(PortRef(core, 10), at[8].other(core), at[8].width, at[8].speed)
        gone = {at[8], at[9], at[10]}
        keep = at[10].other(core)  # spine-su02-01's cable on port 10 moves to port 17
        return [lk for lk in f.links if lk not in gone] + [
            moved,
            Link(PortRef(core, 17), keep, at[10].width, at[10].speed),
        ], []

    d = _rebuilt(clean, change)
    acts = [a for a in repairs(d) if a.kind is ActionKind.CONNECT_CABLE and "spine-su02-01" in a.target]
    (act,) = acts
    assert act.target == "spine-su02-01 <-> core-01"
    assert "spine-su02-01 port 9 and core-01 (which port is not known)" in operator_line(act)


@pytest.mark.parametrize(
    ("spec", "host", "index"), [("rail-small", "dgx-0002", 3), ("rail-3tier", "dgx-0001", 0)]
)
def test_a_missing_rail_hca_names_the_leaf_port_and_the_hca(spec: str, host: str, index: int) -> None:
    d = fabric_of(spec, (f"missing-hca:{host}:{index}",))
    act = only(d, "missing_link")
    clean = fabric_of(spec)
    hca = guid_of(clean, f"{host} mlx5_{index}")
    ((hca_port, leaf_end, _),) = clean.fabric.neighbours(hca)
    leaf = clean.classification.nodes[leaf_end.guid].name
    assert act.kind is ActionKind.CONNECT_CABLE
    assert act.target == f"{leaf}:{leaf_end.port} <-> {host} mlx5_{index}:{hca_port}"
    line = operator_line(act)
    assert f"between {leaf} port {leaf_end.port} and {host} mlx5_{index} port {hca_port}" in line
    assert "dead HCA" in act.reason


def _rebuilt(d: Discovery, change: Callable[[Fabric], tuple[list[Link], list[UnconnectedPort]]]) -> Discovery:
    links, down = change(d.fabric)
    return analyse(Fabric.build(d.fabric.nodes.values(), links, down, origin=d.fabric.origin), "", "rebuilt")


def test_a_down_host_port_is_reseated_with_its_far_end_said_unknown() -> None:
    # cn0011's HCA port went down: ibnetdiscover -p lists leaf-02 port 3 without a peer and the
    # HCA is no longer reached (it is left out of the nodes too).
    clean = fabric_of("fattree-small")
    leaf = guid_of(clean, "leaf-02")
    ((_, hca, gone),) = [(p, far, lk) for p, far, lk in clean.fabric.neighbours(leaf) if p == 3]
    links = [lk for lk in clean.fabric.links if lk != gone]
    nodes = [n for g, n in clean.fabric.nodes.items() if g != hca.guid]
    d = analyse(
        Fabric.build(nodes, links, [UnconnectedPort(PortRef(leaf, 3), 4, "HDR")], origin=clean.fabric.origin)
    )
    act = only(d, "down_port")
    assert act.kind is ActionKind.REPLACE_CABLE and act.target == "leaf-02:3"
    assert act.port == PortRef(leaf, 3)
    line = operator_line(act)
    assert "leaf-02 port 3 and its far end (not known: the link is down" in line


def test_a_down_ports_far_end_comes_from_the_link_history_with_when(tmp_path: Path) -> None:
    """The same down HCA port, with a store that saw the link go down: the action names the far end
    as the stored topology named the HCA (it is not discovered any more) and says when; a store
    without that link's history leaves it unknown, as does one whose events are of other links."""
    from fabric.app.advice.recommend import down_ports_last_peers
    from fabric.store import Store
    from topology.diff import LinkEvent

    clean = fabric_of("fattree-small")
    leaf = guid_of(clean, "leaf-02")
    ((_, hca, gone),) = [(p, far, lk) for p, far, lk in clean.fabric.neighbours(leaf) if p == 3]
    other = next(lk for lk in clean.fabric.links if lk != gone)
    links = [lk for lk in clean.fabric.links if lk != gone]
    nodes = [n for g, n in clean.fabric.nodes.items() if g != hca.guid]
    d = analyse(
        Fabric.build(nodes, links, [UnconnectedPort(PortRef(leaf, 3), 4, "HDR")], origin=clean.fabric.origin)
    )
    hca_name = clean.fabric.nodes[hca.guid].description
    T = 1_800_000_000.0
    with Store.open(tmp_path / "ibfab.db") as store:
        store.save_topology(clean.fabric, "", "ibnetdiscover", "test", taken_at=T - 600)
        assert down_ports_last_peers(store, d) == {}  # no event: nothing known
        store.add_link_events([LinkEvent(T - 60, other.key, "down", "test")])
        assert down_ports_last_peers(store, d) == {}  # another link's event says nothing of this one
        store.add_link_events([LinkEvent(T, gone.key, "down", "test")])
        peers = down_ports_last_peers(store, d)
    assert list(peers) == [PortRef(leaf, 3)]
    last = peers[PortRef(leaf, 3)]
    assert (last.far, last.name, last.kind) == (hca, hca_name, "down")
    recs = recommend(
        d.fabric,
        d.classification,
        findings_from_dict({"links": []}),
        sm=UPSTREAM,
        anomalies=d.anomalies,
        last_peers=peers,
    )
    (act,) = [a for a in recs.actions if a.kind not in ROUTING]
    line = operator_line(act)
    assert f"leaf-02 port 3 and {hca_name} port {hca.port})" in line and "not known" not in line
    assert act.evidence[-1] == (
        f"history: its peer was {hca_name} port {hca.port} when ibfab saw the link go down at 2027-01-15 08:00:00 UTC"
    )


def test_a_down_uplink_port_is_one_action_with_its_missing_cable() -> None:
    clean = fabric_of("fattree-small")
    leaf = guid_of(clean, "leaf-02")

    def down(f: Fabric) -> tuple[list[Link], list[UnconnectedPort]]:
        gone = next(lk for p, _, lk in f.neighbours(leaf) if p == 9)
        return [lk for lk in f.links if lk != gone], [UnconnectedPort(PortRef(leaf, 9), 4, "HDR")]

    d = _rebuilt(clean, down)
    assert sorted(a.kind for a in d.anomalies) == ["down_port", "missing_link"]
    (act,) = repairs(d)
    assert act.kind is ActionKind.CONNECT_CABLE and act.target == "leaf-02:9 <-> spine-01:5"
    assert {f"discovery: {a.message}" for a in d.anomalies} <= set(act.evidence)


def test_uneven_uplinks_get_the_exact_move() -> None:
    # leaf-01's second spine-02 cable (port 11, spine-02 port 1) sits on spine-01 port 9 instead.
    clean = fabric_of(FOUR_SPINES)
    leaf, s1 = guid_of(clean, "leaf-01"), guid_of(clean, "spine-01")

    def moved(f: Fabric) -> tuple[list[Link], list[UnconnectedPort]]:
        lk = next(lk for p, _, lk in f.neighbours(leaf) if p == 11)
        return [lk2 for lk2 in f.links if lk2 != lk] + [
            Link(PortRef(leaf, 11), PortRef(s1, 9), lk.width, lk.speed)
        ], []

    d = _rebuilt(clean, moved)
    act = only(d, "uplink_imbalance")
    assert act.kind is ActionKind.MOVE_CABLES and act.target == "leaf-01"
    assert "spine-01: 3 of 2" in act.reason and "spine-02: 1 of 2" in act.reason
    assert "spine-02 lacks links" in act.reason
    assert operator_line(act) == "move the cable on leaf-01 port 11 from spine-01 port 9 to spine-02 port 1"


def test_an_unnamed_hca_gets_a_node_description_not_a_cable() -> None:
    text = to_ibnetdiscover(generate("fattree-small"))
    renamed = text.replace('"cn0005 mlx5_0"', '"MT4123 ConnectX6   Mellanox Technologies"')
    assert renamed != text
    d = analyse(parse_ibnetdiscover(renamed.splitlines(), "renamed"), renamed, "renamed")
    act = only(d, "unnamed_hca")
    assert act.kind is ActionKind.SET_NODE_DESCRIPTION
    assert act.target == d.anomalies[0].nodes[0]
    assert any("rdma-ndd" in c for c in act.commands_for("operator"))


def test_two_missing_cables_to_one_spine_name_both_ends_ports_without_pairing_them() -> None:
    d = fabric_of(FOUR_SPINES, ("missing-link:leaf-03:13", "missing-link:leaf-03:14"))
    act = only(d, "missing_link")
    assert act.target == "leaf-03 <-> spine-03"
    assert operator_line(act).startswith(
        "check the 2 cables between leaf-03 ports 13, 14 and spine-03 ports 5, 6: "
    )


def test_a_host_on_one_leaf_gets_the_moves_to_its_rail_leaves() -> None:
    """svc-01's four HCAs answer on ports 1-4 of the rail-0 leaf (where dgx-0001..0004 had their
    rail-0 HCAs): one recabling for svc-01 moving HCAs 1-3 to the leaves of rails 1-3, beside the
    connect_cable of each host now lacking rail 0; nothing else."""
    text = to_ibnetdiscover(generate("rail:units=1,nodes=8,hcas=4,spines=2,radix=64"))
    for i in range(4):
        text = text.replace(f'"dgx-{i + 1:04d} mlx5_0"', f'"svc-01 mlx5_{i}"')
    d = analyse(parse_ibnetdiscover(text.splitlines(), "svc"), text, "svc")
    kinds = sorted(a.kind for a in d.anomalies)
    assert kinds == ["missing_link"] * 4 + ["single_leaf_host"]
    acts = repairs(d)
    assert sorted(a.kind for a in acts) == [ActionKind.CONNECT_CABLE] * 4 + [ActionKind.SWAP_CABLES]
    (move,) = [a for a in acts if a.kind is ActionKind.SWAP_CABLES]
    assert move.target == "svc-01"
    single = next(a for a in d.anomalies if a.kind == "single_leaf_host")
    assert move.evidence == (f"discovery: {single.message}",)
    lines = move.commands_for("operator")
    assert [line.split(" (rail")[0] for line in lines] == [f"svc-01 mlx5_{i}" for i in (1, 2, 3)]
    for i, line in zip((1, 2, 3), lines, strict=True):
        assert f"from leaf-su01-r0 port {i + 1} to leaf-su01-r{i} " in line


def test_the_unnamed_hcas_of_one_machine_are_one_node_description_fix() -> None:
    """All 8 HCAs of dgx-0002 unnamed: they sit on port 2 of their unit's 8 rail leaves, one
    machine by that evidence, so one action on that machine names all 8 (a capture with 74 unnamed
    HCAs listed 74 actions for what are 26 machines); one unnamed HCA whose host the cabling tells
    is a fix on that host."""
    text = to_ibnetdiscover(generate("rail-small"))
    renamed = text
    for i in range(8):
        renamed = renamed.replace(f'"dgx-0002 mlx5_{i}"', '"MT4129 ConnectX7   Mellanox Technologies"')
    d = analyse(parse_ibnetdiscover(renamed.splitlines(), "renamed"), renamed, "renamed")
    # discovery too: one anomaly for the machine, naming its 8 HCAs (never 8 rows)
    (an,) = d.anomalies
    assert an.kind == "unnamed_hca" and len(an.nodes) == 8 and len(an.ports) == 8
    assert an.message.startswith("8 HCAs of one machine (the machine on port 2 of leaf-su01-r0, ")
    (act,) = repairs(d)
    assert act.kind is ActionKind.SET_NODE_DESCRIPTION
    assert act.target.startswith("the machine on port 2 of leaf-su01-r0, leaf-su01-r1, ")
    assert act.evidence == (f"discovery: {an.message}",)
    assert act.reason.startswith("8 HCAs of one machine have no host name")
    assert operator_line_first(act).startswith(f"on {act.target} (its 8 HCAs ")

    one = text.replace('"dgx-0002 mlx5_3"', '"MT4129 ConnectX7   Mellanox Technologies"')
    d = analyse(parse_ibnetdiscover(one.splitlines(), "renamed"), one, "renamed")
    (act,) = repairs(d)
    assert act.target == "dgx-0002" and "probably dgx-0002" in act.evidence[0]
    assert operator_line_first(act).startswith(f"on dgx-0002 (HCA {d.anomalies[0].nodes[0]}): ")


def operator_line_first(act: Action) -> str:
    return act.commands_for("operator")[0]
