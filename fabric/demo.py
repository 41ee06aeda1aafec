"""The demo: a lab rail-optimized fabric with planted faults, and what ibfab finds in it.

``ibfab demo`` (and ``make demo``) call :func:`run_demo`; each step yields a titled block of
text so the CLI can print as it goes. Everything runs through the same services as the CLI:
the real ibnetdiscover against ibsim + OpenSM, the real store.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fabric import lab
from fabric.discovery import Source, discover

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
    title: str
    text: str
    ok: bool = True


def run_demo(db: str | None = None) -> Iterator[DemoStep]:
    from fabric.cli.discover import render_discovery
    from fabric.store import Store

    if any(s.name == DEMO_LAB for s in lab.list_labs()):
        lab.down(DEMO_LAB)
    state = lab.up(DEMO_SPEC, DEMO_FAULTS, name=DEMO_LAB)
    design = lab.design_of(DEMO_LAB)
    planted = "\n".join(f"  - {p.fault}: {p.description}" for p in design.planted)
    yield DemoStep(
        "1. A simulated fabric with planted faults",
        f"ibsim + OpenSM up as lab {DEMO_LAB!r}: {len(design.switches)} switches, "
        f"{len(design.present_hcas())} HCAs ({state.spec})\nplanted:\n{planted}",
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
        render_discovery(d)
        + f"\n\nsaved as topology snapshot {snap}; kinds found: {', '.join(sorted(found))}; {verdict}",
        ok=not missed,
    )
