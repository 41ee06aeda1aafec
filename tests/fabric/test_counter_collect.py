"""The fabric-wide collector: on a real ibsim lab, plus fake runners only for failures a lab cannot make."""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from fabric.app.health.collect import store_counters
from fabric.core import fields
from fabric.counters.merge import sample_row
from fabric.counters.reading import (
    ERROR_COUNTERS,
    CollectionResult,
    RunTool,
    collect_fabric,
    ibqueryerrors_argv,
    perfquery_argv,
    to_frame,
)
from fabric.store import PORT_COUNTER_FIELDS, Store
from probes.transport import CommandResult
from tests.conftest import REALDATA
from tests.fabric.test_counter_parsers import LAB_COUNTERS_R, LAB_ERRORS_R, Lab
from topology.errors import CommandFailed
from topology.ibnetdiscover import parse_ibnetdiscover
from topology.model import Fabric, Guid, Lid, Link, Node, NodeKind, PortRef

LEAF1, LEAF2, SPINE = Guid("0x0000000000200000"), Guid("0x0000000000200001"), Guid("0x0000000000200002")
H = {n: Guid(f"0x{0x100000 + 2 * (n - 1):016x}") for n in range(1, 5)}  # ibsim numbers CAs by 2


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    the_lab = Lab(tmp_path_factory.mktemp("collectlab"))
    try:
        for cmd in (
            'PerformanceSet "leaf1"[3] PortCounters.SymbolErrorCounter=70000',
            'PerformanceSet "spine1"[4] PortCounters.PortXmitDiscards=20046',
            'PerformanceSet "h2"[1] PortCounters.LinkDownedCounter=3',
        ):
            assert "has been set to" in the_lab.console_cmd(cmd)
        yield the_lab
    finally:
        the_lab.stop()


def _discover(lab: Lab) -> Fabric:
    return parse_ibnetdiscover(lab.tool(["ibnetdiscover"]).stdout.splitlines(), "ibnetdiscover")


def _by_port(result: CollectionResult) -> dict[tuple[Guid | None, int], dict[str, int]]:
    return {(s.guid, s.port): dict(s.values) for s in result.samples}


@pytest.mark.lab
def test_lab_collect_reads_every_cabled_port_with_the_injected_values(lab: Lab) -> None:
    fabric = _discover(lab)
    result = collect_fabric(lab.tool, fabric, 1000.0)
    cabled = {(g, p) for g in fabric.nodes for p, _, _ in fabric.neighbours(g)}
    assert len(cabled) == 16
    got = _by_port(result)
    assert set(got) == cabled and result.unreachable == () and result.problems == ()
    assert got[(LEAF1, 3)]["symbol_errors"] == 65535
    assert got[(SPINE, 4)]["xmit_discards"] == 20046
    assert got[(H[2], 1)]["link_downed"] == 3  # printed by port GUID 0x100003, mapped back to the node
    assert got[(H[1], 1)]["symbol_errors"] == 0  # checked and not listed: zero, not unknown
    assert all(s.extended and all(k in s.values for k in ERROR_COUNTERS) for s in result.samples)
    assert all(got[key]["xmit_pkts"] > 0 for key in cabled)  # every cable carried discovery MADs
    assert set(result.raw) == {tuple(a) for a in ibqueryerrors_argv()}
    assert "GUID 0x200000 port 3" in result.raw[tuple(ibqueryerrors_argv()[1])].stdout


@pytest.mark.lab
def test_lab_frame_has_the_contract_columns_and_dtypes(lab: Lab) -> None:
    fabric = _discover(lab)
    frame = to_frame(collect_fabric(lab.tool, fabric, 1234.5), snapshot_id=7)
    assert tuple(frame.columns) == fields.FRAME_COLUMNS
    assert len(frame) == 16 and frame["reachable"].all()
    assert str(frame["snapshot"].dtype) == "int64" and str(frame["time"].dtype) == "float64"
    assert str(frame["port"].dtype) == "int64" and str(frame["reachable"].dtype) == "bool"
    for col in ("lid", "peer_port", *fields.COUNTER_NAMES):
        assert str(frame[col].dtype) == "Int64", col
    row = frame[(frame["guid"] == LEAF1) & (frame["port"] == 3)].iloc[0]
    assert (row["peer_guid"], row["peer_port"], row["symbol_errors"], row["time"]) == (
        SPINE,
        1,
        65535,
        1234.5,
    )


@pytest.mark.lab
def test_lab_hca_dropping_every_mad_is_unreachable(lab: Lab) -> None:
    fabric = _discover(lab)
    healthy = collect_fabric(lab.tool, fabric, 0.0)
    last_lids = {s.guid: s.lid for s in healthy.samples if s.guid is not None and s.lid is not None}
    # ibnetdiscover now gives CA LIDs; a topology without them (older captures) cannot fall back
    no_lids = Fabric.build(
        [replace(n, lid=None) if n.guid == H[3] else n for n in fabric.nodes.values()], fabric.links
    )
    lab.console_cmd('Error "h3"[1] 100')
    try:
        blind = collect_fabric(lab.tool, no_lids, 0.0)
        result = collect_fabric(lab.tool, no_lids, 0.0, lids=last_lids)
    finally:
        lab.console_cmd('Error "h3"[1] 0')
    # without a LID for h3 the reason is ibqueryerrors' own stderr
    [gone] = blind.unreachable
    assert (gone.guid, gone.port) == (H[3], 1) and "bad status 110" in gone.reason
    assert not any(a[0] == "perfquery" for a in blind.raw)
    # with last run's LIDs the perfquery fallback asks h3 directly and says why it failed too
    [gone] = result.unreachable
    assert (gone.guid, gone.port, gone.lid) == (H[3], 1, last_lids[H[3]])
    assert "iberror: failed" in gone.reason
    assert gone.reason.index("bad status 110") < gone.reason.index("perfquery fallback (LID")
    assert [a[0] for a in result.raw].count("perfquery") == 2
    assert result.samples[0].values["symbol_errors"] == 0  # the error pass still counts for the others
    assert (LEAF2, 1) in _by_port(result)  # the switch end of the same cable still answers
    frame = to_frame(result, 1)
    dead = frame[~frame["reachable"]]
    assert len(dead) == 1 and dead["symbol_errors"].isna().all() and dead.iloc[0]["peer_guid"] == LEAF2


@pytest.mark.lab
def test_lab_unlinked_hca_is_unreachable(lab: Lab) -> None:
    fabric = _discover(lab)  # discovered before the cable goes
    assert "sim>" in lab.console_cmd('Unlink "h4"[1]')
    try:
        time.sleep(0.5)  # opensm resweeps on the trap
        result = collect_fabric(lab.tool, fabric, 0.0)
    finally:
        lab.console_cmd('ReLink "h4"[1]')
    assert [(u.guid, u.port) for u in result.unreachable] == [(H[4], 1)]
    assert (LEAF2, 2) in _by_port(result)  # a down port still has counters


@pytest.mark.lab
def test_lab_perfquery_approach_agrees_on_error_counters(lab: Lab) -> None:
    fabric = _discover(lab)
    first = collect_fabric(lab.tool, fabric, 0.0)
    lids = {s.guid: s.lid for s in first.samples if s.guid is not None and s.lid is not None}
    assert lids[H[1]] is not None  # learnt from -r
    other = collect_fabric(lab.tool, fabric, 0.0, approach="perfquery", lids=lids)
    a, b = _by_port(first), _by_port(other)
    assert set(a) == set(b) and other.unreachable == ()
    for key in a:
        assert {k: a[key][k] for k in ERROR_COUNTERS} == {k: b[key][k] for k in ERROR_COUNTERS}, key


# -- failures a lab cannot produce: fake runners at the transport boundary -----------------------
SWITCH = Guid("0x506b4b03005c2740")
CA1, CA2 = Guid("0x0000000000000a01"), Guid("0x0000000000000a02")


def _small_fabric() -> Fabric:
    nodes = [
        Node(SWITCH, NodeKind.SWITCH, "MF0;leaf:MQM8700/U1", 36, lid=Lid(2052)),
        Node(CA1, NodeKind.HCA, "n1 mlx5_0", 1),
        Node(CA2, NodeKind.HCA, "n2 mlx5_0", 1),
    ]
    links = [
        Link(PortRef(SWITCH, 1), PortRef(CA1, 1), 4, "EDR"),
        Link(PortRef(SWITCH, 2), PortRef(CA2, 1), 4, "EDR"),
    ]
    return Fabric.build(nodes, links)


REAL_PQ = (REALDATA / "perfquery/treydock-perfquery-l-x-switch-port-errors-xmitdiscards.txt").read_text()


def test_perfquery_killed_mid_output_keeps_what_arrived() -> None:
    """The -x read dies while printing (SIGKILL, rc -9); the plain read never gets to run."""
    cut = REAL_PQ[: REAL_PQ.index("PortXmitWait:") + len("PortXmitWa")]
    calls: list[tuple[str, ...]] = []

    def run_tool(argv: Sequence[str]) -> CommandResult:
        calls.append(tuple(argv))
        if "-x" in argv:
            return CommandResult("local", tuple(argv), -9, cut, "", 0.1)
        raise CommandFailed(argv, None, "perfquery: command not found")

    result = collect_fabric(run_tool, _small_fabric(), 5.0, approach="perfquery")
    assert calls == [tuple(a) for a in perfquery_argv(2052, [1, 2])]
    [sample] = result.samples
    assert (sample.guid, sample.port, sample.values["xmit_discards"], sample.values["link_downed"]) == (
        SWITCH,
        1,
        20046,
        1,
    )
    assert "xmit_wait" not in sample.values  # the line was cut: unknown, not 0
    assert len(result.problems) == 1 and result.problems[0].lineno == 25
    unreachable = {(u.guid, u.port): u.reason for u in result.unreachable}
    assert set(unreachable) == {(SWITCH, 2), (CA1, 1), (CA2, 1)}
    assert (
        "command not found" in unreachable[(SWITCH, 2)]
        and unreachable[(CA1, 1)] == "no LID known for perfquery"
    )
    assert result.raw[calls[0]].stdout == cut and result.raw[calls[1]].exit_code == -1
    frame = to_frame(result, 3)
    assert frame["reachable"].sum() == 1 and frame["xmit_wait"].isna().all()


# Real lab output (ibqueryerrors --counters -r on ibsim), with one line garbled as a dying pipe might.
COUNTERS_TEXT = """\
Data Counters for 0x506b4b03005c2740 "MF0;leaf:MQM8700/U1"
   GUID 0x506b4b03005c2740 port 1: [PortXmitData == 2880 (11.250KB)] [PortRcvData == 2880 (11.250KB)] [PortXmitPkts == 40 (40.000)] [PortRcvPkts == 40 (40.000)]
       Link info:   2052   1[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>  0x0000000000000a01      7    1[  ] "n1 mlx5_0" (Could be 12X Could be 10.0 Gbps)
   GUID 0x506b4b03005c2740 port 2: [PortXmitData == 2\x00\x00\x00
Data Counters for 0x0000000000000a01 "n1 mlx5_0"
   GUID 0xa01 port 1: [PortXmitData == 2808 (10.969KB)] [PortRcvData == 2880 (11.250KB)] [PortXmitPkts == 39 (39.000)] [PortRcvPkts == 40 (40.000)]

## Summary: 3 nodes checked, 0 bad nodes found
##          3 ports checked, 0 ports have errors beyond threshold
"""


def test_garbage_line_is_reported_and_the_other_ports_still_count() -> None:
    def run_tool(argv: Sequence[str]) -> CommandResult:
        if "--counters" in argv:
            return CommandResult("local", tuple(argv), 0, COUNTERS_TEXT, "", 0.1)
        raise CommandFailed(argv, -9, "ibqueryerrors: timed out after 60 s")

    result = collect_fabric(run_tool, _small_fabric(), 5.0)
    got = _by_port(result)
    assert got[(SWITCH, 1)]["xmit_data"] == 2880 and got[(CA1, 1)]["rcv_pkts"] == 40
    assert "symbol_errors" not in got[(SWITCH, 1)]  # error pass died: error counters unknown, not 0
    assert [p.lineno for p in result.problems] == [4]
    assert any("timed out" in n for n in result.notes)
    # port 2 lost its line; CA2 never printed: the fallback perfquery (LID 2052 known) was tried
    unreachable = {(u.guid, u.port) for u in result.unreachable}
    assert (CA2, 1) in unreachable


def test_no_sm_is_not_clean() -> None:
    """ibqueryerrors without an SM exits 0 and prints nothing on stdout (seen for real in the lab)."""

    def run_tool(argv: Sequence[str]) -> CommandResult:
        if argv[0] == "ibqueryerrors":
            return CommandResult(
                "local", tuple(argv), 0, "", "ibwarn: [1] sa_get_handle: No SM/SA found on port\n", 0.1
            )
        return CommandResult(
            "local", tuple(argv), 255, "", "perfquery: iberror: failed: classportinfo query\n", 0.1
        )

    result = collect_fabric(run_tool, _small_fabric(), 5.0)
    assert result.samples == ()
    reasons = {(u.guid, u.port): u.reason for u in result.unreachable}
    assert len(reasons) == 4
    assert "No SM/SA found" in reasons[(CA1, 1)] and "iberror: failed" in reasons[(SWITCH, 1)]


def test_unreachable_reason_keeps_the_pass_failure_and_adds_the_fallback() -> None:
    """ibqueryerrors times out on CA2 (an SMP error on stderr), perfquery on its LID fails too."""
    errors_text = COUNTERS_TEXT.replace(
        "port 2: [PortXmitData == 2\x00\x00\x00", "port 2: [PortXmitData == 7]"
    )

    def run_tool(argv: Sequence[str]) -> CommandResult:
        if argv[0] == "ibqueryerrors":
            smp = "./libibnetdisc/query_smp.c:186; umad (DR path slid 0; dlid 0; 0,2 Attr 0x11:0) bad status 110; Connection timed out\n"
            text = errors_text if "--counters" in argv else errors_text.replace("Data Counters", "Errors")
            return CommandResult("local", tuple(argv), 0, text, smp, 0.1)
        return CommandResult(
            "local", tuple(argv), 255, "perfquery: iberror: failed: classportinfo query\n", "", 0.1
        )

    fabric = _small_fabric()
    nodes = [replace(n, lid=Lid(9)) if n.guid == CA2 else n for n in fabric.nodes.values()]
    result = collect_fabric(run_tool, Fabric.build(nodes, fabric.links), 5.0)
    [gone] = result.unreachable
    assert (gone.guid, gone.port, gone.lid) == (CA2, 1, 9)
    assert gone.reason == (
        "not in ibqueryerrors output; it reported: ./libibnetdisc/query_smp.c:186; umad (DR path slid 0;"
        " dlid 0; 0,2 Attr 0x11:0) bad status 110; Connection timed out;"
        " perfquery fallback (LID 9): perfquery: iberror: failed: classportinfo query"
    )
    got = _by_port(result)
    assert got[(SWITCH, 2)]["xmit_data"] == 7 and got[(SWITCH, 2)]["symbol_errors"] == 0
    assert list(got[(SWITCH, 1)]) == list(fields.COUNTER_NAMES)  # canonical order after the merge


# -- the merge: store rows straight from the two passes, samples by the same rules ---------------
LAB_LEAF1, LAB_SPINE = Guid("0x0000000000200000"), Guid("0x0000000000200002")
LAB_H1, LAB_H2 = Guid("0x0000000000100000"), Guid("0x0000000000100002")


def _lab_fabric() -> Fabric:
    """The cabling behind LAB_COUNTERS_R / LAB_ERRORS_R (h2 answers the error pass by port GUID)."""
    nodes = [
        Node(LAB_LEAF1, NodeKind.SWITCH, "MF0;leaf1:MQM8790/U1", 36, lid=Lid(2)),
        Node(LAB_SPINE, NodeKind.SWITCH, "MF0;spine1:MQM8790/U1", 36, lid=Lid(4)),
        Node(LAB_H1, NodeKind.HCA, "h1 mlx5_0", 1, lid=Lid(1)),
        Node(LAB_H2, NodeKind.HCA, "h2 mlx5_0", 1),
    ]
    links = [
        Link(PortRef(LAB_LEAF1, 1), PortRef(LAB_H1, 1), 4, "SDR"),
        Link(PortRef(LAB_LEAF1, 2), PortRef(LAB_H2, 1), 4, "SDR"),
        Link(PortRef(LAB_LEAF1, 3), PortRef(LAB_SPINE, 4), 4, "SDR"),
    ]
    return Fabric.build(nodes, links)


def _pass_runner(counters: str, errors: str, ran: list[tuple[str, ...]] | None = None) -> RunTool:
    """The two passes print these texts; the spine (which neither pass reached) does not answer perfquery."""

    def run_tool(argv: Sequence[str]) -> CommandResult:
        if ran is not None:
            ran.append(tuple(argv))
        if argv[0] == "perfquery":
            return CommandResult(
                "local", tuple(argv), 255, "", "perfquery: iberror: failed: classportinfo query\n", 0.1
            )
        return CommandResult("local", tuple(argv), 1, counters if "--counters" in argv else errors, "", 0.1)

    return run_tool


def _collect_texts(fabric: Fabric, counters: str, errors: str) -> CollectionResult:
    return collect_fabric(_pass_runner(counters, errors), fabric, 7.0)


def _rows_by_the_sample_rules(result: CollectionResult) -> tuple[tuple[object, ...], ...]:
    rows = []
    for s in result.samples:
        assert s.guid is not None
        rows.append(sample_row(s, result.peers[(s.guid, s.port)], result.time))
    return tuple(rows)


def test_rows_are_the_merged_ports_in_store_order() -> None:
    result = _collect_texts(_lab_fabric(), LAB_COUNTERS_R, LAB_ERRORS_R)
    assert [r[:2] for r in result.rows] == [(LAB_H1, 1), (LAB_H2, 1), (LAB_LEAF1, 1), (LAB_LEAF1, 3)]
    by = {r[:2]: dict(zip(PORT_COUNTER_FIELDS, r, strict=True)) for r in result.rows}
    leaf3 = by[(LAB_LEAF1, 3)]
    assert (leaf3["lid"], leaf3["peer_guid"], leaf3["peer_port"], leaf3["reachable"]) == (2, LAB_SPINE, 4, 1)
    assert (leaf3["symbol_errors"], leaf3["local_link_integrity_errors"], leaf3["xmit_wait"]) == (
        65535,
        15,
        123456,
    )
    assert leaf3["xmit_data"] is None  # the data pass printed no line for port 3
    leaf1 = by[(LAB_LEAF1, 1)]
    assert (leaf1["xmit_data"], leaf1["rcv_pkts"], leaf1["symbol_errors"], leaf1["time"]) == (
        20088,
        278,
        0,
        7.0,
    )
    # the error pass checked 7 nodes, the data pass 2: unlisted error counters are 0, not unknown
    assert all(by[(LAB_H1, 1)][n] == 0 for n in ERROR_COUNTERS)
    # h2 is only in the error pass, printed by port GUID 0x100003: its node found by the cable
    # from leaf1 port 2 (the model has no LID 5); error counters read, data counters unknown
    h2 = by[(LAB_H2, 1)]
    assert (h2["lid"], h2["link_downed"], h2["symbol_errors"], h2["xmit_data"]) == (5, 3, 0, None)
    unreachable = {(u.guid, u.port): u.reason for u in result.unreachable}
    assert set(unreachable) == {(LAB_LEAF1, 2), (LAB_SPINE, 4)}
    assert "iberror: failed" in unreachable[(LAB_SPINE, 4)]  # the perfquery fallback was tried
    assert result.rows == _rows_by_the_sample_rules(result)


@pytest.mark.parametrize("seed", range(40))
def test_rows_equal_the_sample_rules_on_damaged_passes(seed: int) -> None:
    """Whatever the fast pattern leaves to the line parser, rows and samples agree."""
    rng = random.Random(seed)
    texts = []
    for text in (LAB_COUNTERS_R, LAB_ERRORS_R):
        lines = text.splitlines()
        for _ in range(rng.randint(1, 4)):
            j = rng.randrange(len(lines))
            line = lines[j]
            k = rng.randrange(len(line) + 1)
            lines[j] = rng.choice(
                [
                    line[:k],
                    line.replace("] [", "]  ["),
                    line.replace(" == ", "=="),
                    "> " + line,
                    line.replace("(78.469KB)", "(x)"),
                    line.replace("0x0000000000200000      2    2[", "0x200000 2 2["),
                    line.replace("GUID 0x100003", "GUID 0x100002"),
                    line + " [PortXmitDiscards == 0x10]",
                ]
            )
        texts.append("\n".join(lines) + "\n")
    result = _collect_texts(_lab_fabric(), *texts)
    assert result.rows == _rows_by_the_sample_rules(result)
    assert len(result.rows) + len(result.unreachable) == 6


def test_store_counters_keeps_rows_raw_texts_and_the_collector_state(tmp_path: Path) -> None:
    ran: list[tuple[str, ...]] = []
    run_tool = _pass_runner(LAB_COUNTERS_R, LAB_ERRORS_R, ran)
    assert gc.isenabled()
    with Store.open(tmp_path / "s.db") as store:
        stored = store_counters(store, run_tool, _lab_fabric(), lambda: 9.0, "lab", None)
        assert gc.isenabled()  # paused for the collection only
        assert (stored.ports_read, stored.unreachable, stored.taken_at) == (4, 2, 9.0)
        rows = store.load_port_counters(stored.snapshot_id)
        assert [(r.guid, r.port, r.reachable) for r in rows] == [
            (LAB_H1, 1, True),
            (LAB_H2, 1, True),
            (LAB_LEAF1, 1, True),
            (LAB_LEAF1, 2, False),
            (LAB_LEAF1, 3, True),
            (LAB_SPINE, 4, False),
        ]
        assert rows[4].counters["symbol_errors"] == 65535 and rows[2].counters["xmit_data"] == 20088
        assert "iberror: failed" in (rows[5].unreachable_reason or "")
        texts = {store.load_capture(c.id).text for c in store.snapshot_captures(stored.snapshot_id)}
        assert {LAB_COUNTERS_R, LAB_ERRORS_R} <= texts
        assert ran[:2] == [tuple(a) for a in ibqueryerrors_argv()] and ran[2][0] == "perfquery"


def test_a_negative_counter_costs_its_port_not_the_snapshot(tmp_path: Path) -> None:
    # one port's value turned negative (a broken tool or agent): that port is stored unreachable
    # with the reason, every other port of the snapshot is stored as read
    counters = LAB_COUNTERS_R.replace("[PortXmitData == 20088 (78.469KB)]", "[PortXmitData == -5 (bad)]", 1)
    assert counters != LAB_COUNTERS_R
    clean_dir, bad_dir = tmp_path / "clean", tmp_path / "bad"
    with Store.open(clean_dir / "s.db") as store:
        clean = store_counters(
            store, _pass_runner(LAB_COUNTERS_R, LAB_ERRORS_R), _lab_fabric(), lambda: 9.0, "lab", None
        )
        assert (clean.ports_read, clean.unreachable) == (4, 2)
    with Store.open(bad_dir / "s.db") as store:
        stored = store_counters(
            store, _pass_runner(counters, LAB_ERRORS_R), _lab_fabric(), lambda: 9.0, "lab", None
        )
        assert (stored.ports_read, stored.unreachable) == (3, 3)
        rows = {(r.guid, r.port): r for r in store.load_port_counters(stored.snapshot_id)}
    bad = [r for r in rows.values() if r.unreachable_reason and "-5" in r.unreachable_reason]
    assert len(bad) == 1 and not bad[0].reachable and bad[0].counters == {}
    assert (
        bad[0].unreachable_reason == "counter xmit_data read as -5, which no counter can hold: port not read"
    )
    assert sum(r.reachable for r in rows.values()) == 3
