"""Crafted fabrics for tests: ibnetdiscover text written from a list of nodes and cables, so a test
can build exactly the fabric a cable plan describes (or one with planted differences) and read it
with the real parser.

>>> f = CraftedFabric()
>>> leaf = f.switch("MF0;leaf-01:MQM8700/U1")
>>> hca = f.hca("node01 mlx5_0")
>>> f.cable(hca, 1, leaf, 3)
>>> "node01 mlx5_0" in f.text()
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from topology.ibnetdiscover import parse_ibnetdiscover_text
from topology.model import Fabric


@dataclass
class _Node:
    guid: int
    switch: bool
    nports: int
    description: str
    system: int


@dataclass
class CraftedFabric:
    nodes: list[_Node] = field(default_factory=list)
    cables: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)  # both directions
    speed: str = "4xHDR"

    def _add(self, switch: bool, nports: int, description: str, system: int | None) -> int:
        guid = (0x0C42A10300000000 if switch else 0x1C34DA0300000000) + len(self.nodes) + 1
        self.nodes.append(_Node(guid, switch, nports, description, system or guid))
        return guid

    def switch(self, description: str, nports: int = 40, system: int | None = None) -> int:
        """A switch ASIC; boards of one director pass the director's ``system`` GUID."""
        return self._add(True, nports, description, system)

    def hca(self, description: str, nports: int = 1) -> int:
        return self._add(False, nports, description, None)

    def cable(self, a: int, pa: int, b: int, pb: int) -> None:
        for end in ((a, pa), (b, pb)):
            if end in self.cables:
                raise ValueError(f"port {end[0]:#x}/{end[1]} is cabled twice")
        self.cables[(a, pa)] = (b, pb)
        self.cables[(b, pb)] = (a, pa)

    def uncable(self, a: int, pa: int) -> tuple[int, int]:
        b = self.cables.pop((a, pa))
        del self.cables[b]
        return b

    def text(self) -> str:
        by_guid = {n.guid: n for n in self.nodes}
        lid = {n.guid: i for i, n in enumerate(self.nodes, 1)}
        cabled = {g for g, _ in self.cables}
        out = ["#", "# Topology file: crafted by tests/crafted.py", "#", ""]
        for n in self.nodes:
            if n.guid not in cabled:
                continue  # ibnetdiscover finds only what is cabled
            hx = f"{n.guid:016x}"
            out += [
                "vendid=0x2c9",
                f"devid=0x{'d2f0' if n.switch else '101b'}",
                f"sysimgguid=0x{n.system:016x}",
            ]
            if n.switch:
                out.append(f"switchguid=0x{hx}({hx})")
                out.append(
                    f'Switch\t{n.nports} "S-{hx}"\t\t# "{n.description}" enhanced port 0 lid {lid[n.guid]} lmc 0'
                )
            else:
                out.append(f"caguid=0x{hx}")
                out.append(f'Ca\t{n.nports} "H-{hx}"\t\t# "{n.description}"')
            for port in range(1, n.nports + 1):
                far = self.cables.get((n.guid, port))
                if far is None:
                    continue
                peer = by_guid[far[0]]
                px = f"{peer.guid:016x}"
                tail = f'# "{peer.description}" lid {lid[peer.guid]} {self.speed}'
                if n.switch and peer.switch:
                    out.append(f'[{port}]\t"S-{px}"[{far[1]}]\t\t{tail}')
                elif n.switch:
                    out.append(f'[{port}]\t"H-{px}"[{far[1]}]({px}) \t\t{tail}')
                else:
                    out.append(f'[{port}]({hx}) \t"S-{px}"[{far[1]}]\t\t# lid {lid[n.guid]} lmc 0 {tail[2:]}')
            out.append("")
        return "\n".join(out)

    def fabric(self, source: str = "crafted") -> Fabric:
        return parse_ibnetdiscover_text(self.text(), source)
