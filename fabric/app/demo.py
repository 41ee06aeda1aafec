"""The demo: a lab rail-optimized fabric with planted faults and a service leaf (a login and a
storage node), and what ibfab finds in it.

``ibfab demo`` (and ``make demo``) call :func:`run_demo`; each step yields a :class:`DemoStep`
with what it did, what it found and whether that matches what was planted, so the CLI can print
as it goes (:func:`fabric.present.demo.render_step` makes the text). Everything runs through the
same use cases as the CLI: the real ibnetdiscover against ibsim + OpenSM, the real store.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fabric import lab
from fabric.app.discover import discover
from fabric.app.source import Source
from topology.generate_text import simulator_notes

if TYPE_CHECKING:
    from fabric.app.collect import SnapshotOutcome
    from fabric.app.discover import Discovery
    from fabric.app.health import AssessedHealth
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


def run_demo(db: str | None = None) -> Iterator[DemoStep]:
    from fabric.store import Store

    db = str(demo_db_path(db))

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
    d = discover(Source("lab", DEMO_LAB))
    with Store.open(db) as store:
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
    with Store.open(db) as store:
        health = health_step(store, d.fabric)
    yield health
    yield sweep_step(db, design)
    yield recommend_step(db, d)
    plan_path = Path(db).with_name("demo-plan.csv")
    yield plan_step(plan_path)
    from fabric.app.triage.demostep import triage_step  # the triage room's step (it imports DemoStep)

    yield triage_step(db)
    from fabric.app.status.demostep import status_step  # the status room's step, the last one

    planted = health.result.planted if isinstance(health.result, HealthDemo) else ()
    yield status_step(db, design, planted, plan_path)


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


def health_step(store: Store, fabric: Fabric) -> DemoStep:
    """Three collections with a link whose symbol errors rise and a link that flaps, then health."""
    from fabric.app.collect import Collector
    from fabric.app.health import assess_store

    start = time.time()
    avoid = {f.split(":")[1] for f in DEMO_FAULTS if f.split(":")[1].startswith("leaf")}
    candidates = _switch_links(fabric, avoid)
    (sym_leaf, sym_port, _, _, sym_link), (flap_leaf, flap_port, flap_spine, flap_spine_port, flap_link) = (
        candidates[0],
        candidates[len(candidates) // 2],
    )
    collector = Collector(store, Source("lab", DEMO_LAB))
    lines = [(collector.collect_once(), "baseline")]
    lab.set_counter(DEMO_LAB, sym_leaf, sym_port, "symbol_errors", 40)
    for node, port in ((flap_leaf, flap_port), (flap_spine, flap_spine_port)):
        lab.set_counter(DEMO_LAB, node, port, "link_downed", 1)
    # link_down/link_up return once the ports are in their new state and OpenSM's sweep after
    # their traps is done: a collection during that sweep could miss the link's counters (the
    # SA does not answer ibqueryerrors) and read the flap from discovery alone, as one down.
    lab.link_down(DEMO_LAB, flap_leaf, flap_port)
    lines.append((collector.collect_once(), f"{flap_leaf}:{flap_port} unplugged"))
    lab.link_up(DEMO_LAB, flap_leaf, flap_port)
    lab.set_counter(DEMO_LAB, sym_leaf, sym_port, "symbol_errors", 400)
    for node, port in ((flap_leaf, flap_port), (flap_spine, flap_spine_port)):
        lab.set_counter(DEMO_LAB, node, port, "link_downed", 3)
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


def sweep_step(db: str, design: object) -> DemoStep:
    """A rail-pairs sweep on the lab's simulated traffic, localized back to the cables at fault."""
    from fabric.app import sweep as sweeps
    from topology.generate import Design

    assert isinstance(design, Design)
    ctx = sweeps.prepare("rail-pairs", lab=DEMO_LAB)
    outcome = sweeps.run_lab(ctx, DEMO_LAB)
    names = sweeps.names_of(ctx.discovery)
    sweep_id = sweeps.save(outcome, ctx.source, names, db)
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


def recommend_step(db: str, d: object) -> DemoStep:
    """What to do about it: safety-checked isolations, drains, AR and NCCL settings."""
    from fabric.advise.candidates import findings_from_report
    from fabric.advise.recommend import recommend
    from fabric.app.discover import Discovery
    from fabric.app.health import assess_store
    from fabric.app.subnet import probe_subnet_manager
    from fabric.store import Store

    assert isinstance(d, Discovery)
    with Store.open(db) as store:
        view = assess_store(store, since_s=3600, record=False)
    recs = recommend(
        d.fabric,
        d.classification,
        findings_from_report(view.report),
        sm=probe_subnet_manager(lab=DEMO_LAB),
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


def plan_step(plan_path: Path) -> DemoStep:
    """Export the clean lab's cabling as a cable plan, plant a miswire, check the fabric against
    the plan: the clean fabric matches it, the rewired one differs by exactly the swap."""
    from topology.cableplan import format_cable_plan, read_cable_plan
    from topology.model import PortRef
    from topology.plancheck import Verdict, check_plan, plan_rows

    if any(s.name == PLAN_LAB for s in lab.list_labs()):
        lab.down(PLAN_LAB)
    lab.up(DEMO_SPEC, (), name=PLAN_LAB)
    try:
        clean = discover(Source("lab", PLAN_LAB))
        rows = plan_rows(clean.fabric)
        plan_path.write_text(format_cable_plan(rows, with_speed=True), encoding="utf-8")
        plan = read_cable_plan(plan_path)
        clean_check = check_plan(plan, clean.fabric)
    finally:
        lab.down(PLAN_LAB)
    lab.up(DEMO_SPEC, (PLAN_FAULT,), name=PLAN_LAB)
    try:
        planted = lab.design_of(PLAN_LAB).planted
        rewired = discover(Source("lab", PLAN_LAB))
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


def stop_demo_lab() -> None:
    """Stop the demo's lab fabric if it runs (its recorded PIDs only)."""
    if any(s.name == DEMO_LAB for s in lab.list_labs()):
        lab.down(DEMO_LAB)
