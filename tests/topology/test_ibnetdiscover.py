"""The ibnetdiscover parser on every real capture, checked against an independent naive count."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import realdata_files
from topology.errors import ParseError
from topology.ibnetdiscover import parse_ibnetdiscover, read_ibnetdiscover
from topology.model import NodeKind

CAPTURES = realdata_files("ibnetdiscover")


def naive_count(path: Path) -> tuple[int, int, int]:
    """(nodes, switches, cables) counted with plain string splitting, not the parser's regexes."""
    nodes: dict[int, str] = {}
    cables: set[frozenset[tuple[int, int]]] = set()
    current: int | None = None
    for raw in path.read_text(errors="replace").splitlines():
        line = raw.strip()
        words = line.split()
        if not words:
            current = None
            continue
        if words[0] in ("CA", "SW") and len(words) > 4:  # -p report
            here = (int(words[3], 16), int(words[2]))
            nodes.setdefault(here[0], words[0])
            if (" - " in line and len(words) > 9 and words[5] == "-") or (len(words) > 8 and words[6] == "-"):
                i = words.index("-")
                there = (int(words[i + 4], 16), int(words[i + 3]))
                nodes.setdefault(there[0], words[i + 1])
                cables.add(frozenset((here, there)))
            continue
        if words[0] in ("Switch", "Ca", "Rt"):
            current = int(words[2].strip('"').split("-")[-1], 16)
            nodes[current] = "SW" if words[0] == "Switch" else "CA"
            continue
        if line.startswith("[") and current is not None:
            port = int(line[1 : line.index("]")])
            q = line.index('"')
            far_id = line[q + 1 : line.index('"', q + 1)]
            far_port = int(line[line.index('"[', q) + 2 : line.index("]", line.index('"[', q))])
            far = int(far_id.split("-")[-1], 16)
            nodes.setdefault(far, "SW" if far_id.startswith("S-") else "CA")
            cables.add(frozenset(((current, port), (far, far_port))))
    # The odd-spaces -p excerpt lists one aggregation node on two cables from different runs;
    # the parser keeps the first, so drop later conflicting cables the same way.
    seen: dict[tuple[int, int], tuple[int, int]] = {}
    kept = 0
    for c in sorted(cables, key=sorted):
        ends = sorted(c)
        a, b = ends[0], ends[-1]
        if (a in seen and seen[a] != b) or (b in seen and seen[b] != a):
            continue
        seen[a], seen[b] = b, a
        kept += 1
    return len(nodes), sum(1 for k in nodes.values() if k == "SW"), kept


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_every_real_capture_parses_with_independent_counts(path: Path) -> None:
    fabric = read_ibnetdiscover(path)
    nodes, switches, cables = naive_count(path)
    assert len(fabric.nodes) == nodes
    assert len(fabric.switches()) == switches
    assert len(fabric.links) == cables


def test_capture_inventory() -> None:
    assert len(CAPTURES) >= 13, "the realdata folder lost captures"


def test_superpod_details() -> None:
    f = read_ibnetdiscover(next(p for p in CAPTURES if "superpod" in p.name))
    leaf = f.nodes[next(g for g, n in f.nodes.items() if "IBLEAF-04-04" in n.description)]
    assert leaf.kind is NodeKind.SWITCH and leaf.nports == 65 and leaf.lid == 73
    cable = next(lk for lk in f.links_of(leaf.guid) if lk.end(leaf.guid).port == 35)
    assert (cable.width, cable.speed, cable.gbps) == (4, "NDR", 400.0)
    assert f.nodes[cable.other(leaf.guid).guid].description == "MF0;A10-P1-IBSPINE-02:MQM9701/U1"


def test_old_voltaire_keeps_the_narrower_side_of_a_cable() -> None:
    f = read_ibnetdiscover(next(p for p in CAPTURES if "voltaire" in p.name))
    widths = sorted(lk.width for lk in f.links)
    assert widths.count(1) == 2  # one end of each says 1xSDR


def test_loopback_cables_are_kept() -> None:
    f = read_ibnetdiscover(next(p for p in CAPTURES if "loopbacks" in p.name))
    loops = [lk for lk in f.links if lk.a.guid == lk.b.guid]
    assert {(lk.a.port, lk.b.port) for lk in loops} >= {(1, 2), (19, 21), (29, 30)}


def test_ports_report_unconnected_ports() -> None:
    f = read_ibnetdiscover(next(p for p in CAPTURES if "p-ports-edr" in p.name))
    assert {(u.ref.port, u.speed) for u in f.unconnected} == {(37, "???"), (80, "SDR")}


def test_crlf_and_stdin_forms_match() -> None:
    path = next(p for p in CAPTURES if "small-lab" in p.name)
    text = path.read_text()
    a = parse_ibnetdiscover(text.splitlines(), "x")
    b = parse_ibnetdiscover(text.replace("\n", "\r\n").splitlines(keepends=True), "x")
    assert a.links == b.links and dict(a.nodes) == dict(b.nodes)


SUPERPOD = next(p for p in CAPTURES if "superpod" in p.name)


@pytest.mark.parametrize(
    ("text", "lineno", "problem"),
    [
        ("", 0, "no Switch or Ca records"),
        ("# just a header\n\n", 2, "no Switch or Ca records"),
        # A text with nothing of the tool's in it: every line skipped, so no records.
        ("hello world\n", 1, "no Switch or Ca records"),
        # A line that looks like the tool's but does not parse is never skipped.
        ('Switch\t4 "S-00000000000000aa"\tenhanced port 0\n', 1, "unrecognised line"),
        (
            'Switch\t4 "S-00000000000000aa"\t# "sw" enhanced port 0 lid 1 lmc 0\n'
            'user@mgmt:~$ oops\n[1]\t"H-00000000000000bb"[1](bb)\t# "h" lid 2 4xHDR\n',
            2,
            "unrecognised line inside a Switch/Ca record",
        ),
        ('[1]\t"S-0000000000000001"[2]\t# "x" lid 1 4xHDR\n', 1, "port line outside"),
        (
            'Switch\t4 "S-00000000000000aa"\t# "sw" enhanced port 0 lid 1 lmc 0\n[1]\t"H-00000000000000bb"[1]\n',
            2,
            "without width",
        ),
        (
            'Switch\t4 "S-00000000000000aa"\t# "sw" enhanced port 0 lid 1 lmc 0\n'
            '[9]\t"H-00000000000000bb"[1](bb)\t# "h" lid 2 4xHDR\n',
            2,
            "beyond the 4 ports",
        ),
    ],
)
def test_bad_input_names_line_and_problem(text: str, lineno: int, problem: str) -> None:
    with pytest.raises(ParseError) as err:
        parse_ibnetdiscover(text.splitlines(), "bad.txt")
    assert err.value.lineno == lineno
    assert problem in str(err.value)
    assert str(err.value).startswith(f"bad.txt:{lineno}" if lineno else "bad.txt")


def test_truncated_inside_a_record_is_detected() -> None:
    lines = SUPERPOD.read_text().splitlines()
    # Cut the file in the middle of the last switch record's port list.
    last_switch = max(i for i, ln in enumerate(lines) if ln.startswith("Switch"))
    cut = lines[: last_switch + 5]
    with pytest.raises(ParseError, match="truncated or inconsistent"):
        parse_ibnetdiscover(cut, "cut.txt")


def test_truncated_mid_line_is_detected() -> None:
    text = SUPERPOD.read_text()
    cut = text[: text.index("a08-p1-dgx-04-c03") + 5]
    with pytest.raises(ParseError, match=r"cut.txt:\d+"):
        parse_ibnetdiscover(cut.splitlines(), "cut.txt")


def test_garbled_guid_is_an_error() -> None:
    text = SUPERPOD.read_text().replace('"S-2c5eab0300b87b40"', '"S-zz5eab0300b87b40"', 1)
    with pytest.raises(ParseError) as err:
        parse_ibnetdiscover(text.splitlines(), "g.txt")
    assert err.value.lineno == 10


def test_missing_file_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="No such file"):
        read_ibnetdiscover("/nonexistent/topo.txt")


def test_ibwarn_lines_are_skipped() -> None:
    f = read_ibnetdiscover(next(p for p in CAPTURES if "loopbacks" in p.name))
    assert len(f.switches()) == 2


def test_guid_spelling_is_normalised() -> None:
    text = 'Ca\t1 "H-00000000000000AB"\t# "h1 mlx5_0"\n[1](ab)\t"S-00000000000000cd"[3]\t# lid 1 lmc 0 "sw" lid 2 4xHDR\n'
    f = parse_ibnetdiscover(text.splitlines(), "x")
    assert set(f.nodes) == {"0x00000000000000ab", "0x00000000000000cd"}
    assert re.fullmatch(r"0x[0-9a-f]{16}", f.links[0].a.guid)


def test_hca_lids_come_from_their_port_lines() -> None:
    f = read_ibnetdiscover(SUPERPOD)
    hca = next(n for n in f.nodes.values() if n.description == "a08-p1-dgx-04-c01 mlx5_5")
    assert hca.lid == 647  # `[1](...) "S-2c5eab0300b87b40"[1] # lid 647 lmc 0 "MF0;A09-P1-IBLEAF-04-04..."`
    assert sum(1 for n in f.hcas() if n.lid is None) == 0


def test_unreadable_port_info_is_an_unknown_width_and_speed() -> None:
    """Real ibnetdiscover prints ``?????`` when a port's PortInfo MAD is lost (seen in the lab
    with an error rate on a spine port); the other end's listing fills it in when it has one."""
    text = (
        'Switch\t8 "S-00000000000000aa"\t# "MF0;leaf-01:MQM9700/U1" enhanced port 0 lid 2 lmc 0\n'
        '[5]\t"S-00000000000000bb"[1]\t\t# "" lid 3 ?????\n'
        '[6]\t"S-00000000000000bb"[2]\t\t# "MF0;spine-01:MQM9700/U1" lid 3 ?????\n'
        "\n"
        'Switch\t8 "S-00000000000000bb"\t# "MF0;spine-01:MQM9700/U1" enhanced port 0 lid 3 lmc 0\n'
        '[1]\t"S-00000000000000aa"[5]\t\t# "MF0;leaf-01:MQM9700/U1" lid 2 4xHDR\n'
        '[2]\t"S-00000000000000aa"[6]\t\t# "MF0;leaf-01:MQM9700/U1" lid 2 ?????\n'
    )
    f = parse_ibnetdiscover(text.splitlines(), "q")
    widths = {(lk.a.port, lk.b.port): (lk.width, lk.speed, lk.gbps) for lk in f.links}
    assert widths == {(5, 1): (4, "HDR", 200.0), (6, 2): (0, "???", 0.0)}
