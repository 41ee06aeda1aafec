"""The demo: a lab rail-optimized fabric with planted faults, and what ibfab finds in it.

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

if TYPE_CHECKING:
    from fabric.app.collect import SnapshotOutcome
    from fabric.app.health import AssessedHealth
    from fabric.store import Store
    from probes.sweep import SweepOutcome
    from topology.model import Fabric, Guid, Link

DEMO_LAB = "demo"
DEMO_SPEC = "rail-small"
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
    yield DemoStep(
        "2. Discovery with the real ibnetdiscover",
        (),
        d,
        f"saved as topology snapshot {snap}; kinds found: {', '.join(sorted(found))}; {verdict}",
        ok=not missed,
    )
    with Store.open(db) as store:
        yield health_step(store, d.fabric)
    yield sweep_step(db, design)
    yield recommend_step(db, d)


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
        HealthDemo(tuple(lines), view),
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
    # The planted miswire gets its exact recabling, each degraded cable its replacement.
    planted = sum(1 for f in DEMO_FAULTS if f.startswith("degraded"))
    ok = (
        ("isolate_port" in kinds or "drain_node" in kinds)
        and kinds.count("swap_cables") == 1
        and kinds.count("replace_cable") >= planted
    )
    return DemoStep(
        "5. Recommendations (ibfab recommend; apply with ibfab isolate PORT --apply)",
        (f"{recs.findings} links judged; {recs.routing.summary}",),
        recs,
        "",
        ok=ok,
    )
