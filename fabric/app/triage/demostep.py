"""The demo's triage step: a clean lab fabric of eight hosts with one simulated PCIe-bound node
planted, and ``ibfab triage`` finding it (its own lab, so the demo lab keeps its faults)."""

from __future__ import annotations

from fabric.app.demo import DEMO_SPEC, DemoStep

TRIAGE_LAB = "demo-triage"
SLOW_NODE = "dgx-0006"
HOSTS = "dgx-[0001-0008]"


def triage_step(db: str | None = None) -> DemoStep:
    """Plant a PCIe-bound node (its GPUs fine alone, its HCAs fine in pairs), triage the eight hosts
    and check the culprit is that node, found within ceil(log2 8) + 2 rounds."""
    from fabric import lab
    from fabric.app.triage.bisect import round_budget
    from fabric.app.triage.labnodes import plant_node
    from fabric.app.triage.run import triage_lab

    if any(s.name == TRIAGE_LAB for s in lab.list_labs()):
        lab.down(TRIAGE_LAB)
    lab.up(DEMO_SPEC, (), name=TRIAGE_LAB)
    try:
        planted = plant_node(TRIAGE_LAB, SLOW_NODE, "pcie", 0.5)
        report = triage_lab(HOSTS, TRIAGE_LAB, db=db)
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


__all__ = ["TRIAGE_LAB", "triage_step"]
