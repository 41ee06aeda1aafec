"""The inputs of the isolation limits: designed uplinks (now, first snapshot, the tier's usual
count), isolations in place (store and fabric), the fabric-wide change lock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fabric.advise.candidates import Candidate, LinkFinding, isolation_port, link_at, resolve_port
from fabric.advise.safety import SafetyPolicy, check_isolations, designed_uplinks, usual_uplinks
from fabric.app.discovery.discover import Discovery, analyse
from fabric.app.drivers import driver_for
from fabric.app.isolation.limits import fabric_change_lock, fabric_key, isolation_limits
from fabric.app.source import Source, SourceKind
from fabric.store import Store
from tests.advise_fabrics import fabric_of, guid_of
from topology.errors import SafetyError
from topology.generate import generate, to_ibnetdiscover
from topology.model import Fabric, PortRef


def without(d: Discovery, *ports: str) -> Discovery:
    """``d`` with the cables on ``ports`` gone (as isolated ports vanish from ibnetdiscover)."""
    gone = {link_at(d.fabric, resolve_port(d.fabric, d.classification, p)) for p in ports}
    links = [lk for lk in d.fabric.links if lk not in gone]
    return analyse(Fabric.build(d.fabric.nodes.values(), links, origin=d.fabric.origin), "", "cut")


def verdict(d: Discovery, port: str, policy: SafetyPolicy | None = None, **kw: object) -> tuple[bool, str]:
    ref = resolve_port(d.fabric, d.classification, port)
    lk = link_at(d.fabric, ref)
    assert lk is not None and isolation_port(d.fabric, d.classification, lk) == ref
    cand = Candidate(lk, ref, LinkFinding(lk.a, lk.b, "critical"), False)
    (v,) = check_isolations(d.fabric, d.classification, [cand], policy, **kw).verdicts  # type: ignore[arg-type]
    return v.accepted, v.reason if not v.accepted else ""


def test_a_clean_fabric_is_its_own_design() -> None:
    d = fabric_of("fattree-small")
    designed = designed_uplinks(d.classification)
    leaf = guid_of(d, "leaf-01")
    assert designed[leaf].count == 8 and designed[leaf].source == "now"
    assert usual_uplinks(d.classification)[leaf] == 8


def test_the_floor_holds_against_the_peers_design_after_isolations() -> None:
    # leaf-01 has lost two uplinks already (6 of 8): a third would leave 5 < 75% of 8.
    d = without(fabric_of("fattree-small"), "leaf-01:9", "leaf-01:10")
    leaf = guid_of(d, "leaf-01")
    assert d.classification.uplinks[leaf] == 6
    assert designed_uplinks(d.classification)[leaf].source == "usual for a leaf in its section"
    ok, why = verdict(d, "leaf-01:11")
    assert not ok
    assert (
        why
        == "leaf-01 would keep 5/8 uplinks (6 now, 8 by design (usual for a leaf in its section)), below the floor of 75%"
    )
    # Against the uplinks left now (the old rule) it would have passed: 5 >= 0.75 x 6.
    assert verdict(d, "leaf-01:11", designed={})[0]


def test_the_first_snapshot_remembers_a_design_every_peer_has_lost(tmp_path: Path) -> None:
    clean = fabric_of("fattree-small")
    cut = [f"leaf-0{i}:{p}" for i in range(1, 5) for p in (9, 10)]
    d = without(clean, *cut)  # every leaf at 6: the peers' usual count is 6 now
    with Store.open(tmp_path / "s.db") as store:
        no_snapshot = isolation_limits(store, d.fabric, d.classification, None)
        assert verdict(d, "leaf-01:11", designed=no_snapshot.designed)[0]
        store.save_topology(
            clean.fabric, to_ibnetdiscover(generate("fattree-small")), "ibnetdiscover", "test"
        )
        store.save_topology(d.fabric, "", "ibnetdiscover", "test")  # later snapshots do not lower it
        limits = isolation_limits(store, d.fabric, d.classification, None)
    leaf = guid_of(d, "leaf-01")
    assert limits.designed[leaf].count == 8 and limits.designed[leaf].source.startswith("first snapshot ")
    ok, why = verdict(d, "leaf-01:11", designed=limits.designed)
    assert not ok and "5/8 uplinks (6 now, 8 by design (first snapshot" in why


def test_store_isolations_count_once_and_unknown_port_states_are_said(tmp_path: Path) -> None:
    d = fabric_of("fattree-small")
    leaf = guid_of(d, "leaf-01")
    with Store.open(tmp_path / "s.db") as store:
        for port in (9, 10):
            store.audit(
                "root",
                "isolate",
                f"{PortRef(leaf, port)} leaf-01:{port} <-> spine-01:{port}",
                "ibportstate",
                "ok",
                ports=(PortRef(leaf, port),),
            )
        store.audit(
            "root", "isolate", f"{PortRef(leaf, 9)} again", "ibportstate", "ok", ports=(PortRef(leaf, 9),)
        )  # the same port
        limits = isolation_limits(store, d.fabric, d.classification, None)
    assert limits.already == 2 and limits.disabled_now is None
    assert limits.notes == ("ports disabled now: not known (a saved topology shows no port states)",)
    assert "2 port(s) isolated now count toward the cap" in limits.describe()
    d2 = without(d, "leaf-01:9", "leaf-01:10")
    ok, why = verdict(d2, "leaf-02:9", SafetyPolicy(max_isolations=2), already_isolated=limits.already)
    assert not ok and why == "the cap of 2 isolations at once is reached"
    assert verdict(d2, "leaf-02:9", SafetyPolicy(max_isolations=3), already_isolated=limits.already)[0]


def test_the_fabric_lock_is_keyed_by_fabric_and_names_its_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IBFAB_LOCK_DIR", str(tmp_path / "locks"))
    d = fabric_of("fattree-small")
    lowest = min(n.guid for n in d.fabric.switches())
    assert (
        fabric_key(driver_for(Source(SourceKind.FILE, "a.topo")), d.fabric)
        == fabric_key(driver_for(Source.local()), d.fabric)
        == f"fabric-{lowest}"
    )
    assert fabric_key(driver_for(Source.lab("demo")), d.fabric) == "lab-demo"
    with fabric_change_lock("fabric-x") as path:
        assert path.parent == tmp_path / "locks"
        held = pytest.raises(SafetyError, match=f"held by pid {os.getpid()} on .*nothing was changed")
        with held, fabric_change_lock("fabric-x", wait_s=0.2):
            pass
        with fabric_change_lock("fabric-y", wait_s=0.2):  # another fabric is not held up
            pass
    with fabric_change_lock("fabric-x", wait_s=0.2):  # released
        pass
