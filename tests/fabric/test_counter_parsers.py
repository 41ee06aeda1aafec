"""Counter parsers against every real capture, and against real tool output from an ibsim lab."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from fabric.core import fields
from fabric.counters.ibqueryerrors import ORDERED, VALUES, scan_ibqueryerrors
from fabric.counters.parse import (
    parse_ibdiagnet_pm,
    parse_ibqueryerrors,
    parse_perfquery,
    read_ibdiagnet_pm,
    read_ibqueryerrors,
    read_perfquery,
)
from fabric.counters.samples import saturated
from probes.runner import run
from probes.transport import CommandResult
from tests.conftest import REALDATA, realdata_files
from topology.errors import ParseError
from topology.model import Guid

# -- real captures -------------------------------------------------------------------------------
# file name -> (lid, port, extended, {canonical: value}, {other field: value})
PERFQUERY_EXPECT = {
    "infiniband-diags-issue16-perfquery-x-rhel75-zero.txt": (
        10,
        1,
        True,
        dict.fromkeys(fields.COUNTER_NAMES, 0),
        {"QP1Dropped": 0, "PortUnicastXmitPkts": 0},
    ),
    "treydock-perfquery-E-rcverrordetails.txt": (
        1719,
        1,
        False,
        {},
        {"PortLocalPhysicalErrors": 0, "PortLoopingErrors": 0},
    ),
    "treydock-perfquery-l-x-switch-port-errors-xmitdiscards.txt": (
        2052,
        1,
        True,
        {
            "link_downed": 1,
            "xmit_discards": 20046,
            "xmit_wait": 41864608,
            "rcv_switch_relay_errors": 7,
            "symbol_errors": 0,
            "xmit_data": 178791657177235,
            "rcv_pkts": 387654829341,
        },
        {"PortMulticastXmitPkts": 5623645694, "QP1Dropped": 0},
    ),
}


def test_every_perfquery_capture_has_expectations() -> None:
    assert {p.name for p in realdata_files("perfquery")} == set(PERFQUERY_EXPECT)


@pytest.mark.parametrize("path", realdata_files("perfquery"), ids=lambda p: p.name)
def test_perfquery_capture(path: Path) -> None:
    lid, port, extended, values, other = PERFQUERY_EXPECT[path.name]
    [sample] = read_perfquery(str(path), guid="0x506b4b03005c2740")
    assert (sample.lid, sample.port, sample.extended, sample.summed) == (lid, port, extended, False)
    assert sample.guid == "0x506b4b03005c2740"
    for name, value in values.items():
        assert sample.values[name] == value, name
    if not values:
        assert dict(sample.values) == {}  # -E has no canonical counters: all in `other`
    for name, value in other.items():
        assert sample.other[name] == value
    assert "PortSelect" not in sample.other and "CounterSelect2" not in sample.other
    assert saturated(sample) == frozenset()


def test_perfquery_garbled_value_names_source_and_line() -> None:
    text = (REALDATA / "perfquery/treydock-perfquery-l-x-switch-port-errors-xmitdiscards.txt").read_text()
    bad = text.replace("PortXmitDiscards:................20046", "PortXmitDiscards:................20O46")
    with pytest.raises(ParseError) as exc:
        parse_perfquery(bad, "sw.txt")
    assert exc.value.lineno == 19 and "sw.txt:19" in str(exc.value) and "PortXmitDiscards" in str(exc.value)
    problems: list[ParseError] = []
    [sample] = parse_perfquery(bad, "sw.txt", problems=problems)
    assert len(problems) == 1 and "xmit_discards" not in sample.values and sample.values["link_downed"] == 1


def test_perfquery_extended_data_wins_over_32_bit_in_any_order() -> None:
    base = "# Port counters: Lid 2 port 5 (CapMask: 0x1300)\nPortXmitData:....4294967295\nSymbolErrorCounter:....7\n"
    ext = "# Port extended counters: Lid 2 port 5 (CapMask: 0x1300 CapMask2: 0x0000000)\nPortXmitData:.......0x1cbe991a14\n"
    for text in (base + ext, ext + base):
        [s] = parse_perfquery(text, "t")
        assert s.values["xmit_data"] == 123456789012 and s.values["symbol_errors"] == 7 and s.extended
    [only32] = parse_perfquery(base, "t")
    assert not only32.extended and saturated(only32) == {"xmit_data"}  # 32-bit data counter at max


def test_ibqueryerrors_capture() -> None:
    [path] = realdata_files("ibqueryerrors")
    report = read_ibqueryerrors(str(path))
    assert (report.nodes_checked, report.bad_nodes, report.ports_checked, report.ports_with_errors) == (
        4,
        4,
        43,
        14,
    )
    assert report.checked_anything and not report.unreachable and not report.counters_only
    assert len(report.samples) == 14  # 2 + 1 + 2 CA ports, switch ports 0-8
    by = {(str(s.guid), s.port): s for s in report.samples}
    switch = "0x0002c903006e29b0"
    assert dict(by[(switch, 5)].values) == {
        "symbol_errors": 65535,
        "link_error_recovery": 8,
        "link_downed": 2,
        "rcv_switch_relay_errors": 149,
        "xmit_discards": 649,
        "xmit_wait": 84704351,
    }
    assert saturated(by[(switch, 5)]) == {"symbol_errors"}
    assert by[(switch, 5)].node_description == "MF0;ys23ib4:SX6036/U1" and by[(switch, 5)].guid_kind == "node"
    ca = by[("0x7cfe900300179b31", 1)]
    assert ca.guid_kind == "port" and ca.node_description == "dl380g7 mlx4_0"
    assert dict(ca.values) == {"vl15_dropped": 14, "xmit_wait": 4294967295} and saturated(ca) == {"xmit_wait"}
    # the ALL line is a sum, never a port
    [total] = report.sums
    assert total.summed and total.port == 255 and total.values["link_downed"] == 48
    assert all(not s.summed for s in report.samples)


# The collector's two passes as ibsim prints them (``--counters -r`` and the error pass, ``-r``).
LAB_COUNTERS_R = """\
Data Counters for 0x200000 "MF0;leaf1:MQM8790/U1"
   GUID 0x200000 port 1: [PortXmitData == 20088 (78.469KB)] [PortRcvData == 20016 (78.188KB)] [PortXmitPkts == 279 (279.000)] [PortRcvPkts == 278 (278.000)] [PortUnicastXmitPkts == 0 (0.000)] [PortUnicastRcvPkts == 0 (0.000)] [PortMulticastXmitPkts == 0 (0.000)] [PortMulticastRcvPkts == 0 (0.000)]
       Link info:      2   1[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>  0x0000000000100000      1    1[  ] "h1 mlx5_0" (Could be 12X Could be 10.0 Gbps)
   GUID 0x200000 port 5: [PortXmitData == 0 (0.000B)] [PortRcvData == 0 (0.000B)] [PortXmitPkts == 0 (0.000)] [PortRcvPkts == 0 (0.000)] [PortUnicastXmitPkts == 0 (0.000)] [PortUnicastRcvPkts == 0 (0.000)] [PortMulticastXmitPkts == 0 (0.000)] [PortMulticastRcvPkts == 0 (0.000)]
       Link info:      2   5[  ] ==(                Down/ Polling)==>             [  ] "" ( )
Data Counters for 0x100000 "h1 mlx5_0"
   GUID 0x100000 port 1: [PortXmitData == 20088 (78.469KB)] [PortRcvData == 20016 (78.188KB)] [PortXmitPkts == 279 (279.000)] [PortRcvPkts == 278 (278.000)] [PortUnicastXmitPkts == 0 (0.000)] [PortUnicastRcvPkts == 0 (0.000)] [PortMulticastXmitPkts == 0 (0.000)] [PortMulticastRcvPkts == 0 (0.000)]
       Link info:      1   1[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>  0x0000000000200000      2    1[  ] "MF0;leaf1:MQM8790/U1" (Could be 12X Could be 10.0 Gbps)

## Summary: 2 nodes checked, 0 bad nodes found
##          3 ports checked, 0 ports have errors beyond threshold
"""
LAB_ERRORS_R = """\
Errors for 0x200000 "MF0;leaf1:MQM8790/U1"
   GUID 0x200000 port 3: [SymbolErrorCounter == 65535] [LinkDownedCounter == 255] [PortRcvErrors == 42] [LocalLinkIntegrityErrors == 15] [PortXmitWait == 123456]
       Link info:      2   3[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>  0x0000000000200002      4    1[  ] "MF0;spine1:MQM8790/U1" (Could be 12X Could be 10.0 Gbps)
Errors for "h2 mlx5_0"
   GUID 0x100003 port 1: [LinkDownedCounter == 3]
       Link info:      5   1[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>  0x0000000000200000      2    2[  ] "MF0;leaf1:MQM8790/U1" (Could be 12X Could be 10.0 Gbps)

## Summary: 7 nodes checked, 2 bad nodes found
##          30 ports checked, 2 ports have errors beyond threshold
## Thresholds:
## Suppressed:
"""


def _scan_view(text: str | list[str]) -> tuple[object, ...]:
    problems: list[ParseError] = []
    scan = scan_ibqueryerrors(text, "t", problems)
    return (
        [[*acc[:ORDERED], list(acc[VALUES].items())] for acc in scan.ports],
        scan.links,
        scan.failures,
        scan.summary,
        scan.thresholds,
        scan.suppressed,
        scan.counters_only,
        [(p.lineno, p.line, str(p)) for p in problems],
    )


def test_ibqueryerrors_fast_path_reads_the_collector_passes() -> None:
    data = parse_ibqueryerrors(LAB_COUNTERS_R, "c")
    assert data.counters_only and data.nodes_checked == 2 and len(data.samples) == 3
    leaf1 = data.samples[0]
    assert (leaf1.guid, leaf1.port, leaf1.lid, leaf1.extended) == ("0x0000000000200000", 1, 2, True)
    assert dict(leaf1.values) == {"xmit_data": 20088, "rcv_data": 20016, "xmit_pkts": 279, "rcv_pkts": 278}
    assert leaf1.other["PortUnicastXmitPkts"] == 0 and len(leaf1.other) == 4
    assert data.links[(Guid("0x0000000000200000"), 1)].peer_guid == "0x0000000000100000"
    assert data.links[(Guid("0x0000000000200000"), 5)].peer_lid is None
    assert data.samples[2].guid_kind == "node" and data.samples[2].lid == 1
    errors = parse_ibqueryerrors(LAB_ERRORS_R, "e")
    leaf3, h2 = errors.samples
    assert list(leaf3.values) == [
        "symbol_errors",
        "link_downed",
        "rcv_errors",
        "local_link_integrity_errors",
        "xmit_wait",
    ]
    assert leaf3.values["xmit_wait"] == 123456 and not leaf3.extended
    assert (h2.guid, h2.guid_kind, h2.lid, dict(h2.values)) == (
        "0x0000000000100003",
        "port",
        5,
        {"link_downed": 3},
    )


@pytest.mark.parametrize(
    "text",
    [LAB_COUNTERS_R, LAB_ERRORS_R, *(p.read_text() for p in realdata_files("ibqueryerrors"))],
    ids=["lab-counters", "lab-errors", *(p.name for p in realdata_files("ibqueryerrors"))],
)
def test_ibqueryerrors_whole_text_scan_equals_line_by_line(text: str) -> None:
    """The fast pattern only takes lines the strict line parser reads the same way (a list of
    lines always goes line by line), also on damaged copies of the text."""
    assert _scan_view(text) == _scan_view(text.splitlines())
    rng = random.Random(len(text))
    lines = text.splitlines()
    for _ in range(300):
        damaged = list(lines)
        for _ in range(rng.randint(1, 3)):
            j = rng.randrange(len(damaged))
            line = damaged[j]
            k = rng.randrange(len(line) + 1)
            damaged[j] = rng.choice(
                [
                    line[:k],
                    line[:k] + rng.choice(' \t[]=x0()>:#"\r') + line[k + 1 :],
                    f"  {line} ",
                    line.replace(" == ", "=="),
                    line.replace("] [", "]  ["),
                    "> " + line,
                    line.replace("0x", "0x1234567890"),
                ]
            )
        joined = "\n".join(damaged)
        assert _scan_view(joined) == _scan_view(joined.splitlines()), joined


def test_ibqueryerrors_overlong_guid_is_a_parse_error() -> None:
    text = LAB_ERRORS_R.replace("GUID 0x100003", "GUID 0x1000000000000000003")
    with pytest.raises(
        ParseError, match=r"^e:5: ibqueryerrors output: 0x1000000000000000003 is not a 64-bit GUID"
    ):
        parse_ibqueryerrors(text, "e")
    problems: list[ParseError] = []
    report = parse_ibqueryerrors(text, "e", problems=problems)
    assert [p.lineno for p in problems] == [5, 6]  # and its link line belongs to no port
    assert "link info outside a port" in str(problems[1]) and [s.port for s in report.samples] == [3]


REAL_PM = REALDATA / "ibdiagnet/garyli-ndr-272nodes-ibdiagnet2.pm"
REAL_DB = REALDATA / "ibdiagnet/garyli-ndr-272nodes-ibdiagnet2.db_csv"
# files of the same run that carry no per-port counters: the pm parser refuses them at this line
NOT_PM = {
    "garyli-ndr-272nodes-ibdiagnet2.cables": (11, "Source: PHY_DD"),
    "garyli-ndr-272nodes-ibdiagnet2.log": (1, "Running version:"),
    "garyli-ndr-272nodes-ibdiagnet2.net_dump": (15, '"Quantum-2 Mellanox Technologies"'),
    "garyli-ndr-272nodes-ibdiagnet2.sm": (8, "ibdiagnet fabric SM report"),
    "garyli-ndr-skip-run-ibdiagnet2.log": (1, "Running version:"),
}


def test_every_ibdiagnet_capture_is_covered() -> None:
    assert {p.name for p in realdata_files("ibdiagnet")} == {REAL_PM.name, REAL_DB.name, *NOT_PM}


@pytest.mark.parametrize("path", realdata_files("ibdiagnet"), ids=lambda p: p.name)
def test_ibdiagnet_capture(path: Path) -> None:
    if path.name in NOT_PM:
        lineno, start = NOT_PM[path.name]
        with pytest.raises(ParseError) as exc:
            read_ibdiagnet_pm(str(path))
        assert exc.value.lineno == lineno and exc.value.line.strip().startswith(start)
        assert f"{path}:{lineno}" in exc.value.one_line() and "\n" not in exc.value.one_line()
        return
    samples = read_ibdiagnet_pm(str(path))
    assert len(samples) == 542 and all(s.extended for s in samples)
    by = {(str(s.guid), s.port): s for s in samples}
    first = by[("0xb0cf0e0300d33fc0", 1)]
    assert first.lid == 0xB4
    assert first.values["xmit_wait"] == 0xFFFFFFFF and saturated(first) == {"xmit_wait"}
    assert first.values["xmit_data"] == 0x00000045A9712343  # the 64-bit twin, not the saturated 32-bit one
    assert first.values["rcv_pkts"] == 0x000000001249761F
    hca = by[("0xc470bd0300100612", 1)]
    assert hca.lid == 0x49 and hca.values["symbol_errors"] == 65535 and hca.values["rcv_errors"] == 0x83
    assert "symbol_errors" in saturated(hca)
    # the counts SOURCES.tsv gives for this run
    assert sum(1 for s in samples if s.values["link_downed"] > 0) == 264
    assert sum(1 for s in samples if s.values["xmit_discards"] > 0) == 263
    assert sum(1 for s in samples if s.values["symbol_errors"] > 0) == 14
    # NA (port_looping_errors everywhere; -1 in db_csv) is absent, never 0
    assert all("port_looping_errors" not in s.other and "PortLoopingErrors" not in s.other for s in samples)
    if path == REAL_PM:
        assert hca.port_name == "is-north-7-compute-25/mlx5_9/B143D0F0/0/0/1"
        assert "retransmission_per_sec" not in by[("0x5c25730300e6706e", 1)].other  # NA on HCAs
    else:
        assert first.node_description == "MF0;ib-switch-sequoia:MQM9700/U1"


def test_ibdiagnet_pm_and_db_csv_of_one_run_agree() -> None:
    pm = {(s.guid, s.port): (s.lid, dict(s.values)) for s in read_ibdiagnet_pm(str(REAL_PM))}
    db = {(s.guid, s.port): (s.lid, dict(s.values)) for s in read_ibdiagnet_pm(str(REAL_DB))}
    assert pm == db


def test_ibdiagnet_pm_bad_hex_is_one_line_error() -> None:
    text = "Port=1 Lid=0x0002 GUID=0x0002c903006e29b0 Device=1 Port Name=x\nsymbol_error_counter=0xZZ\n"
    with pytest.raises(
        ParseError,
        match=r"^pm:2: ibdiagnet output: GUID 0x0002c903006e29b0 port 1: symbol_error_counter has no numeric value",
    ):
        parse_ibdiagnet_pm(text, "pm")


def test_db_csv_pm_info_text_column_is_no_counter_but_a_bad_counter_is_refused() -> None:
    real = REAL_DB.read_text()
    start, end = real.index("START_PM_INFO\n"), real.index("END_PM_INFO\n")
    header, *rows = real[start + len("START_PM_INFO\n") : end].splitlines()
    want = {(s.guid, s.port): dict(s.values) for s in parse_ibdiagnet_pm(real, "db")}
    # A newer ibdiagnet's text column (here after the counters): no counter, every row still read.
    extra = "\n".join([f"{header},PortState", *(f"{r},Active" for r in rows)])
    moved = real[:start] + "START_PM_INFO\n" + extra + "\n" + real[end:]
    assert {(s.guid, s.port): dict(s.values) for s in parse_ibdiagnet_pm(moved, "db")} == want
    # A counter that is not a number still refuses its row, naming the line.
    column = header.split(",").index("SymbolErrorCounter")
    cells = rows[0].split(",")
    cells[column] = "lots"
    bad = (
        real[:start] + "START_PM_INFO\n" + "\n".join([header, ",".join(cells), *rows[1:]]) + "\n" + real[end:]
    )
    with pytest.raises(ParseError, match="SymbolErrorCounter 'lots' is not a number") as err:
        parse_ibdiagnet_pm(bad, "db")
    assert err.value.lineno == real[:start].count("\n") + 3


# -- the lab: real tools against ibsim -----------------------------------------------------------
UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
LAB_NET = """\
Ca 1 "h1" # "h1 mlx5_0"
[1] "leaf1"[1]

Ca 1 "h2" # "h2 mlx5_0"
[1] "leaf1"[2]

Ca 1 "h3" # "h3 mlx5_0"
[1] "leaf2"[1]

Ca 1 "h4" # "h4 mlx5_0"
[1] "leaf2"[2]

Switch 8 "leaf1" # "MF0;leaf1:MQM8790/U1" enhanced port 0 lid 0 lmc 0
[1] "h1"[1]
[2] "h2"[1]
[3] "spine1"[1]
[4] "spine1"[2]

Switch 8 "leaf2" # "MF0;leaf2:MQM8790/U1" enhanced port 0 lid 0 lmc 0
[1] "h3"[1]
[2] "h4"[1]
[3] "spine1"[3]
[4] "spine1"[4]

Switch 8 "spine1" # "MF0;spine1:MQM8790/U1" enhanced port 0 lid 0 lmc 0
[1] "leaf1"[3]
[2] "leaf1"[4]
[3] "leaf2"[3]
[4] "leaf2"[4]
"""


class Lab:
    """ibsim (+ opensm unless ``sm=False``) in ``root``; every process stopped by its PID."""

    def __init__(self, root: Path, net: str = LAB_NET, sm: bool = True) -> None:
        for tool in ("ibsim", "opensm", "perfquery", "ibqueryerrors"):
            if shutil.which(tool) is None or not os.path.exists(UMAD2SIM):
                pytest.skip(f"{tool} / libumad2sim not installed")
        self.root = root
        self.sock = f"ibfabt_{os.getpid()}_{time.monotonic_ns() % 10**9}"
        (root / "fabric.net").write_text(net)
        os.mkfifo(root / "console.fifo")
        self.console = os.open(root / "console.fifo", os.O_RDWR)
        self.out = open(root / "ibsim.out", "wb")  # noqa: SIM115 - lives as long as the lab
        self.err = open(root / "ibsim.err", "wb")  # noqa: SIM115
        env = {**os.environ, "IBSIM_SOCKNAME": self.sock}
        self.procs = [
            subprocess.Popen(
                ["ibsim", "-s", "fabric.net"],
                stdin=self.console,
                stdout=self.out,
                stderr=self.err,
                cwd=root,
                env=env,
            )
        ]
        self._wait_for(root / "ibsim.out", "sim>", 10)
        if sm:
            osm_env = {**env, "LD_PRELOAD": UMAD2SIM, "OSM_TMP_DIR": str(root), "OSM_CACHE_DIR": str(root)}
            log = root / "osm.log"
            self.procs.append(
                subprocess.Popen(
                    ["opensm", "-d", "2", "-f", str(log)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    cwd=root,
                    env=osm_env,
                )
            )
            self._wait_for(log, "SUBNET UP", 60)

    def _wait_for(self, path: Path, text: str, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if path.exists() and text in path.read_text(errors="replace"):
                return
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"lab: {text!r} not seen in {path} within {seconds} s")

    def tool(self, argv: Sequence[str]) -> CommandResult:
        env = {"LD_PRELOAD": UMAD2SIM, "IBSIM_SOCKNAME": self.sock}
        return run(argv, env=env, cwd=str(self.root), check=False, timeout=60)

    def console_cmd(self, line: str) -> str:
        """Run one console command and return the simulator's reply."""
        before = (self.root / "ibsim.out").read_text(errors="replace")
        os.write(self.console, (line + "\n").encode())
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            now = (self.root / "ibsim.out").read_text(errors="replace")
            if len(now) > len(before) and now.rstrip().endswith("sim>"):
                return now[len(before) :]
            time.sleep(0.02)
        raise AssertionError(f"lab console: no reply to {line!r}")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        os.close(self.console)
        self.out.close()
        self.err.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    the_lab = Lab(tmp_path_factory.mktemp("counterlab"))
    try:
        for cmd in (
            'PerformanceSet "leaf1"[3] PortCounters.SymbolErrorCounter=70000',
            'PerformanceSet "leaf1"[3] PortCounters.LinkDownedCounter=300',
            'PerformanceSet "leaf1"[3] PortCounters.PortRcvErrors=42',
            'PerformanceSet "leaf1"[3] PortCounters.PortXmitWait=123456',
            'PerformanceSet "leaf1"[3] PortCounters.LocalLinkIntegrityErrors=99',
            'PerformanceSet "leaf1"[8] PortCountersExtended.PortXmitData=123456789012',
            'PerformanceSet "h2"[1] PortCounters.LinkDownedCounter=3',
        ):
            assert "has been set to" in the_lab.console_cmd(cmd)
        yield the_lab
    finally:
        the_lab.stop()


def _lid(lab: Lab, desc: str) -> int:
    from topology.ibnetdiscover import parse_ibnetdiscover

    fabric = parse_ibnetdiscover(lab.tool(["ibnetdiscover"]).stdout.splitlines(), "ibnetdiscover")
    lid = fabric.find(desc).lid
    assert lid is not None
    return lid


LEAF1 = "MF0;leaf1:MQM8790/U1"
PLANTED = {
    "symbol_errors": 65535,
    "link_downed": 255,
    "rcv_errors": 42,
    "xmit_wait": 123456,
    "local_link_integrity_errors": 15,
}


@pytest.mark.lab
def test_lab_perfquery_plain_reads_the_planted_and_clamped_values(lab: Lab) -> None:
    lid = _lid(lab, LEAF1)
    r = lab.tool(["perfquery", str(lid), "3"])
    assert r.exit_code == 0
    [s] = parse_perfquery(r.stdout, "perfquery", guid="0x200000")
    assert (s.lid, s.port, s.extended) == (lid, 3, False)
    assert {k: s.values[k] for k in PLANTED} == PLANTED
    assert s.values["rcv_constraint_errors"] == 0
    assert saturated(s) == {"symbol_errors", "link_downed", "local_link_integrity_errors"}


@pytest.mark.lab
def test_lab_perfquery_x_loop_and_plain_merge_with_64_bit_data(lab: Lab) -> None:
    lid = _lid(lab, LEAF1)
    ext = lab.tool(["perfquery", "-x", "-l", str(lid), "1-8"])
    base = lab.tool(["perfquery", "-l", str(lid), "1-8"])
    assert ext.exit_code == base.exit_code == 0
    samples = {s.port: s for s in parse_perfquery(ext.stdout + "\n" + base.stdout, "pq")}
    assert sorted(samples) == list(range(1, 9))
    assert (
        samples[8].values["xmit_data"] == 123456789012 and samples[8].extended
    )  # unused port: no MAD traffic
    assert {k: samples[3].values[k] for k in PLANTED} == PLANTED
    assert samples[1].values["symbol_errors"] == 0
    # ibsim's -x has no error counters (CapMask2 0): they come from the plain read only
    assert "symbol_errors" not in parse_perfquery(ext.stdout, "x")[2].values


@pytest.mark.lab
def test_lab_perfquery_all_ports_is_a_sum_not_a_port(lab: Lab) -> None:
    lid = _lid(lab, LEAF1)
    r = lab.tool(["perfquery", "-a", str(lid)])
    assert parse_perfquery(r.stdout, "pq") == []
    [total] = parse_perfquery(r.stdout, "pq", keep_sums=True)
    assert total.summed and total.port == 255 and total.values["symbol_errors"] == 65535


@pytest.mark.lab
def test_lab_ibqueryerrors_data(lab: Lab) -> None:
    r = lab.tool(["ibqueryerrors", "--data"])
    assert r.exit_code == 1  # it found errors
    report = parse_ibqueryerrors(r.stdout + r.stderr, "ibqueryerrors")
    assert report.nodes_checked == 7 and report.checked_anything and not report.unreachable
    by = {(s.node_description, s.port): s for s in report.samples}
    leaf = by[(LEAF1, 3)]
    assert leaf.guid_kind == "node" and leaf.guid == "0x0000000000200000"
    assert {k: leaf.values[k] for k in PLANTED} == PLANTED
    assert leaf.extended and leaf.values["xmit_data"] > 0  # --data adds the 64-bit data counters
    h2 = by[("h2 mlx5_0", 1)]
    assert h2.guid_kind == "port" and h2.values["link_downed"] == 3  # CAs are printed by port GUID
    assert [s.port for s in report.sums] == [255]


@pytest.mark.lab
def test_lab_ibqueryerrors_counters_lists_every_port_with_64_bit_data(lab: Lab) -> None:
    r = lab.tool(["ibqueryerrors", "--counters"])
    report = parse_ibqueryerrors(r.stdout + r.stderr, "ibqueryerrors")
    assert report.counters_only and report.nodes_checked == 7
    assert len(report.samples) == 4 + 3 * 9  # 4 CA ports, 3 switches x ports 0-8
    by = {(str(s.guid), s.port): s for s in report.samples}
    assert by[("0x0000000000200000", 8)].values["xmit_data"] == 123456789012


@pytest.mark.lab
def test_lab_ibqueryerrors_without_sm_is_not_clean(tmp_path: Path) -> None:
    lab = Lab(tmp_path, sm=False)
    try:
        r = lab.tool(["ibqueryerrors"])
    finally:
        lab.stop()
    assert r.exit_code == 0 and r.stdout.strip() == ""  # the trap: silent success
    report = parse_ibqueryerrors(r.stdout + "\n" + r.stderr, "ibqueryerrors")
    assert not report.checked_anything and report.samples == ()
    assert any("No SM/SA found" in u.reason for u in report.unreachable)
