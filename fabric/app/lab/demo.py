"""The demo: a lab rail-optimized fabric with planted faults and a service leaf (a login and a
storage node), and what ibfab finds in it.

``ibfab demo`` (and ``make demo``) call :func:`run_demo`; each step yields a :class:`DemoStep`
with what it did, what it found and whether that matches what was planted, so the CLI can print
as it goes (:func:`fabric.present.demo.render_step` makes the text). Everything runs through the
same use cases as the CLI: the real ibnetdiscover against ibsim + OpenSM, the real store.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fabric.app.discovery.discover import discover
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.lab import driver as lab
from topology.generate_text import simulator_notes

if TYPE_CHECKING:
    from fabric.app.discovery.discover import Discovery
    from fabric.app.health.assess import AssessedHealth
    from fabric.app.health.collect import SnapshotOutcome
    from fabric.store import Store
    from probes.sweep import SweepOutcome
    from topology.design import Design
    from topology.model import Fabric, Guid, Link, LinkKey
    from topology.plancheck import PlanCheck

DEMO_LAB = "demo"
# Eight DGX-like nodes in two units, and a service leaf (two cables to one spine) carrying a login
# node and a storage node: discovery must call those two service hosts and judge the service leaf
# against its own kind (no missing-link anomaly for its design).
DEMO_SPEC = "rail-small:service=1"
# The cable-plan step's own lab: a clean fabric the plan is exported from, then the same fabric
# with one miswire planted (the demo lab itself stays up, with all its faults, for the TUI).
PLAN_LAB = "demo-plan"
PLAN_FAULT = "miswire:dgx-0002:1:2"
# The triage step's own lab: a clean fabric of eight hosts with one simulated PCIe-bound node
# planted, and ``ibfab triage`` finding it (its own lab, so the demo lab keeps its faults).
TRIAGE_LAB = "demo-triage"
SLOW_NODE = "dgx-0006"
TRIAGE_HOSTS = "dgx-[0001-0008]"
# One of each wiring fault discovery must catch.
DEMO_FAULTS: tuple[str, ...] = (
    "miswire:dgx-0002:1:2",
    "missing-link:leaf-su01-r2",
    "missing-hca:dgx-0003:5",
    "degraded-width:leaf-su01-r0:1",
    "degraded-speed:leaf-su02-r1:5",
)


@dataclass(frozen=True)
class DemoStep:
    """One step of the demo: its title, what it found (``result``: the use case's own record) and
    whether that is what was planted (``verdict`` says it in words)."""

    title: str
    facts: tuple[str, ...]
    result: object
    verdict: str
    ok: bool = True


@dataclass(frozen=True)
class HealthDemo:
    """The health step's collections (each with what was done before it) and the assessment."""

    collections: tuple[tuple[SnapshotOutcome, str], ...]
    health: AssessedHealth
    planted: tuple[LinkKey, ...] = ()  # the link with rising symbol errors, the flapping link


@dataclass(frozen=True)
class PlanDemo:
    """The cable-plan step: the plan written from the clean lab, and the check of the rewired one."""

    plan_path: Path
    cables: int
    clean: PlanCheck  # the clean lab against its own plan
    check: PlanCheck  # the lab with the miswire against the same plan
    source: str


@dataclass(frozen=True)
class SweepDemo:
    outcome: SweepOutcome
    names: dict[Guid, str]


def demo_store() -> Path | None:
    """The store the last demo wrote (beside the default store), if there is one."""
    from fabric.store import default_db_path

    path = default_db_path().parent / "demo.db"
    return path if path.exists() else None


def demo_db_path(db: str | None) -> Path:
    """``--db`` as given, else a fresh ``demo.db`` beside the default store (removed first)."""
    from fabric.store import default_db_path

    if db:
        return Path(db)
    path = default_db_path().parent / "demo.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return path


def demo_source() -> Source:
    """The demo's fabric: its own lab."""
    return Source.lab(DEMO_LAB)


def run_demo(session: Session) -> Iterator[DemoStep]:
    """The demo's steps on the session's lab (:func:`demo_source`) and into its store (the demo's
    own, :func:`demo_db_path`); the cable-plan and triage steps bring up labs of their own."""
    if any(s.name == DEMO_LAB for s in lab.list_labs()):
        lab.down(DEMO_LAB)
    state = lab.up(DEMO_SPEC, DEMO_FAULTS, name=DEMO_LAB)
    design = lab.design_of(DEMO_LAB)
    yield DemoStep(
        "1. A simulated fabric with planted faults",
        (
            f"ibsim + OpenSM up as lab {DEMO_LAB!r}: {len(design.switches)} switches, "
            f"{len(design.present_hcas())} HCAs ({state.spec})",
            *(f"note: {n}" for n in simulator_notes(design)),
            "planted:",
            *(f"  - {p.fault}: {p.description}" for p in design.planted),
        ),
        None,
        "",
    )
    d = discover(session)
    with session.store.write() as store:
        snap = store.save_topology(d.fabric, d.raw_text, tool="ibnetdiscover", source=d.source, label="demo")
    found = {a.kind for a in d.anomalies}
    missed = [
        p
        for p in design.planted
        if not any(a.kind == p.kind and set(a.nodes) & set(p.guids) for a in d.anomalies)
    ]
    verdict = (
        "every planted fault was found" if not missed else "MISSED: " + ", ".join(p.fault for p in missed)
    )
    roles_ok, roles = roles_as_planted(design, d)
    yield DemoStep(
        "2. Discovery with the real ibnetdiscover",
        (),
        d,
        f"saved as topology snapshot {snap}; kinds found: {', '.join(sorted(found))}; {verdict}; {roles}",
        ok=not missed and roles_ok,
    )
    with session.store.write() as store:
        health = health_step(store, session, d.fabric)
    yield health
    yield sweep_step(session, design)
    yield recommend_step(session, d)
    plan_path = session.store.path.with_name("demo-plan.csv")
    yield plan_step(session, plan_path)
    yield triage_step(session)
    planted = health.result.planted if isinstance(health.result, HealthDemo) else ()
    yield status_step(session, design, planted, plan_path)


def roles_as_planted(design: Design, d: Discovery) -> tuple[bool, str]:
    """Whether discovery gave every host the role the design planted (login and storage nodes
    service hosts, the DGX nodes compute, the one short of an HCA included), found the service
    leaf, and reported nothing about the service hosts or their leaf; and that in words."""
    cls = d.classification
    planted = {h.host: h.role for h in design.present_hcas()}
    wrong = sorted(h for h, role in planted.items() if (r := cls.host_roles.get(h)) is None or r.role != role)
    leaves = {s.guid for s in design.switches if s.role == "service-leaf"}
    service = sorted(h for h, role in planted.items() if role == "service")
    quiet = {g for h in service for g in cls.hosts.get(h, ())} | leaves
    noisy = [a for a in d.anomalies if quiet & set(a.nodes)]
    compute = len(planted) - len(service)
    if wrong:
        return False, "MISSED: roles not as planted for " + ", ".join(wrong)
    if cls.service_leaves != leaves:
        return False, "MISSED: the service leaf was not found as planted"
    if noisy:
        return False, "MISSED: the service leaf was judged as a compute leaf: " + noisy[0].message
    return True, (
        f"hosts by role as planted: {compute} compute, {len(service)} service ({', '.join(service)}), "
        "the service leaf judged on its own (nothing reported)"
    )


def _switch_links(fabric: Fabric, avoid: set[str]) -> list[tuple[str, int, str, int, Link]]:
    """Leaf-spine cables as (leaf, port, spine, port, link), away from the planted wiring faults."""
    from topology.classify import switch_name

    out = []
    for lk in fabric.links:
        a, b = fabric.nodes[lk.a.guid], fabric.nodes[lk.b.guid]
        na, nb = switch_name(a.description), switch_name(b.description)
        if not (na.startswith("leaf") and nb.startswith("spine")):
            na, nb, pa, pb = nb, na, lk.b.port, lk.a.port
        else:
            pa, pb = lk.a.port, lk.b.port
        if na.startswith("leaf") and nb.startswith("spine") and na not in avoid:
            out.append((na, pa, nb, pb, lk))
    return out


def health_step(store: Store, session: Session, fabric: Fabric) -> DemoStep:
    """Three collections with a link whose symbol errors rise and a link that flaps, then health."""
    from fabric.app.health.assess import assess_store
    from fabric.app.health.collect import Collector

    start = time.time()
    avoid = {f.split(":")[1] for f in DEMO_FAULTS if f.split(":")[1].startswith("leaf")}
    candidates = _switch_links(fabric, avoid)
    (sym_leaf, sym_port, _, _, sym_link), (flap_leaf, flap_port, flap_spine, flap_spine_port, flap_link) = (
        candidates[0],
        candidates[len(candidates) // 2],
    )
    collector = Collector(store, session)
    driver = session.driver
    lines = [(collector.collect_once(), "baseline")]
    driver.set_counter(sym_leaf, sym_port, "symbol_errors", 40)
    for node, port in ((flap_leaf, flap_port), (flap_spine, flap_spine_port)):
        driver.set_counter(node, port, "link_downed", 1)
    # link_down/link_up return once the ports are in their new state and OpenSM's sweep after
    # their traps is done: a collection during that sweep could miss the link's counters (the
    # SA does not answer ibqueryerrors) and read the flap from discovery alone, as one down.
    driver.unplug(flap_leaf, flap_port)
    lines.append((collector.collect_once(), f"{flap_leaf}:{flap_port} unplugged"))
    driver.replug(flap_leaf, flap_port)
    driver.set_counter(sym_leaf, sym_port, "symbol_errors", 400)
    for node, port in ((flap_leaf, flap_port), (flap_spine, flap_spine_port)):
        driver.set_counter(node, port, "link_downed", 3)
    lines.append((collector.collect_once(), f"{flap_leaf}:{flap_port} back"))
    view = assess_store(store, since_s=time.time() - start + 1.0)
    top = {lk.key for lk in view.report.links[:2]}
    ok = top == {sym_link.key, flap_link.key} and all(
        lk.status.value == "critical" for lk in view.report.links[:2]
    )
    verdict = (
        "both planted links are on top"
        if ok
        else "MISSED: the planted links are not the two worst: "
        + ", ".join(view.link_label(lk) for lk in view.report.links[:2])
    )
    return DemoStep(
        "3. Link health from the real ibqueryerrors (ibfab counters collect; ibfab health)",
        (
            f"planted: symbol errors rising 0 -> 40 -> 400 on {sym_leaf}:{sym_port}; "
            f"{flap_leaf}:{flap_port} unplugged and replugged, LinkDownedCounter 0 -> 1 -> 3 on both ends",
        ),
        HealthDemo(tuple(lines), view, (sym_link.key, flap_link.key)),
        f"{verdict}; store: {store.path}",
        ok=ok,
    )


def sweep_step(session: Session, design: object) -> DemoStep:
    """A rail-pairs sweep on the lab's simulated traffic, localized back to the cables at fault."""
    from fabric.app.sweeps import sweep as sweeps
    from topology.generate import Design

    assert isinstance(design, Design)
    ctx = sweeps.prepare(session, "rail-pairs")
    outcome = sweeps.run_lab(ctx, session)
    names = sweeps.names_of(ctx.discovery)
    sweep_id = sweeps.save(outcome, ctx.source, names, session.store)
    slow_cables = {
        frozenset(p.ports) for p in design.planted if p.kind == "degraded_link" and len(p.ports) == 2
    }
    top = {frozenset((s.link.a, s.link.b)) for s in outcome.suspects[: len(slow_cables)]}
    ok = bool(slow_cables) and top == slow_cables
    verdict = (
        "the degraded cables rank first"
        if ok
        else "MISSED: the planted degraded cables are not the top suspects"
    )
    return DemoStep(
        "4. A probe sweep, localized back to the cable (ibfab sweep run --lab; simulated traffic)",
        (
            f"sweep {sweep_id}: {len(ctx.plan.probes)} ib_write_bw pairs in {ctx.plan.rounds} rounds "
            f"(lower bound {ctx.plan.lower_bound}), backend {outcome.backend}, "
            f"{outcome.retest_passes} re-test pass(es)",
        ),
        SweepDemo(outcome, names),
        verdict,
        ok=ok,
    )


def recommend_step(session: Session, d: object) -> DemoStep:
    """What to do about it: safety-checked isolations, drains, AR and NCCL settings."""
    from fabric.advise.candidates import findings_from_report
    from fabric.advise.recommend import recommend
    from fabric.app.advice.subnet import probe_subnet_manager
    from fabric.app.discovery.discover import Discovery
    from fabric.app.health.assess import assess_store

    assert isinstance(d, Discovery)
    with session.store.write() as store:
        view = assess_store(store, since_s=3600, record=False)
    recs = recommend(
        d.fabric,
        d.classification,
        findings_from_report(view.report),
        sm=probe_subnet_manager(session.driver),
        anomalies=d.anomalies,
    )
    kinds = [a.kind.value for a in recs.actions]
    # The planted miswire gets its exact recabling, each degraded cable its replacement, each
    # missing cable (an uplink, a rail HCA's) its connection.
    planted = sum(1 for f in DEMO_FAULTS if f.startswith("degraded"))
    missing = sum(1 for f in DEMO_FAULTS if f.startswith("missing"))
    ok = (
        ("isolate_port" in kinds or "drain_node" in kinds)
        and kinds.count("swap_cables") == 1
        and kinds.count("replace_cable") >= planted
        and kinds.count("connect_cable") == missing
    )
    return DemoStep(
        "5. Recommendations (ibfab recommend; apply with ibfab isolate PORT --apply)",
        (f"{recs.findings} links judged; {recs.routing.summary}",),
        recs,
        "",
        ok=ok,
    )


def plan_step(session: Session, plan_path: Path) -> DemoStep:
    """Export the clean lab's cabling as a cable plan, plant a miswire, check the fabric against
    the plan: the clean fabric matches it, the rewired one differs by exactly the swap."""
    from topology.cableplan import format_cable_plan, read_cable_plan
    from topology.model import PortRef
    from topology.plancheck import Verdict, check_plan, plan_rows

    on_plan_lab = session.on(Source.lab(PLAN_LAB))
    if any(s.name == PLAN_LAB for s in lab.list_labs()):
        lab.down(PLAN_LAB)
    lab.up(DEMO_SPEC, (), name=PLAN_LAB)
    try:
        clean = discover(on_plan_lab)
        rows = plan_rows(clean.fabric)
        plan_path.write_text(format_cable_plan(rows, with_speed=True), encoding="utf-8")
        plan = read_cable_plan(plan_path)
        clean_check = check_plan(plan, clean.fabric)
    finally:
        lab.down(PLAN_LAB)
    lab.up(DEMO_SPEC, (PLAN_FAULT,), name=PLAN_LAB)
    try:
        planted = lab.design_of(PLAN_LAB).planted
        rewired = discover(on_plan_lab)
        check = check_plan(plan, rewired.fabric)
    finally:
        lab.down(PLAN_LAB)
    touched = {PortRef(e.guid, e.port) for f in check.findings for lk in f.actual for e in (lk.a, lk.b)}
    found = (
        len(check.findings) == 1
        and check.findings[0].verdict is Verdict.MISWIRED
        and all(set(p.ports) <= touched for p in planted)
    )
    ok = found and not clean_check.differs and not clean_check.unchecked and not check.unchecked
    if ok:
        verdict = "the clean fabric matches its plan; the rewired one differs by exactly the planted miswire"
    elif clean_check.differs or clean_check.unchecked:
        verdict = "MISSED: the clean fabric does not match the plan exported from it"
    else:
        verdict = "MISSED: the check did not find exactly the planted miswire: " + "; ".join(
            f.message for f in check.findings
        )
    return DemoStep(
        "6. The fabric against its cable plan (ibfab export plan; ibfab topology check --plan)",
        (
            f"plan of the clean lab fabric: {len(rows)} cables written to {plan_path}",
            f"clean lab against it: {clean_check.matched} of {clean_check.planned} cables as planned",
            f"planted: {PLAN_FAULT} ({'; '.join(p.description for p in planted)})",
            f"(try `ibfab topology check --plan {plan_path} --lab {DEMO_LAB}`: the demo lab's own faults)",
        ),
        PlanDemo(plan_path, len(rows), clean_check, check, rewired.source),
        verdict,
        ok=ok,
    )


def triage_step(session: Session) -> DemoStep:
    """Plant a PCIe-bound node (its GPUs fine alone, its HCAs fine in pairs), triage the eight hosts
    and check the culprit is that node, found within ceil(log2 8) + 2 rounds."""
    from fabric.app.triage.bisect import round_budget
    from fabric.app.triage.run import triage_lab

    if any(s.name == TRIAGE_LAB for s in lab.list_labs()):
        lab.down(TRIAGE_LAB)
    lab.up(DEMO_SPEC, (), name=TRIAGE_LAB)
    try:
        on_triage_lab = session.on(Source.lab(TRIAGE_LAB))
        planted = on_triage_lab.driver.plant_node(SLOW_NODE, "pcie", 0.5)
        report = triage_lab(TRIAGE_HOSTS, on_triage_lab)
    finally:
        lab.down(TRIAGE_LAB)
    c = report.culprit
    within = len(report.rounds) <= round_budget(len(report.hosts))
    ok = c is not None and c.kind == "node" and c.hosts == (SLOW_NODE,) and within
    verdict = (
        f"the planted node was found in {len(report.rounds)} rounds (at most {report.budget})"
        if ok
        else "MISSED: the triage did not name the planted node "
        + (f"({c.kind} {', '.join(c.hosts)})" if c is not None else "(it found the fabric fine)")
    )
    return DemoStep(
        "7. Which node is slow? (ibfab triage --lab; simulated nccl-tests and ib_write_bw)",
        (
            f"lab {TRIAGE_LAB!r} ({DEMO_SPEC}), planted: {planted.host} PCIe-bound "
            f"(its GPU-to-HCA path at {planted.factor:.0%}; its GPUs and cables are fine)",
        ),
        report,
        verdict,
        ok=ok,
    )


def status_step(session: Session, design: Design, planted_links: Sequence[LinkKey], plan: Path) -> DemoStep:
    """``ibfab status`` over the demo's store (its stored topology, the health collections, the
    sweep) and the cable plan exported from the clean lab: every fault planted is one entry, with
    every source that saw it, and nothing else is listed."""
    from fabric.app.status import fabric_status
    from fabric.app.status.evidence import Elements, wiring_elements

    on_store = session.on(Source.snapshot("latest"))  # the demo's stored topology, as saved in step 2
    d = discover(on_store)
    plans = [str(plan)] if plan.is_file() else []
    report = fabric_status(d, on_store, plans=plans)
    el = Elements(d.fabric, d.classification)
    expected = {
        element.key
        for an, element in zip(d.anomalies, wiring_elements(el, d.anomalies), strict=True)
        if any(an.kind == p.kind and set(an.nodes) & set(p.guids) for p in design.planted)
    } | {el.cable_of(key).key for key in planted_links}
    listed = {e.element.key for e in report.entries}
    unplanned = [e.element.name for e in report.entries if e.element.key not in expected]
    missed = sorted(expected - listed)
    without = [e.element.name for e in report.entries if e.action is None]
    ok = not unplanned and not missed and not without
    if ok:
        verdict = (
            f"every planted fault is one entry ({len(listed)}), each with its action; nothing else listed"
        )
    else:
        verdict = "MISSED: " + "; ".join(
            part
            for part in (
                f"listed but not planted: {', '.join(unplanned)}" if unplanned else "",
                f"planted but not listed: {', '.join(missed)}" if missed else "",
                f"no action for: {', '.join(without)}" if without else "",
            )
            if part
        )
    return DemoStep(
        "8. What is wrong, one list (ibfab status --plan demo-plan.csv: health, sweep, wiring, plan)",
        (),
        report,
        verdict,
        ok=ok,
    )


def stop_demo_lab() -> None:
    """Stop the demo's lab fabric if it runs (its recorded PIDs only)."""
    if any(s.name == DEMO_LAB for s in lab.list_labs()):
        lab.down(DEMO_LAB)
