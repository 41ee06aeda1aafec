"""Real tables, real engines: OpenSM routes lab fabrics with each engine that fits, the tables
are read back through the real diag tool (dump_fts in the lab) and judged.

Faults are planted through OpenSM's own ``file`` routing engine: a clean dump is edited (a loop,
a credit loop, a black hole, a skewed table) and the lab's OpenSM loads it (``-R file -U``); the
switches then hold exactly the edited tables. Each fault is found alone; the unedited dump loaded
the same way reports nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from fabric.app.discovery.discover import Discovery, discover
from fabric.app.routes import RoutesCheck, check_routes_of, read_tables
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.lab import simulator as lab
from topology.anomaly import Severity
from topology.model import Guid
from topology.route_findings import (
    CREDIT_LOOP,
    DOWN_UP,
    FORWARDING_LOOP,
    IMBALANCE,
    LONGER_THAN_MINIMAL,
    NO_ROUTE,
)

pytestmark = pytest.mark.lab

ENGINES = ("minhop", "updn", "ftree", "dfsssp")
SPECS = ("fattree-small", "rail-small", "rail-3tier")


@contextmanager
def running(spec: str, name: str, routing: str | None = None, lfts_file: str | None = None) -> Iterator[str]:
    lab.up(spec, (), name=name, routing=routing, lfts_file=lfts_file)
    try:
        yield name
    finally:
        lab.down(name)


def judge(name: str) -> RoutesCheck:
    src = Session(Source.lab(name))
    d = discover(src)
    return check_routes_of(src, d, read_tables(src, d))


def kinds(c: RoutesCheck, at_least: Severity = Severity.WARNING) -> list[str]:
    keep = {Severity.WARNING: ("warning", "error", "critical"), Severity.ERROR: ("error", "critical")}[
        at_least
    ]
    return sorted(f.kind for f in c.report.findings if f.severity.value in keep)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("spec", SPECS)
def test_every_engines_clean_tables_report_no_error(spec: str, engine: str) -> None:
    with running(spec, "rt-eng", routing=engine) as name:
        c = judge(name)
    r = c.report
    assert r.errors == 0, [f.to_dict() for f in r.findings]
    assert not {NO_ROUTE, FORWARDING_LOOP, CREDIT_LOOP, LONGER_THAN_MINIMAL, DOWN_UP} & set(kinds(c))
    assert (
        r.tables == f"dump_fts on lab {name}" and r.summary["switches_with_tables"] == r.summary["switches"]
    )
    # the SM's log says which engine configured the switches, and the tables keep its rules
    assert r.engine.sm is not None and r.engine.sm.engine == engine and not r.engine.sm.failed
    assert engine in r.engine.consistent
    assert not r.credit.found and r.credit.dependencies > 0


def test_a_fallback_is_an_error_naming_both_engines() -> None:
    with running("fattree-small", "rt-fall", routing="torus-2QoS,minhop") as name:
        c = judge(name)
    (f,) = [f for f in c.report.findings if f.severity is Severity.ERROR]
    assert (
        f.kind == "engine_fallback" and f.detail["failed"] == ["torus-2QoS"] and f.detail["used"] == "minhop"
    )


def test_an_engine_opensm_does_not_have_is_refused_not_routed_by_minhop() -> None:
    """OpenSM comes up on minhop after 'cannot find or setup routing engine': a lab said to run
    another engine would be judged as if it did. The up is refused (exit 2) and nothing is left."""
    from click.testing import CliRunner

    from fabric.cli.main import main

    res = CliRunner().invoke(
        main, ["lab", "up", "--fabric", "fattree-small", "--name", "rt-noeng", "--routing", "nosuch,minhop"]
    )
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.strip() == (
        "ibfab: error: OpenSM has no routing engine 'nosuch' (its log: cannot find or setup routing "
        "engine); give engines it has, such as minhop, updn, ftree, dfsssp, lash"
    )
    assert "rt-noeng" not in [s.name for s in lab.list_labs()]
    with running("fattree-small", "rt-noeng", routing="updn,minhop") as name:  # known names: up
        assert lab.status(name).sm_options == ("-R", "updn,minhop")


# -- planted through OpenSM's file engine -----------------------------------------------------
@dataclass(frozen=True)
class Clean:
    discovery: Discovery
    dump: str  # dump_fts of the lab routed by minhop

    def guid(self, name: str) -> Guid:
        (g,) = [g for g, c in self.discovery.classification.nodes.items() if c.name == name]
        return g

    def lid(self, name: str) -> int:
        lid = self.discovery.fabric.nodes[self.guid(name)].lid
        assert lid is not None
        return lid

    def port(self, switch: str, far: str) -> int:
        g, f = self.guid(switch), self.guid(far)
        return min(p for p, end, _ in self.discovery.fabric.neighbours(g) if end.guid == f)

    def port_of(self, switch: str, lid: int) -> int:
        here = None
        for line in self.dump.splitlines():
            m = re.match(r"^Unicast lids .* guid (0x[0-9a-f]+) ", line)
            if m:
                here = m.group(1)
            elif here == self.guid(switch) and line.startswith(f"0x{lid:04x} "):
                return int(line.split()[1])
        raise AssertionError((switch, lid))


@lru_cache(maxsize=1)
def clean() -> Clean:
    with running("fattree-small", "rt-src") as name:
        return Clean(discover(Session(Source.lab(name))), lab.run_tool(name, ["dump_fts"]).stdout)


def edited(c: Clean, changes: Mapping[tuple[str, int], int | None]) -> str:
    """The clean dump with ``(switch name, LID) -> port`` changed (None: the entry removed)."""
    by_guid = {(c.guid(s), lid): p for (s, lid), p in changes.items()}
    out, here = [], None
    for line in c.dump.splitlines():
        m = re.match(r"^Unicast lids .* guid (0x[0-9a-f]+) ", line)
        if m:
            here = Guid(m.group(1))
        elif here is not None and re.match(r"^0x[0-9a-f]{4} \d{3}", line):
            key = (here, int(line[2:6], 16))
            if key in by_guid:
                port = by_guid[key]
                if port is None:
                    continue
                line = f"{line[:7]}{port:03d}{line[10:]}"
        out.append(line)
    return "\n".join(out) + "\n"


def planted(tmp_path: Path, changes: Mapping[tuple[str, int], int | None]) -> RoutesCheck:
    dump = tmp_path / "lfts.dump"
    dump.write_text(edited(clean(), changes))
    with running("fattree-small", "rt-file", routing="file", lfts_file=str(dump)) as name:
        return judge(name)


def _spine(c: Clean, lid: int) -> str:
    """The spine leaf-01 sends ``lid`` up to in the clean tables."""
    port = c.port_of("leaf-01", lid)
    far = next(e.guid for p, e, _ in c.discovery.fabric.neighbours(c.guid("leaf-01")) if p == port)
    return c.discovery.classification.nodes[far].name


def test_the_clean_dump_loaded_by_the_file_engine_reports_nothing(tmp_path: Path) -> None:
    r = planted(tmp_path, {})
    assert kinds(r) == [] and r.report.engine.sm is not None and r.report.engine.sm.engine == "file"


def test_planted_black_hole_is_found_alone(tmp_path: Path) -> None:
    c = clean()
    dst = c.lid("cn0009 mlx5_0")
    spine = _spine(c, dst)
    r = planted(tmp_path, {(spine, dst): None})
    assert kinds(r) == [NO_ROUTE]
    f = r.report.findings[0]
    assert (f.lid, f.switch, f.detail["reason"]) == (dst, c.guid(spine), "no entry")


def test_planted_forwarding_loop_is_found_alone(tmp_path: Path) -> None:
    c = clean()
    dst = c.lid("cn0009 mlx5_0")
    spine = _spine(c, dst)
    r = planted(
        tmp_path, {(spine, dst): c.port(spine, "leaf-03"), ("leaf-03", dst): c.port("leaf-03", spine)}
    )
    assert kinds(r) == [FORWARDING_LOOP]
    assert set(r.report.findings[0].detail["loop"]) == {c.guid(spine), c.guid("leaf-03")}


def credit_loop_changes(c: Clean) -> dict[tuple[str, int], int | None]:
    """LID a (leaf-01) climbs leaf-02 -> spine-01 -> leaf-03 -> spine-02; LID b (leaf-03) climbs
    leaf-04 -> spine-02 -> leaf-01 -> spine-01: four channels wait on each other in a ring."""
    a, b = c.lid("cn0001 mlx5_0"), c.lid("cn0017 mlx5_0")
    hop = {
        ("leaf-02", a): "spine-01",
        ("spine-01", a): "leaf-03",
        ("leaf-03", a): "spine-02",
        ("spine-02", a): "leaf-01",
        ("leaf-04", b): "spine-02",
        ("spine-02", b): "leaf-01",
        ("leaf-01", b): "spine-01",
        ("spine-01", b): "leaf-03",
    }
    return {(sw, lid): c.port(sw, far) for (sw, lid), far in hop.items()}


def test_planted_credit_loop_is_found_alone(tmp_path: Path) -> None:
    c = clean()
    r = planted(tmp_path, credit_loop_changes(c))
    assert kinds(r, Severity.ERROR) == [CREDIT_LOOP]
    a, b = c.lid("cn0001 mlx5_0"), c.lid("cn0017 mlx5_0")
    assert set(r.report.credit.witnesses) == {a, b}
    assert {h.switch for h in r.report.credit.cycle} == {
        c.guid(n) for n in ("leaf-01", "spine-01", "leaf-03", "spine-02")
    }
    # the warnings that come with it describe the same two routes, nothing else
    assert set(kinds(r)) <= {CREDIT_LOOP, DOWN_UP, LONGER_THAN_MINIMAL, IMBALANCE}
    for f in r.report.findings:
        if f.kind in (DOWN_UP, LONGER_THAN_MINIMAL):
            assert set(f.lids) == {a, b}


def test_planted_skewed_table_is_found_alone(tmp_path: Path) -> None:
    c = clean()
    one = c.port("leaf-01", "spine-01")
    others = [f"cn{n:04d} mlx5_0" for n in range(1, 33)]
    remote = [n for n in others if c.port_of("leaf-01", c.lid(n)) > 8]  # not on leaf-01's own ports
    r = planted(tmp_path, {("leaf-01", c.lid(n)): one for n in remote})
    assert kinds(r) == [IMBALANCE]
    f = r.report.findings[0]
    assert (f.switch, f.port, f.detail["max"], f.detail["idle_cables"]) == (c.guid("leaf-01"), one, 192, 7)
