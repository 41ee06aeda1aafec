"""What the fabric tells of a run's hosts: their HCAs (rails), the HCAs' rate, their leaves and
the leaves' uplinks (:class:`probes.nccl_model.FabricFacts`), from a source the caller names, the
newest stored topology, or numbers given by hand."""

from __future__ import annotations

from fabric.app.source import Source, newest_snapshot, read_source
from probes.nccl_model import FabricFacts, fabric_facts, uniform_facts
from topology.errors import UsageError


def facts_from_source(src: Source, text: str | None = None) -> FabricFacts:
    """The facts of the fabric ``src`` shows (a saved ibnetdiscover, a snapshot, a lab)."""
    from fabric.app.discovery.discover import discover

    d = discover(src, text)
    return fabric_facts(d.fabric, d.classification, d.source or src.label)


def read_facts(
    *,
    input_path: str | None = None,
    lab: str | None = None,
    snapshot: str | None = None,
    db: str | None = None,
    hcas: int | None = None,
    rate_gbps: float | None = None,
) -> FabricFacts | None:
    """The facts for judging saved runs: ``hcas`` x ``rate_gbps`` given by hand (for any host), else the fabric of ``--input``/``--lab``/``--snapshot``, else the newest stored
    topology; None when there is none (nothing is run to find one)."""
    if (hcas is None) != (rate_gbps is None):
        raise UsageError("give --hcas and --rate together (the HCAs per node and their Gb/s)")
    if hcas is not None and rate_gbps is not None:
        if any((input_path, lab, snapshot)):
            raise UsageError("give either --hcas/--rate or a fabric (--input, --lab, --snapshot), not both")
        return uniform_facts(hcas, rate_gbps, f"--hcas {hcas} --rate {rate_gbps:g}")
    if any((input_path, lab, snapshot)):
        src, text = read_source(input_path, None, lab, snapshot=snapshot, db=db)
        return facts_from_source(src, text)
    newest = newest_snapshot(db)
    if newest is None:
        return None
    return facts_from_source(Source("snapshot", str(newest), db))


__all__ = ["facts_from_source", "read_facts"]
