"""The canonical fast path gives exactly the general parser's Fabric, or steps aside.

``parse_canonical`` must never accept a text the general line parser would read differently or
reject: every real capture and generated fabric it takes is compared with the general parser's
result, and every perturbation below must fall back and end in the general parser's own result
or error.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import realdata_files
from tests.mutate import random_edit
from topology.errors import ParseError
from topology.generate import generate, to_ibnetdiscover
from topology.ibnetdiscover import parse_ibnetdiscover, parse_ibnetdiscover_text, read_ibnetdiscover
from topology.ibnetdiscover_fast import parse_canonical
from topology.model import Fabric

CAPTURES = realdata_files("ibnetdiscover")
# Captures the fast path leaves to the general parser, and why.
FALLBACK = {
    "junousi-manpage-2007-voltaire-non-chassis-grouping.txt",  # "Non-Chassis Nodes" grouping lines
    "junousi-nvidia-kb-edr-fdr-mixed-loopbacks.txt",  # ibwarn lines in stdout, loopback cables
    "superbench-faked-hdr-mcs8500-full-f-flags.txt",  # cables listed from one end only
    "treydock-ibnetdiscover-p-ports-edr-osc.txt",  # the -p ports report
    "treydock-ibnetdiscover-p-ports-hdr-qdr-odd-spaces.txt",  # the -p ports report
}


def same(a: Fabric, b: Fabric) -> bool:
    return (
        dict(a.nodes) == dict(b.nodes)
        and a.links == b.links
        and a.unconnected == b.unconnected
        and a.origin == b.origin
        and a.source == b.source
        and a.lids == b.lids  # every LID by port, 0 and 65535 included (topology.addressing)
        and a.duplicates == b.duplicates
    )


def general(text: str, source: str = "t.topo") -> Fabric:
    return parse_ibnetdiscover(text.splitlines(), source)


def assert_reads_as_general(text: str, what: str = "") -> None:
    """The whole-text entry gives the line parser's Fabric, or exactly its error."""
    try:
        expected: Fabric | str = general(text)
    except ParseError as exc:
        expected = str(exc)
    try:
        got: Fabric | str = parse_ibnetdiscover_text(text, "t.topo")
    except ParseError as exc:
        got = str(exc)
    if isinstance(expected, str):
        assert got == expected, what or "the whole-text entry must report the general parser's error"
    else:
        assert isinstance(got, Fabric) and same(got, expected), what


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_real_capture_fast_path_equals_general_parser(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    fast = parse_canonical(text, str(path))
    if path.name in FALLBACK:
        assert fast is None
        return
    assert fast is not None, f"{path.name} is in the canonical spelling but the fast path refused it"
    slow = general(text, str(path))
    assert same(fast, slow)
    assert len(fast.nodes) > 0


def test_every_fallback_capture_exists() -> None:
    # A renamed or removed capture must not leave a stale entry that hides a regression.
    assert {p.name for p in CAPTURES} >= FALLBACK


@pytest.mark.parametrize(
    ("spec", "faults"),
    [
        ("rail-small", ()),
        ("fattree-small", ()),
        ("rail-3tier", ()),
        ("superpod-1su", ()),
        ("rail-small", ("miswire:dgx-0002:1:2", "missing-link:leaf-su01-r2", "missing-hca:dgx-0003:5")),
        ("rail-small", ("degraded-width:leaf-su01-r0:1", "degraded-speed:leaf-su02-r1:5")),
    ],
)
def test_generated_fabric_takes_fast_path(spec: str, faults: tuple[str, ...]) -> None:
    text = to_ibnetdiscover(generate(spec, faults))
    fast = parse_canonical(text, spec)
    assert fast is not None
    assert same(fast, general(text, spec))


SMALL = to_ibnetdiscover(generate("rail-small"))


def _first_port_line(text: str, start: str = "[") -> int:
    lines = text.split("\n")
    return next(i for i, line in enumerate(lines) if line.startswith(start))


def _edit(text: str, index: int, new: str | None) -> str:
    lines = text.split("\n")
    if new is None:
        del lines[index]
    else:
        lines[index] = new
    return "\n".join(lines)


def _perturbations() -> dict[str, str]:
    lines = SMALL.split("\n")
    port = _first_port_line(SMALL)
    hca_port = next(
        i
        for i, line in enumerate(lines)
        if line.startswith("[1](") and i > 0 and lines[i - 1].startswith("Ca")
    )
    first_record = next(i for i, line in enumerate(lines) if line.startswith("Switch"))
    return {
        "crlf": SMALL.replace("\n", "\r\n"),
        "unknown width": _edit(SMALL, port, lines[port].replace("4xNDR", "?????")),
        "lower-case speed": _edit(SMALL, port, lines[port].replace("4xNDR", "4xndr")),
        "missing mirror listing": _edit(SMALL, hca_port, None),
        "port beyond the record": _edit(SMALL, port, lines[port].replace("[1]", "[99]", 1)),
        "port listed twice": _edit(SMALL, port + 1, lines[port]),
        "garbage line": _edit(SMALL, port, "this is not ibnetdiscover"),
        "cut mid-line": SMALL[: SMALL.index("\n", len(SMALL) // 2) - 10],
        "duplicate record": SMALL + "\n" + "\n".join(lines[first_record - 4 : first_record + 3]) + "\n",
        "ibwarn line": _edit(SMALL, port - 1, "ibwarn: [123] _do_madrpc: recv failed\n" + lines[port - 1]),
        "empty": "",
        "sysimgguid with a garbage tail": SMALL.replace("sysimgguid=0x", "sysimgguid=0xzz", 1),
        "line indented before a record": SMALL.replace("\nvendid=", "\n  vendid=", 1),
        # the fast path leaves a port line's far GUID to the pairing (it must be a record's own)
        "upper-case far GUID": _edit(SMALL, port, _far_guid(lines[port], str.upper)),
        "far GUID not hex": _edit(SMALL, port, _far_guid(lines[port], lambda g: "g" + g[1:])),
        "far GUID with a quote": _edit(SMALL, port, _far_guid(lines[port], lambda g: g[:8] + '"' + g[9:])),
        # a quoted description or a parenthesis closed on the next line: one match over two lines
        "description closed on the next line": _edit(SMALL, port, _split_at(lines[port], "mlx5_0")),
        "parenthesis closed on the next line": _edit(SMALL, hca_port, _split_at(lines[hca_port], ")")),
    }


def _split_at(line: str, mark: str) -> str:
    """``line`` broken in two just before the last ``mark`` in it, the second starting with "["
    as a port line does (both stay in the record's block of port lines)."""
    i = line.rindex(mark)
    return line[:i] + "\n[" + line[i:]


def _far_guid(line: str, change: Callable[[str], str]) -> str:
    """``line`` with the 16 digits of its far end's GUID changed."""
    head, far, tail = line.partition('"S-') if '"S-' in line else line.partition('"H-')
    return head + far + change(tail[:16]) + tail[16:]


PERTURBED = _perturbations()


@pytest.mark.parametrize("name", list(PERTURBED))
def test_perturbed_text_falls_back_to_the_general_parser(name: str) -> None:
    text = PERTURBED[name]
    assert parse_canonical(text, "t.topo") is None
    assert_reads_as_general(text)


def test_ends_that_disagree_keep_the_narrower_and_slower_view() -> None:
    lines = SMALL.split("\n")
    port = _first_port_line(SMALL)
    # The first switch port line is a leaf's view of an HCA cable; make it 2x and HDR there only.
    text = _edit(SMALL, port, lines[port].replace("4xNDR", "2xHDR"))
    fast = parse_canonical(text, "t.topo")
    assert fast is not None
    assert same(fast, general(text))
    narrowed = [lk for lk in fast.links if (lk.width, lk.speed) != (4, "NDR")]
    assert [(lk.width, lk.speed) for lk in narrowed] == [(2, "HDR")]


def test_cable_between_two_ports_of_one_switch_has_the_lower_port_in_a() -> None:
    # Ports 9 and 10 of one leaf cabled to each other: as text "10" sorts before "9", so the fast
    # path must not take the text order for the port order.
    text = to_ibnetdiscover(generate("fattree-small"))
    lines = text.split("\n")
    leaf = next(i for i, line in enumerate(lines) if '"MF0;leaf-01:' in line and line.startswith("Switch"))
    guid = lines[leaf].split('"')[1]
    name = lines[leaf].split('"')[3]
    nine, ten = leaf + 9, leaf + 10
    assert lines[nine].startswith("[9]") and lines[ten].startswith("[10]")
    looped = [*lines]
    looped[nine] = f'[9]\t"{guid}"[10]\t\t# "{name}" lid 1 4xHDR'
    looped[ten] = f'[10]\t"{guid}"[9]\t\t# "{name}" lid 1 4xHDR'
    # The spine ports that had those two cables now list nothing: drop their lines.
    old_ends = (f'"{guid}"[9]', f'"{guid}"[10]')
    kept = [line for i, line in enumerate(looped) if i in (nine, ten) or not any(e in line for e in old_ends)]
    assert len(kept) == len(looped) - 2
    result = "\n".join(kept)
    fast = parse_canonical(result, "t.topo")
    assert fast is not None
    assert same(fast, general(result))
    loop = [lk for lk in fast.links if lk.a.guid == lk.b.guid]
    assert [(lk.a.port, lk.b.port) for lk in loop] == [(9, 10)]


def test_read_ibnetdiscover_uses_whole_text_and_names_the_file(tmp_path: Path) -> None:
    good = tmp_path / "good.topo"
    good.write_text(SMALL)
    assert same(read_ibnetdiscover(good), general(SMALL, str(good)))
    bad = tmp_path / "bad.topo"
    bad.write_text(PERTURBED["garbage line"])
    with pytest.raises(ParseError) as err:
        read_ibnetdiscover(bad)
    assert str(bad) in str(err.value) and "unrecognised line" in str(err.value)


def test_comments_blank_lines_and_origin_variants_stay_on_the_fast_path() -> None:
    lines = SMALL.split("\n")
    first_record = next(i for i, line in enumerate(lines) if line.startswith("vendid="))
    text = "\n".join(
        [
            *lines[:first_record],
            "# a note an operator added",
            "",
            "   ",
            *lines[first_record:],
        ]
    )
    # A later origin line that is not in the tool's form is ignored, as the general parser does.
    text += "\n# Initiated from node somewhere else\n\n  \n"
    fast = parse_canonical(text, "t.topo")
    assert fast is not None
    slow = general(text)
    assert same(fast, slow) and fast.origin is not None and fast.origin == general(SMALL).origin


def _mutations(base: str, seed: int, count: int) -> list[str]:
    """Seeded random edits of a canonical file (tests.mutate.random_edit, one edit each)."""
    rng = random.Random(seed)
    return [random_edit(rng, base, '0123456789abcdefx[]"# \t') for _ in range(count)]


# Bases: the generated file, two real captures in the canonical spelling (older tools, other
# vendors), and two that always take the line parser (a -p ports report; ibwarn lines and
# loopback cables), whose edits must still end in a result or a one-line ParseError.
FUZZ_NAMES = (
    "junousi-oracle-doc-sun-dcs36-qdr.txt",
    "junousi-ibm-doc-sdr-2009-no-sysimgguid.txt",
    "treydock-ibnetdiscover-p-ports-edr-osc.txt",
    "junousi-nvidia-kb-edr-fdr-mixed-loopbacks.txt",
)
FUZZ_BASES = {
    "generated rail-small": SMALL,
    **{p.name: p.read_text(encoding="utf-8", errors="replace") for p in CAPTURES if p.name in FUZZ_NAMES},
}


@pytest.mark.parametrize("name", list(FUZZ_BASES))
def test_random_edits_give_the_general_parsers_result_or_error(name: str) -> None:
    # The whole-text entry may only ever differ from the line parser in speed. (Found this way:
    # header values after a blank, a doubled blank inside "lid N lmc 0", "# Initiated from nodee";
    # and in the line parser itself, a -p line whose far GUID has 17 digits raised a ValueError.)
    taken = 0
    for text in _mutations(FUZZ_BASES[name], seed=20261122, count=400):
        assert_reads_as_general(text)
        taken += parse_canonical(text, "t.topo") is not None
    if name in FALLBACK:
        return
    # Some edits leave a valid canonical file (a changed description, a changed digit in a LID),
    # and the fast path must have taken those: it is exercised, not just skipped.
    assert 0 < taken < 400


def test_spellings_found_by_random_edits_read_as_the_general_parser_reads_them() -> None:
    lines = SMALL.split("\n")
    hca_port = next(
        i for i, line in enumerate(lines) if line.startswith("[1](") and lines[i - 1].startswith("Ca")
    )
    cases = {
        "header value after blanks": SMALL.replace("sysimgguid=0x", "sysimgguid= \t0x", 3),
        "header value garbled after a blank": SMALL.replace("sysimgguid=0x", "sysimgguid= x", 1),
        "doubled blank in the HCA's own lid": _edit(
            SMALL, hca_port, lines[hca_port].replace("# lid ", "# lid  ")
        ),
        "origin phrase run into its next word": SMALL.replace(
            "# Initiated from node ", "# Initiated from nodee "
        ),
    }
    for name, text in cases.items():
        assert_reads_as_general(text, name)


@pytest.mark.parametrize("spec", ["rail-small", "fattree-small", "superpod-1su"])
def test_the_cables_short_cut_pairs_as_the_general_reading(
    spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """topology.ibnetdiscover_build.cables pairs every port line listed back by its far end on a
    short cut; without it (the reading that also takes repeats, conflicts and one-sided listings)
    the Fabric is the same, down to each cable's combined view."""
    import topology.ibnetdiscover_build as build

    text = to_ibnetdiscover(
        generate(spec, ("degraded-width:leaf-su01-r0:1",) if spec == "rail-small" else ())
    )
    lines = text.splitlines()
    port = _first_port_line(text)
    narrowed = lines[port].rsplit(" ", 1)[0] + " 1xSDR"  # its two ends disagree on this cable
    text = "\n".join([*lines[:port], narrowed, *lines[port + 1 :]])
    quick = parse_ibnetdiscover_text(text, spec)
    monkeypatch.setattr(build, "_listed_twice", lambda *args: None)
    general_reading = parse_ibnetdiscover_text(text, spec)
    assert same(quick, general_reading)
    assert any(lk.width == 1 and lk.speed == "SDR" for lk in quick.links)


def test_runs_of_gap_lines_between_records_and_after_the_last() -> None:
    # A record takes the blank and comment lines before it in one match; a run that no record
    # follows is taken whole. Either way the fast path reads what the line parser reads.
    spaced = SMALL.replace("\n\nvendid=", "\n\n# a note\n\n \t\n\nvendid=").rstrip("\n") + "\n\n# end\n\n"
    fast = parse_canonical(spaced, "t.topo")
    assert fast is not None and same(fast, general(spaced))
    # A run of gap lines followed by a line that is no record: the fast path steps aside.
    stray = SMALL.replace("\n\nvendid=", "\n\n\n# x\n\nnot a record\nvendid=", 1)
    assert parse_canonical(stray, "t.topo") is None
