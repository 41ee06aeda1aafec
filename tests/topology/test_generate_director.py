"""The generator's director chassis and pods (``leafspine:...,directors=D,pods=P``)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from topology.errors import UsageError
from topology.generate import generate, parse_fabric_spec, to_ibnetdiscover, to_ibsim_net

SPEC = "leafspine:leaves=8,hosts=4,directors=2,pods=4"


def test_spec_round_trip() -> None:
    spec = parse_fabric_spec(SPEC)
    assert (spec.directors, spec.pods, spec.fabric_boards, spec.spines) == (2, 4, 0, 0)
    assert parse_fabric_spec(spec.text()) == spec
    spare = parse_fabric_spec(SPEC + ",line_boards=6")
    assert spare.line_boards == 6 and parse_fabric_spec(spare.text()) == spare


def test_boards_and_cabling() -> None:
    d = generate(SPEC)
    names = {s.guid: s.name for s in d.switches}
    boards = [s for s in d.switches if s.name.startswith("director-")]
    assert [s.name for s in boards[:6]] == [f"director-01/L0{i}" for i in (1, 2, 3, 4)] + [
        "director-01/S01",
        "director-01/S02",
    ]
    assert boards[0].description == "MF0;director-01:MCS8500/L01/U1"
    assert {s.role for s in boards} == {"spine", "core"}
    pairs = Counter(
        tuple(sorted((names[lk.a.guid], names[lk.b.guid])))
        for lk in d.cables
        if lk.a.guid in names and lk.b.guid in names
    )
    # Pod 2 is leaves 03-04, each cabled to line board L02 of each director with
    # hosts / directors = 2 cables.
    assert pairs[("director-01/L02", "leaf-03")] == 2 and pairs[("director-02/L02", "leaf-04")] == 2
    assert pairs[("director-01/L01", "leaf-03")] == 0
    # Every line board to every fabric board of its own chassis, none across chassis.
    assert pairs[("director-01/L03", "director-01/S02")] == 2
    assert not any(a.split("/")[0] != b.split("/")[0] for a, b in pairs if "/" in a and "/" in b)


def test_writers_give_boards_the_chassis_image() -> None:
    d = generate(SPEC)
    for text in (to_ibnetdiscover(d), to_ibsim_net(d)):
        images = Counter(
            line.split("=", 1)[1] for line in text.splitlines() if line.startswith("sysimgguid=")
        )
        assert images["0x0c42a10300a60000"] == 6 and images["0x0c42a10300a60001"] == 6
        assert max(images.values()) == 6  # every other node has its own


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("leafspine:pods=2", "pods, fabric_boards and line_boards come with directors"),
        ("leafspine:fabric_boards=2", "pods, fabric_boards and line_boards come with directors"),
        ("leafspine:directors=2,pods=3,line_boards=2", "line_boards=2 is fewer than pods=3"),
        ("leafspine:directors=2,spines=2", "directors are the spine tier; leave out spines"),
        ("leafspine:directors=2,radix=64", "directors come with radix 36 (CS7500) or 40 (MCS8500)"),
        ("leafspine:directors=2,leaves=4,pods=5", "pods=5 is more than leaves=4"),
        ("leafspine:directors=1,leaves=40,hosts=20", "a line board needs 800 leaf ports"),
        ("leafspine:directors=2,hosts=30", "a leaf needs 30 host ports + 30 director cables"),
        ("leafspine:directors=2,leaves=40,hosts=4,pods=40,fabric_boards=1", "a fabric board needs 80 ports"),
    ],
)
def test_specs_that_do_not_fit(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_fabric_spec(spec)
