"""The cable records: PortRef and Link are named tuples with one key per cable."""

from __future__ import annotations

import pickle

import pytest

from topology.model import Guid, Link, PortRef, links_from_columns


def test_link_puts_the_lower_port_in_a() -> None:
    a, b = PortRef(Guid("0x2"), 1), PortRef(Guid("0x1"), 3)
    link = Link(a, b, 4, "HDR")
    assert (link.a, link.b) == (b, a)
    assert Link(b=a, a=b, width=4, speed="HDR") == link
    assert link._replace(a=a, b=b).a == b  # _replace orders the ends again
    assert link._replace(width=2) == Link(a, b, 2, "HDR")
    with pytest.raises(ValueError, match="'lanes'"):
        link._replace(lanes=2)
    assert link.key == (("0x1", 3), ("0x2", 1))
    same_node = Link(PortRef(Guid("0x1"), 9), PortRef(Guid("0x1"), 10), 4, "HDR")
    assert (same_node.a.port, same_node.b.port) == (9, 10)  # ports compare as numbers
    assert Link(same_node.b, same_node.a, 4, "HDR") == same_node


def test_records_are_immutable_hashable_picklable_and_readable() -> None:
    a, b = PortRef(Guid("0x2"), 1), PortRef(Guid("0x1"), 3)
    link = Link(a, b, 4, "HDR")
    with pytest.raises(AttributeError):
        link.width = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        a.port = 2  # type: ignore[misc]
    assert {link, Link(b, a, 4, "HDR")} == {link} and link != Link(a, b, 2, "HDR")
    assert pickle.loads(pickle.dumps(link)) == link and type(pickle.loads(pickle.dumps(a))) is PortRef
    assert repr(a) == "PortRef(guid='0x2', port=1)" and str(a) == "0x2/1"
    assert repr(link).startswith("Link(a=PortRef(guid='0x1', port=3), b=PortRef(guid='0x2', port=1), width=4")
    assert sorted([a, b]) == [b, a]
    assert link.gbps == 200.0 and link.other(Guid("0x1")) == a and link.end(Guid("0x1")) == b


def test_links_from_columns_match_links_built_one_by_one() -> None:
    rows = [
        (Guid(f"0x{i:016x}"), i % 7 + 1, Guid(f"0x{i + 100:016x}"), i % 5 + 1, 4 - i % 2 * 2, "NDR")
        for i in range(50)
    ]
    built = links_from_columns(*map(list, zip(*rows, strict=True)))
    assert built == [Link(PortRef(g, p), PortRef(fg, fp), w, s) for g, p, fg, fp, w, s in rows]
    assert all(type(lk) is Link and type(lk.a) is PortRef for lk in built)
    assert links_from_columns([], [], [], [], [], []) == []
