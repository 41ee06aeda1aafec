"""A host short of an HCA on a fat tree whose hosts carry several HCAs on one leaf, through the
real ibnetdiscover and OpenSM of the lab: exactly the planted ``missing_hca``, on the leaf port
its peers' pattern gives; the same fabric clean reports nothing (topology.hostfaults)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fabric.app.discovery.discover import discover
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.lab import simulator as lab
from topology.generate import Design

pytestmark = pytest.mark.lab

SPEC = "leafspine:leaves=2,spines=2,hosts=3,hcas=4,radix=36"


@pytest.fixture
def lab_fabric(request: pytest.FixtureRequest) -> Iterator[tuple[str, Design]]:
    name = "hostfaults"
    lab.up(SPEC, request.param, name=name)
    try:
        yield name, lab.design_of(name)
    finally:
        lab.down(name)


@pytest.mark.parametrize(
    "lab_fabric", [(), ("missing-hca:cn0002:2",)], indirect=True, ids=["clean", "missing-hca"]
)
def test_a_host_short_of_an_hca_is_reported_on_its_leaf_port(lab_fabric: tuple[str, Design]) -> None:
    name, design = lab_fabric
    d = discover(Session(Source.lab(name)))
    assert len(d.fabric.hcas()) == len(design.present_hcas())
    assert not d.classification.rail_optimized
    # The lab's OpenSM gave every port a LID: nothing unconfigured, nothing shared.
    assert [(a.kind, a.ports) for a in d.anomalies] == [
        (p.kind, tuple(r for r in p.ports if r.guid in {s.guid for s in design.switches}))
        for p in design.planted
    ]
    for a in d.anomalies:
        assert a.message.startswith(
            "cn0002 has 3 of the 4 HCAs its 5 peers have (mlx5_[0-3] on one leaf): no mlx5_2"
        )
