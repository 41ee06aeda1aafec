"""What the fabric tells of a run's hosts: their HCAs (rails), the HCAs' rate, their leaves and
the leaves' uplinks (:class:`probes.nccl_model.FabricFacts`), from the session's source (the one the
caller names, else the newest stored topology), or numbers given by hand."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabric.app.source import SourceKind
from probes.nccl_model import FabricFacts, fabric_facts, uniform_facts
from topology.errors import UsageError

if TYPE_CHECKING:
    from fabric.app.session import Session


def facts_from_source(session: Session) -> FabricFacts:
    """The facts of the fabric the session's source shows (a saved ibnetdiscover, a snapshot, a lab)."""
    from fabric.app.discovery.discover import discover

    d = discover(session)
    return fabric_facts(d.fabric, d.classification, d.source or session.source.label)


def read_facts(
    session: Session, *, hcas: int | None = None, rate_gbps: float | None = None
) -> FabricFacts | None:
    """The facts for judging saved runs: ``hcas`` x ``rate_gbps`` given by hand (for any host), else
    the fabric of the session's source (``--input``/``--lab``/``--snapshot``, else the newest stored
    topology); None when there is none (this machine: nothing is run to find one)."""
    if (hcas is None) != (rate_gbps is None):
        raise UsageError("give --hcas and --rate together (the HCAs per node and their Gb/s)")
    if hcas is not None and rate_gbps is not None:
        return uniform_facts(hcas, rate_gbps, f"--hcas {hcas} --rate {rate_gbps:g}")
    if session.source.kind is SourceKind.LOCAL:
        return None
    return facts_from_source(session)


__all__ = ["facts_from_source", "read_facts"]
