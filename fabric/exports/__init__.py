"""Scheduler exports: Slurm topology.conf, Kubernetes labels, a Kueue Topology, hostfiles, JSON.

Each module only translates :class:`fabric.exports.tree.SchedulerTree` (built from the
classification) into one format; none parses tool output or connects anywhere. Every export
returns an :class:`Export`: the text for stdout and the items it left out, for stderr. Host names
the format cannot carry (:mod:`topology.nameformats`: a ``#`` in topology.conf, brackets in a
Slurm hostlist) are left out too, each said on its own line (``unfit``).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric.placement import LeftOut
from topology.nameformats import UnfitName


@dataclass(frozen=True, slots=True)
class Export:
    text: str
    left_out: tuple[str, ...] = ()  # "name: reason" lines
    # Hosts and HCAs that are not candidates (service hosts, aggregation nodes, unnamed HCAs...):
    # counted on stderr in one line (fabric.present.placement.left_out_line).
    skipped: tuple[LeftOut, ...] = ()
    unfit: tuple[UnfitName, ...] = ()  # names the format cannot carry, each said on its own line
