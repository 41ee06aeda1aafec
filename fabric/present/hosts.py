"""Hosts for people: folded command output, folded preflight lines, this machine's HCA table."""

from __future__ import annotations

from collections.abc import Sequence

from fabric.present.table import table
from probes.fanout import FoldedResult
from probes.preflight import HcaPort


def render_folded(folded: Sequence[FoldedResult]) -> str:
    """Headers per group of identical hosts, then their output (stderr lines marked ``!``)."""
    lines: list[str] = []
    for f in folded:
        n = f"{f.count} host" + ("s" if f.count != 1 else "")
        status = f"exit {f.exit_code}" if f.failure is None else f"{f.failure.value}: {f.message}"
        lines.append(f"== {f.hosts} ({n}): {status}")
        lines += f.stdout.splitlines()
        lines += [f"! {ln}" for ln in f.stderr.splitlines()]
    return "\n".join(lines) + ("\n" if lines else "")


def render_preflight(groups: Sequence[tuple[str, int, bool, str]]) -> str:
    """``dgx-[0001-0004] (4): ok: 8 ports: 8 up at 400 Gb/s InfiniBand`` per group of identical hosts."""
    return "\n".join(
        f"{hosts} ({count}): {'ok' if fine else 'FAIL'}: {summary}" for hosts, count, fine, summary in groups
    )


def render_hca_ports(ports: Sequence[HcaPort]) -> str:
    rows = [
        (
            p.device,
            p.port,
            p.state,
            p.phys_state,
            f"{p.rate_gbps:g}",
            p.link_layer,
            p.lid,
            p.guid,
            p.node_desc,
        )
        for p in ports
    ]
    return table(("DEVICE", "PORT", "STATE", "PHYS", "GB/S", "LINK", "LID", "GUID", "DESC"), rows)
