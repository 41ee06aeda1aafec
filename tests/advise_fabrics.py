"""Generated fabrics for the advice tests, parsed back through the real ibnetdiscover parser."""

from __future__ import annotations

from functools import lru_cache

from fabric.app.discovery.discover import Discovery, analyse
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Guid


@lru_cache(maxsize=16)
def fabric_of(spec: str, faults: tuple[str, ...] = ()) -> Discovery:
    text = to_ibnetdiscover(generate(spec, faults))
    return analyse(parse_ibnetdiscover(text.splitlines(), spec), text, spec)


def guid_of(d: Discovery, name: str) -> Guid:
    hits = [g for g, c in d.classification.nodes.items() if c.name == name]
    assert len(hits) == 1, name
    return hits[0]


# Two leaves, two spines, two hosts per leaf, one HDR cable (200 Gb/s) from each leaf to each spine.
TWO_BY_TWO = "leafspine:leaves=2,spines=2,hosts=2,radix=40"
