"""The generator's leafspine hosts of several HCAs (``hcas=N``, all on the host's leaf) and the
faults planted on them; every spec and fault from before reads and builds as it did."""

from __future__ import annotations

import pytest

from topology.errors import UsageError
from topology.generate import PRESETS, generate, parse_fabric_spec, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover_text


def test_hosts_of_eight_hcas_take_consecutive_ports_of_their_leaf() -> None:
    d = generate("leafspine:leaves=2,spines=2,hosts=4,hcas=8,radix=64")
    assert d.spec.text() == "leafspine:leaves=2,spines=2,hosts=4,hcas=8,radix=64,speed=NDR"
    assert len(d.hcas) == 2 * 4 * 8
    ports = {}
    for lk in d.built:
        for hca in d.hcas:
            if hca.guid in (lk.a.guid, lk.b.guid):
                ports[hca.description] = lk.other(hca.guid)
    leaf1 = d.switch("leaf-01").guid
    assert [ports[f"cn0002 mlx5_{i}"] for i in range(8)] == [(leaf1, 9 + i) for i in range(8)]
    assert ports["cn0005 mlx5_0"] == (d.switch("leaf-02").guid, 1)
    # uplinks as for any leafspine leaf: down ports // spines cables to each spine (16 + 16)
    leaf_up = [lk for lk in d.built if leaf1 in (lk.a.guid, lk.b.guid) and lk.other(leaf1).port <= 64]
    assert len(leaf_up) == 32 + 32
    fabric = parse_ibnetdiscover_text(to_ibnetdiscover(d))
    assert len(fabric.hcas()) == 64


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_read_as_before(name: str) -> None:
    """No spec gains a key: a leafspine host has one HCA unless hcas says more, and its canonical
    spelling (design files, lab names) is what it was."""
    spec = parse_fabric_spec(name)
    assert parse_fabric_spec(spec.text()) == spec
    if spec.kind == "leafspine":
        assert "hcas" not in spec.text() and spec.host_hcas == 1


def test_the_fat_tree_preset_is_spelled_as_before() -> None:
    assert (
        parse_fabric_spec("fattree-small").text() == "leafspine:leaves=4,spines=2,hosts=8,radix=40,speed=HDR"
    )


def test_one_hca_a_host_is_the_leafspine_default_spelled_once() -> None:
    assert parse_fabric_spec("leafspine:hcas=1") == parse_fabric_spec("leafspine")
    assert generate("fattree-small").hcas == generate("fattree-small:hcas=1").hcas


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("leafspine:hosts=8,hcas=8", "a leaf needs 64 host ports"),
        ("leafspine:hcas=0", "hcas must be at least 1"),
    ],
)
def test_specs_that_do_not_fit_are_one_line_errors(spec: str, error: str) -> None:
    with pytest.raises(UsageError, match=error):
        parse_fabric_spec(spec)


def test_missing_hca_plants_missing_hca_on_a_fat_tree_and_missing_link_on_rails() -> None:
    fat = generate("leafspine:leaves=2,spines=2,hosts=4,hcas=8,radix=64", ["missing-hca:cn0002:3"])
    (p,) = fat.planted
    assert (
        p.kind == "missing_hca" and p.description == "cn0002 mlx5_3 is absent: leaf-01 port 12 has no cable"
    )
    assert len(fat.present_hcas()) == 63
    (r,) = generate("rail-small", ["missing-hca:dgx-0003:5"]).planted
    assert r.kind == "missing_link"
