"""What-if numbers against hand-computed cases on small fabrics, and a routing property."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from fabric.advise.candidates import resolve_port
from fabric.advise.whatif import Scenario, parse_share, what_if
from fabric.app.discovery.discover import Discovery
from fabric.cli.main import main
from tests.advise_fabrics import TWO_BY_TWO, fabric_of, guid_of
from topology.errors import UsageError
from topology.generate import generate, to_ibnetdiscover
from topology.model import PortRef

# TWO_BY_TWO: leaf-01 has cn0001 (LID 5), cn0002 (LID 6) on ports 1-2 and spine-01/-02 on ports 3/4;
# leaf-02 has cn0003 (LID 7), cn0004 (LID 8). Every cable is 4xHDR = 200 Gb/s.
# All-to-all: each HCA sends 200/3 Gb/s to each of the 3 others; 4 flows cross from each leaf
# (266.7 Gb/s up). d-mod-k: uplink = dest LID mod 2 -> odd LIDs over spine-02, even over spine-01.


def lids(d: Discovery) -> dict[str, int]:
    out: dict[str, int] = {}
    for h in ("cn0001", "cn0002", "cn0003", "cn0004"):
        lid = d.fabric.nodes[guid_of(d, f"{h} mlx5_0")].lid
        assert lid is not None
        out[h] = lid
    return out


def port(d: Discovery, text: str) -> PortRef:
    return resolve_port(d.fabric, d.classification, text)


def test_hand_case_lids() -> None:
    assert lids(fabric_of(TWO_BY_TWO)) == {"cn0001": 5, "cn0002": 6, "cn0003": 7, "cn0004": 8}


def test_one_uplink_at_half_speed() -> None:
    d = fabric_of(TWO_BY_TWO)
    r = what_if(d.fabric, d.classification, Scenario(degrade={port(d, "leaf-01:3"): 0.5}))
    (g,) = r.groups
    assert (g.group, g.endpoints, g.pairs) == ("all", 4, 12)
    # Flows to the even LIDs cross the halved cable: up from leaf-01 to cn0004 (2 flows) and down
    # from spine-01 to cn0002 (2 flows): 133.3 Gb/s on 100 -> λ = 0.75.
    assert g.all_to_all["static"] == pytest.approx(0.75)
    # Ideal AR: leaf-01 has 300 Gb/s up for 266.7 of demand -> no loss.
    assert g.all_to_all["adaptive"] == pytest.approx(1.0)
    assert g.all_to_all["static_baseline"] == g.all_to_all["adaptive_baseline"] == 1.0
    # The same 4 of 12 ordered pairs, alone, run at half speed.
    assert dict(g.slowed_pairs) == {0.5: 4}
    # Ring cn0001 -> cn0002 -> cn0003 -> cn0004 -> cn0001 crosses only towards odd LIDs (spine-02).
    assert g.ring["static"] == pytest.approx(1.0)
    s = r.sentence()
    assert "4 of 12 host pairs (1/3) drop (4 to 50% speed)" in s
    assert "all-to-all on all hosts loses 25% static, 0% with ideal AR" in s
    assert "d-mod-k" in r.routing_model


def test_one_uplink_at_quarter_speed_ar_cannot_hide_it() -> None:
    d = fabric_of(TWO_BY_TWO)
    (g,) = what_if(d.fabric, d.classification, Scenario(degrade={port(d, "spine-01:1"): 0.25})).groups
    # Static: 133.3 Gb/s on 50 -> 0.375. AR: 250 Gb/s up for 266.7 -> 0.9375 (6.25 % loss).
    assert g.all_to_all["static"] == pytest.approx(0.375)
    assert g.all_to_all["adaptive"] == pytest.approx(0.9375)
    assert g.loss("all-to-all", "adaptive") == pytest.approx(0.0625)
    assert dict(g.slowed_pairs) == {0.25: 4}


def test_isolated_uplink_is_routed_around() -> None:
    d = fabric_of(TWO_BY_TWO)
    r = what_if(d.fabric, d.classification, Scenario(isolate=(port(d, "leaf-01:3"),)))
    (g,) = r.groups
    # Everything from and to leaf-01 uses spine-02: 266.7 Gb/s on 200 -> 0.75 either way.
    assert g.all_to_all["static"] == pytest.approx(0.75)
    assert g.all_to_all["adaptive"] == pytest.approx(0.75)
    assert g.slowed == 0  # rerouted: a pair alone still runs at full speed
    assert g.ring["static"] == pytest.approx(1.0)


def test_job_hosts_only() -> None:
    d = fabric_of(TWO_BY_TWO)
    # cn0001 <-> cn0003: LIDs 5 and 7 are odd, both directions cross spine-02: untouched.
    r = what_if(
        d.fabric, d.classification, Scenario(degrade={port(d, "leaf-01:3"): 0.5}), hosts=["cn0001", "cn0003"]
    )
    (g,) = r.groups
    assert (g.endpoints, g.pairs, g.slowed) == (2, 2, 0)
    assert g.all_to_all["static"] == 1.0
    r = what_if(
        d.fabric, d.classification, Scenario(degrade={port(d, "leaf-01:3"): 0.5}), hosts=["cn0002", "cn0004"]
    )
    (g,) = r.groups
    # Both flows (200 Gb/s each) cross the halved cable, one up, one down: λ = 100/200.
    assert g.all_to_all["static"] == pytest.approx(0.5)
    assert g.all_to_all["adaptive"] == pytest.approx(1.0)
    with pytest.raises(UsageError, match="cn9999"):
        what_if(d.fabric, d.classification, Scenario(), hosts=["cn9999"])


def test_rail_groups_on_a_rail_fabric() -> None:
    d = fabric_of("rail-small")
    rail3 = [g for g, c in d.classification.nodes.items() if c.rail == 3 and c.tier == 0]
    # LIDs go host by host (8 HCAs each), so one rail's LIDs are all equal modulo the 4 uplinks:
    # d-mod-k sends every cross-leaf flow of a rail over the same spine.
    assert len({(d.fabric.nodes[g].lid or 0) % 4 for g in rail3}) == 1
    r = what_if(d.fabric, d.classification, Scenario(degrade={port(d, "leaf-su01-r3:5"): 0.5}))
    assert [g.group for g in r.groups] == [f"rail {i}" for i in range(8)]
    worst = r.worst()
    assert worst is not None and worst.group == "rail 3"
    for g in r.groups:
        # 4 hosts x 4 remote peers x 400/7 Gb/s = 914 Gb/s on one 400 Gb/s uplink: 7/16.
        assert g.all_to_all["static_baseline"] == pytest.approx(7 / 16)
        assert g.all_to_all["adaptive_baseline"] == pytest.approx(1.0)
        if g is not worst:
            assert g.slowed == 0 and g.all_to_all["static"] == g.all_to_all["static_baseline"]
    # Rail 3 uses leaf-su01-r3 port 5 (spine-01) for all 32 cross-leaf ordered pairs: half speed,
    # and the all-to-all drops to 200 / 914 = 7/32; ideal AR has 1400 Gb/s of uplink: no loss.
    assert (worst.pairs, dict(worst.slowed_pairs)) == (56, {0.5: 32})
    assert worst.all_to_all["static"] == pytest.approx(7 / 32)
    assert worst.all_to_all["adaptive"] == pytest.approx(1.0)
    assert worst.loss("all-to-all", "static") == pytest.approx(0.5)
    assert "32 of 56 rail-3 pairs" in r.sentence()


def test_host_cable_isolation_reports_the_cut_off_hca() -> None:
    d = fabric_of(TWO_BY_TWO)
    r = what_if(d.fabric, d.classification, Scenario(isolate=(port(d, "leaf-01:1"),)))
    assert r.missing == ("cn0001 mlx5_0",)
    assert r.groups[0].endpoints == 3


def test_parse_share() -> None:
    assert parse_share("50%") == 0.5 and parse_share("0.25") == 0.25
    for bad in ("0%", "150%", "half", "-1"):
        with pytest.raises(UsageError):
            parse_share(bad)


@settings(max_examples=40, deadline=None)
@given(
    picks=st.lists(
        st.tuples(st.integers(0, 10_000), st.sampled_from([0.1, 0.25, 0.5, 0.75])), min_size=1, max_size=6
    )
)
def test_ideal_adaptive_is_never_worse_than_static(picks: list[tuple[int, float]]) -> None:
    d = fabric_of("rail-3tier")
    links = [
        lk for lk in d.fabric.links if all(d.classification.nodes[x].tier for x in (lk.a.guid, lk.b.guid))
    ]
    degrade = {links[i % len(links)].a: share for i, share in picks}
    r = what_if(d.fabric, d.classification, Scenario(degrade=degrade))
    for g in r.groups:
        for table in (g.all_to_all, g.ring):
            assert 0 < table["static"] <= table["adaptive"] + 1e-9 <= 1 + 1e-9


def test_whatif_cli(tmp_path: Path) -> None:
    topo = tmp_path / "f.topo"
    topo.write_text(to_ibnetdiscover(generate(TWO_BY_TWO)))
    res = CliRunner().invoke(main, ["whatif", "degrade", "leaf-01:3=50%", "--input", str(topo), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["groups"][0]["all_to_all"]["static"] == pytest.approx(0.75)
    res = CliRunner().invoke(
        main, ["whatif", "isolate", "leaf-01:3", "--input", str(topo), "--hosts", "cn[0001-0004]"]
    )
    assert res.exit_code == 0, res.output
    assert "loses 25% static, 25% with ideal AR" in res.stdout
    res = CliRunner().invoke(main, ["whatif", "ar", "on", "--input", str(topo)])
    assert res.exit_code == 0 and "AR on: adaptive numbers apply" in res.stdout
    res = CliRunner().invoke(main, ["whatif", "degrade", "leaf-01:3", "--input", str(topo)])
    assert res.exit_code == 2 and "NODE:PORT=SHARE" in res.stderr


def test_whatif_takes_the_store_like_every_command(tmp_path: Path) -> None:
    """``whatif isolate ... --db``: the store's newest snapshot is the fabric (it was refused)."""
    topo = tmp_path / "f.topo"
    topo.write_text(to_ibnetdiscover(generate(TWO_BY_TWO)))
    db = str(tmp_path / "x.db")
    res = CliRunner().invoke(main, ["discover", "--input", str(topo), "--save", "--db", db])
    assert res.exit_code == 0, res.output
    for command in (["isolate", "leaf-01:3"], ["degrade", "leaf-01:3=50%"], ["ar", "on"]):
        res = CliRunner().invoke(main, ["whatif", *command, "--db", db, "--hosts", "cn[0001-0004]"])
        assert res.exit_code == 0, res.output
        assert "using stored topology snapshot 1" in res.stderr
    res = CliRunner().invoke(main, ["whatif", "isolate", "leaf-01:3", "--db", db, "--snapshot", "1"])
    assert res.exit_code == 0 and "loses 25% static" in res.stdout, res.output
