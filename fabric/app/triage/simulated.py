"""The triage's lab backend: simulated single-node runs and collectives (:mod:`probes.labnccl`)
and simulated ib_write_bw pairs (:mod:`probes.labtraffic`) on a fabric, clearly named
``lab-simulated``. The runs of one round are computed as if each ran alone (halves share no
host; spine cables two halves both cross are not modelled as shared). Each call is one round; a
node planted ``lost`` answers no test from its round on, as a node whose slurmd or sshd died."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from fabric.app.triage.bisect import PairOutcome, RunOutcome
from fabric.app.triage.lost import NodeLost, Unjudged
from probes.labnccl import SIMULATED, PlantedNode, SimulatedCluster
from probes.labtraffic import PortKey, simulate_round
from probes.nccl_model import FabricFacts
from probes.pairs import Endpoint, Probe
from probes.plan import endpoints
from topology.classify import Classification
from topology.model import Fabric, Guid, Link
from topology.routes import UpDown


def updown_paths(
    fabric: Fabric, cls: Classification, pairs: Sequence[tuple[Guid, Guid]]
) -> dict[tuple[Guid, Guid], list[Link]]:
    """Min-hop up/down routes between HCAs for a fabric without forwarding tables (a generated
    one): the uplink by the destination's index among the candidates, as D-mod-K would pick;
    only two-tier routes (a three-tier pair gets its host cables only). The lab uses OpenSM's."""
    ud = UpDown(fabric, cls)
    out: dict[tuple[Guid, Guid], list[Link]] = {}
    for a, b in pairs:
        la, lb = cls.nodes[a].leaf, cls.nodes[b].leaf
        ca, cb = fabric.links_of(a), fabric.links_of(b)
        if not ca or not cb or la is None or lb is None:
            continue
        path = [ca[0]]
        if la != lb:
            ups = sorted(ud.uplinks(la, lb), key=lambda lk: lk.key)
            if ups:
                up = ups[int(b, 16) % len(ups)]
                spine = up.other(la).guid
                down = sorted(
                    (lk for lk in fabric.links_of(spine) if lk.other(spine).guid == lb), key=lambda lk: lk.key
                )
                if down:
                    path += [up, down[int(b, 16) % len(down)]]
        out[(a, b)] = [*path, cb[0]]
    return out


class SimulatedBackend:
    """Simulated runs on a fabric (see the module docstring)."""

    name = SIMULATED

    def __init__(
        self,
        fabric: Fabric,
        cls: Classification,
        facts: FabricFacts,
        planted: Mapping[str, PlantedNode],
        *,
        route_of: Callable[[Guid, Guid], Sequence[Link]] | None = None,
        error_rates: Mapping[PortKey, int] | None = None,
        gpus_per_node: int = 8,
    ) -> None:
        self.fabric = fabric
        self.cls = cls
        self.facts = facts
        self.error_rates = dict(error_rates or {})
        self.host_eps: dict[str, list[Endpoint]] = {}
        for ep in sorted(endpoints(fabric, cls), key=lambda e: (e.host, e.rail)):
            self.host_eps.setdefault(ep.host, []).append(ep)
        self.route_of = route_of
        self.paths: dict[tuple[Guid, Guid], Sequence[Link]] = {}
        self.names = {g: c.name for g, c in cls.nodes.items()}
        self.planted = {h: p for h, p in planted.items() if p.kind != "lost"}
        self.lost_from = {p.host: p.from_round for p in planted.values() if p.kind == "lost"}
        self.gpus_per_node = gpus_per_node
        self.round = 0

    def _next_round(self) -> None:
        self.round += 1

    def _lost(self, hosts: Sequence[str]) -> Unjudged | None:
        """The test over ``hosts`` does not run when one of them is lost by this round."""
        gone = [
            NodeLost(h, f"{SIMULATED}: {h} does not answer (planted lost from round {self.lost_from[h]})")
            for h in hosts
            if self.lost_from.get(h, self.round + 1) <= self.round
        ]
        return Unjudged(tuple(gone), gone[0].said) if gone else None

    def _endpoint(self, host: str, rail: int) -> Endpoint | None:
        eps = self.host_eps.get(host, [])
        return eps[rail] if rail < len(eps) else None

    def _route(self, a: Endpoint, b: Endpoint) -> Sequence[Link]:
        key = (a.guid, b.guid)
        if key not in self.paths:
            if self.route_of is not None:
                self.paths[key] = self.route_of(a.guid, b.guid)
            else:
                self.paths.update(updown_paths(self.fabric, self.cls, [key]))
        return self.paths.get(key, ())

    def _cluster(self, hosts: Sequence[str]) -> SimulatedCluster:
        route: dict[tuple[str, str, int], Sequence[Link]] = {}
        rails = min(len(self.facts.of(h) or ()) for h in hosts)
        for a, b in zip(hosts, [*hosts[1:], hosts[0]], strict=True):
            for r in range(rails):
                ea, eb = self._endpoint(a, r), self._endpoint(b, r)
                if ea is not None and eb is not None and a != b:
                    route[(a, b, r)] = self._route(ea, eb)
        return SimulatedCluster(self.facts, self.planted, route, self.gpus_per_node)

    def single_nodes(self, hosts: Sequence[str]) -> list[RunOutcome]:
        self._next_round()
        cluster = SimulatedCluster(self.facts, self.planted, {}, self.gpus_per_node)
        return [
            RunOutcome((h,), None, lost.said, unjudged=lost)
            if (lost := self._lost([h])) is not None
            else RunOutcome((h,), cluster.single_node(h))
            for h in hosts
        ]

    def collectives(self, sets: Sequence[Sequence[str]]) -> list[RunOutcome]:
        self._next_round()
        return [
            RunOutcome(tuple(s), None, lost.said, unjudged=lost)
            if (lost := self._lost(s)) is not None
            else RunOutcome(tuple(s), self._cluster(s).collective(s))
            for s in sets
        ]

    def _design(self, lk: Link) -> float:
        """A cable's design rate: the rate the fabric facts give its HCA end, else as trained."""
        for end in (lk.a.guid, lk.b.guid):
            c = self.cls.nodes.get(end)
            if c is not None and c.host is not None:
                for hca in self.facts.of(c.host) or ():
                    if hca.name == (c.adapter or c.name):
                        return hca.gbps
        return lk.gbps

    def pairs(self, pairs: Sequence[tuple[str, str, int]]) -> list[PairOutcome]:
        self._next_round()
        probes: list[Probe] = []
        keep: list[tuple[str, str, int] | None] = []
        for client, server, rail in pairs:
            a, b = self._endpoint(client, rail), self._endpoint(server, rail)
            if a is None or b is None or self._lost([client, server]) is not None:
                keep.append(None)
                continue
            self._route(a, b)
            probes.append(Probe(a, b, 0))
            keep.append((client, server, rail))
        results = iter(simulate_round(self.fabric, probes, self.paths, self.error_rates))
        out = []
        for want, asked in zip(keep, pairs, strict=True):
            lost = self._lost(asked[:2])
            if lost is not None:
                out.append(PairOutcome(*asked, None, None, lost.said, unjudged=lost))
                continue
            if want is None:
                out.append(PairOutcome(asked[0], asked[1], asked[2], None, None, "no HCA on that rail"))
                continue
            r = next(results)
            route = self.paths.get((r.client.guid, r.server.guid), ())
            expected = min((self._design(lk) for lk in route), default=None)
            names = tuple(
                f"{self.names.get(lk.a.guid, lk.a.guid)}/{lk.a.port}-{self.names.get(lk.b.guid, lk.b.guid)}/{lk.b.port}"
                for lk in route
            )
            out.append(
                PairOutcome(want[0], want[1], want[2], r.gbps, expected, None if r.ok else r.error, names)
            )
        return out


__all__ = ["SimulatedBackend", "updown_paths"]
