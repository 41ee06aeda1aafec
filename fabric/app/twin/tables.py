"""The twin's forwarding tables, read with the real ``dump_fts -n`` through its lab driver.

``-n`` leaves the destinations unresolved: one short line an entry (``0x0001 009``) and no
NodeDescription query per LID, so a twin of 4,096 HCAs (320 switches x 4,417 LIDs) dumps in about
17 MB where the resolved form takes 113 MB, over the 64 MiB a command's output may hold
(:data:`probes.transport.MAX_OUTPUT_BYTES`). A twin whose tables cannot fit even so is refused in
one line before anything runs on it.
"""

from __future__ import annotations

from fabric.app.discovery.discover import Discovery
from fabric.app.routes.tables import port_counts
from fabric.app.session import Session
from probes.transport import MAX_OUTPUT_BYTES
from topology.errors import LabError
from topology.lft import Lfts, parse_lfts

DUMP_TIMEOUT = 1800.0
# Bytes dump_fts -n writes per entry ("0x0001 009 \n") and per switch (its three header lines).
_ENTRY_BYTES, _SWITCH_BYTES = 12, 200


def dump_bytes(d: Discovery) -> int:
    """What ``dump_fts -n`` of ``d``'s switches writes, estimated from their count and the top LID."""
    top = max((lid for lid in d.fabric.lids.values()), default=0)
    switches = len(d.fabric.switches())
    return switches * ((top + 1) * _ENTRY_BYTES + _SWITCH_BYTES)


def check_size(name: str, d: Discovery) -> None:
    """A LabError when the twin's tables would not fit a command's output (checked before use)."""
    size = dump_bytes(d)
    if size > MAX_OUTPUT_BYTES * 0.9:
        switches = len(d.fabric.switches())
        raise LabError(
            f"twin {name}: its forwarding tables ({switches} switches x {max(d.fabric.lids.values())} LIDs, "
            f"about {size / 2**20:.0f} MiB from dump_fts -n) are over the {MAX_OUTPUT_BYTES >> 20} MiB a "
            "command's output may hold; twins are checked here up to about 7,000 HCAs"
        )


def twin_tables(twin: Session, d: Discovery) -> Lfts:
    """The tables of the twin ``twin`` reaches as its switches hold them, over its own discovery ``d``."""
    name = twin.source.target
    check_size(name, d)
    res = twin.driver.run_tool(["dump_fts", "-n"], DUMP_TIMEOUT)
    return parse_lfts(res.stdout, f"dump_fts -n on twin {name}", port_counts=port_counts(d))
