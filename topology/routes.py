"""Routes through a fabric: forwarding tables (LFTs) from dumps, paths between HCAs, path diversity.

The API is small on purpose (the advice layer uses it for what-if):

* :func:`parse_lft_dump` / :func:`read_lft_dump`: ``ibroute <lid>`` output (one or many switches,
  concatenated), ``dump_fts`` output, OpenSM's ``opensm-lfts.dump`` and ``opensm.fdbs`` (written to
  ``OSM_TMP_DIR``) -> :data:`ForwardingTables`, ``{switch node GUID: {destination LID: out port}}``.
  Port 0 means "this switch"; an entry absent (or port 255) means "no route".
* :class:`RouteError`: a route that cannot be followed. The routes of HCA pairs themselves are
  walked over the tables bound as arrays, by :mod:`topology.route_pairs` (the one route walk with
  :mod:`topology.route_walk`).
* :func:`path_diversity`: how many equal-cost up/down paths join two leaves, from the cabling alone
  (parallel cables count separately); independent of the tables, so it answers "what if".
* :class:`UpDown`: the cabling view behind it: which leaf uplinks lie on a shortest up/down path
  between two leaves (used to plan sweeps when no tables are known).

>>> text = '''Unicast lids [0x0-0x3] of switch Lid 2 guid 0x0000000000000010 (MF0;leaf-1:MQM9700/U1):
...   Lid  Out   Destination
...        Port     Info
... 0x0001 001 : (Channel Adapter portguid 0x0000000000000002: 'n1 mlx5_0')
... 0x0003 005 : (Channel Adapter portguid 0x0000000000000004: 'n2 mlx5_0')
... 2 valid lids dumped
... '''
>>> parse_lft_dump(text, "ibroute")
{'0x0000000000000010': {1: 1, 3: 5}}
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from topology.classify import Classification
from topology.errors import IbfabError
from topology.model import Fabric, Guid, Link, LinkKey, NodeKind, PortRef

ForwardingTables = Mapping[Guid, Mapping[int, int]]


class RouteError(IbfabError):
    """A route that cannot be followed: no table, no entry, a loop, a port without a cable."""

    exit_code = 3


def parse_lft_dump(text: str | Iterable[str], source: str = "<lft dump>") -> dict[Guid, dict[int, int]]:
    """Forwarding tables from ``ibroute``, ``dump_fts``, ``opensm-lfts.dump``, ``opensm.fdbs`` or
    ``ibdiagnet2.fdbs`` text, read by :func:`topology.lft.parse_lfts` (every check and error is
    its own) and given as ``{switch: {LID: port}}``."""
    from topology.lft import parse_lfts

    joined = text if isinstance(text, str) else "\n".join(ln.rstrip("\n") for ln in text)
    return parse_lfts(joined, source).to_mapping()


def read_lft_dump(path: str | Path) -> dict[Guid, dict[int, int]]:
    """:func:`parse_lft_dump` of a file (read in chunks by :func:`topology.lft.read_lfts`)."""
    from topology.lft import read_lfts

    return read_lfts(path).to_mapping()


class UpDown:
    """The cabling seen as up/down (fat-tree) paths: tiers from :mod:`topology.classify`.

    A shortest path between two leaves climbs to the lowest tier where they share an ancestor and
    comes down again. Ancestors are kept as bit masks over the leaves, so a query costs a few bit
    tests per uplink even at 16k HCAs.
    """

    def __init__(self, fabric: Fabric, cls: Classification) -> None:
        self.fabric = fabric
        tiers = {g: c.tier for g, c in cls.nodes.items() if c.tier is not None and c.tier >= 1}
        self.tiers = tiers
        leaves = sorted(g for g, t in tiers.items() if t == 1)
        self.leaf_bit = {g: 1 << i for i, g in enumerate(leaves)}
        self.up: dict[Guid, list[tuple[Guid, Link]]] = defaultdict(list)  # switch -> cables to tier + 1
        for lk in fabric.links:
            ta, tb = tiers.get(lk.a.guid), tiers.get(lk.b.guid)
            if ta is None or tb is None or ta == tb:
                continue
            low, high = (lk.a.guid, lk.b.guid) if ta < tb else (lk.b.guid, lk.a.guid)
            self.up[low].append((high, lk))
        # below[s]: mask of the leaves under switch s (through down cables only).
        self.below: dict[Guid, int] = dict(self.leaf_bit)
        for tier in sorted({t for t in tiers.values() if t > 1}):
            for low, ups in list(self.up.items()):
                if tiers[low] != tier - 1:
                    continue
                for high, _ in ups:
                    self.below[high] = self.below.get(high, 0) | self.below.get(low, 0)

    def _reach(self, switch: Guid, leaf_bit: int, climb: int) -> bool:
        """Can ``switch`` reach the leaf by climbing at most ``climb`` more tiers, then descending?"""
        if self.below.get(switch, 0) & leaf_bit:
            return True
        return climb > 0 and any(self._reach(h, leaf_bit, climb - 1) for h, _ in self.up.get(switch, ()))

    def _climb(self, leaf_a: Guid, leaf_b: Guid) -> int | None:
        bit = self.leaf_bit[leaf_b]
        frontier = {leaf_a}
        for height in range(1, 8):
            frontier = {h for s in frontier for h, _ in self.up.get(s, ())}
            if not frontier:
                return None
            if any(self.below.get(s, 0) & bit for s in frontier):
                return height
        return None

    def uplinks(self, leaf_a: Guid, leaf_b: Guid) -> list[Link]:
        """Cables of ``leaf_a`` to its parents that lie on a shortest up/down path to ``leaf_b``."""
        if leaf_a == leaf_b or leaf_a not in self.leaf_bit or leaf_b not in self.leaf_bit:
            return []
        height = self._climb(leaf_a, leaf_b)
        if height is None:
            return []
        bit = self.leaf_bit[leaf_b]
        return [lk for s, lk in self.up.get(leaf_a, ()) if self._reach(s, bit, height - 1)]


def switch_multiplicity(fabric: Fabric) -> dict[Guid, Counter[Guid]]:
    """Switch-to-switch adjacency with the number of parallel cables between each pair."""
    adj: dict[Guid, Counter[Guid]] = defaultdict(Counter)
    for lk in fabric.links:
        a, b = lk.a.guid, lk.b.guid
        if (
            a == b
            or fabric.nodes[a].kind is not NodeKind.SWITCH
            or fabric.nodes[b].kind is not NodeKind.SWITCH
        ):
            continue
        adj[a][b] += 1
        adj[b][a] += 1
    return adj


def count_paths(adj: Mapping[Guid, Counter[Guid]], src: Guid) -> dict[Guid, int]:
    """Equal-cost (min-hop) paths from ``src`` to every switch it reaches, parallel cables counted."""
    dist = {src: 0}
    count = {src: 1}
    queue = deque([src])
    while queue:
        u = queue.popleft()
        for v, mult in adj.get(u, Counter()).items():
            if v not in dist:
                dist[v] = dist[u] + 1
                count[v] = 0
                queue.append(v)
            if dist[v] == dist[u] + 1:
                count[v] += count[u] * mult
    return count


def path_diversity(fabric: Fabric, leaf_a: Guid, leaf_b: Guid) -> int:
    """Number of equal-cost (min-hop) paths between two leaves, parallel cables counted (the one
    count :func:`fabric.advise.routing_advice.path_diversity` sums over every pair of leaves).

    From the cabling alone, so a what-if fabric (a cable removed) answers directly. 0 when the
    leaves are not joined; 1 for the same leaf.
    """
    if leaf_a == leaf_b:
        return 1
    return count_paths(switch_multiplicity(fabric), leaf_a).get(leaf_b, 0)


def links_of_path(links: Sequence[Link]) -> tuple[tuple[tuple[str, int], tuple[str, int]], ...]:
    """The link keys of a path (for JSON and the store)."""
    return tuple(lk.key for lk in links)


def dr_path(
    fabric: Fabric, origin: PortRef, target: Guid, avoid: frozenset[LinkKey] = frozenset()
) -> str | None:
    """A directed-route path (``0,1,6,2``) from the ``origin`` port to the node ``target`` that
    uses none of the cables in ``avoid``, for tools such as ``ibportstate -D``; None if none exists.

    A LID-routed SMP to a switch may travel in through the very port it disables, and then its
    reply is lost; a directed route around that cable keeps the answer coming back. The first hop
    leaves through ``origin.port`` (0 for a switch's own management port).
    """
    if origin.guid == target:
        return "0"
    start: list[tuple[Guid, tuple[int, ...]]] = []
    if origin.port:
        first = next((lk for p, _, lk in fabric.neighbours(origin.guid) if p == origin.port), None)
        if first is None or first.key in avoid:
            return None
        start.append((first.other(origin.guid).guid, (origin.port,)))
    else:
        start.append((origin.guid, ()))
    # from an HCA's port the HCA is behind; from a switch's port 0 the switch is the first stop
    seen = {origin.guid} if origin.port else set()
    queue = deque(start)
    while queue:
        at, hops = queue.popleft()
        if at == target:
            return ",".join(str(h) for h in (0, *hops))
        if at in seen:
            continue
        seen.add(at)
        node = fabric.nodes.get(at)
        if node is None or node.kind is not NodeKind.SWITCH:
            continue  # directed routes pass through switches only
        for port, far, lk in sorted(fabric.neighbours(at), key=lambda t: t[0]):
            if lk.key not in avoid and far.guid not in seen and len(hops) < 63:
                queue.append((far.guid, (*hops, port)))
    return None
