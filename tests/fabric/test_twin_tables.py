"""A twin whose tables would not fit a command's output is refused in one line, before it is built."""

from __future__ import annotations

import pytest

from fabric.app.discovery.discover import analyse
from fabric.app.twin.tables import check_size, dump_bytes
from probes.transport import MAX_OUTPUT_BYTES
from topology.errors import LabError
from topology.model import Fabric, Guid, Lid, Node, NodeKind, PortRef


def _switches(n: int, top_lid: int) -> Fabric:
    nodes = [Node(Guid(f"0x{i + 1:016x}"), NodeKind.SWITCH, f"sw{i}", 64, Lid(i + 1)) for i in range(n)]
    lids = {PortRef(x.guid, 0): Lid(i + 1) for i, x in enumerate(nodes)}
    lids[PortRef(nodes[-1].guid, 0)] = Lid(top_lid)
    return Fabric.build(nodes, [], lids=lids)


def test_tables_over_the_output_bound_are_refused_naming_the_figures() -> None:
    big = analyse(_switches(130, 49151))
    assert dump_bytes(big) > MAX_OUTPUT_BYTES
    with pytest.raises(LabError, match=r"130 switches x 49151 LIDs, about 73 MiB from dump_fts -n"):
        check_size("twin-x", big)


def test_tables_that_fit_pass() -> None:
    small = analyse(_switches(96, 2200))  # a 2,048-HCA fabric's shape: 96 switches, 2,200 LIDs
    assert dump_bytes(small) < 4 << 20
    check_size("twin-x", small)
