"""iblinkinfo: every port's state, read from real captures and the lab's form of a disabled port."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from probes.iblinkinfo import disabled_ports, parse_iblinkinfo
from tests.conftest import realdata_files
from topology.errors import ParseError
from topology.model import Guid, PortRef

# As the lab (ibsim) prints a port disabled by ibportstate; a real switch says "Down/ Disabled".
LAB = """Switch: 0x0c42a10300a00000 MF0;leaf-su01-r0:MQM9700/U1:
           2    4[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>      45    1[  ] "dgx-0004 mlx5_0" (Could be 12X )
           2    5[  ] ==( 4X        53.125 Gbps Active/Disabled)==>      "Port not available"
           2    6[  ] ==(                Down/ Disabled)==>             [  ] "" ( )
           2    9[  ] ==(                Down/ Polling)==>             [  ] "" ( )
CA: dgx-0004 mlx5_0:
      0x1070fd0300100031     45    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       2    4[  ] "MF0;leaf-su01-r0:MQM9700/U1" ( )
"""


@pytest.mark.parametrize("path", realdata_files("iblinkinfo"), ids=lambda p: p.name)
def test_real_captures(path: Path) -> None:
    text = path.read_text()
    ports = parse_iblinkinfo(text, str(path))
    lines = [ln for ln in text.splitlines() if "==(" in ln]
    assert len(ports) == len(lines) > 0
    assert {(p.state, p.phys) for p in ports} <= {("Active", "LinkUp"), ("Down", "Polling")}
    assert disabled_ports(text) == frozenset()  # nothing is disabled in either capture


def test_disabled_ports_of_switches_and_hcas_keyed_by_guid() -> None:
    ports = parse_iblinkinfo(LAB)
    assert Counter(p.phys for p in ports) == {"LinkUp": 2, "Disabled": 2, "Polling": 1}
    assert disabled_ports(LAB) == {
        PortRef(Guid("0x0c42a10300a00000"), 5),
        PortRef(Guid("0x0c42a10300a00000"), 6),
    }
    assert ports[-1].ref == PortRef(Guid("0x1070fd0300100031"), 1)


def test_a_port_line_before_any_header_is_refused() -> None:
    with pytest.raises(ParseError, match=r"x\.txt:1: iblinkinfo output: a port line before any"):
        parse_iblinkinfo(LAB.split("\n", 1)[1], "x.txt")
