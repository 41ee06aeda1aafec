"""Is this bandwidth normal? The busbw a healthy nccl-tests run reaches at large sizes, from the
fabric's own HCAs, and a verdict on a run. Pure.

nccl-tests' bus bandwidth (doc/PERFORMANCE.md) is algbw times the collective's factor: 2(n-1)/n
for all_reduce, (n-1)/n for all_gather, reduce_scatter and alltoall, 1 for broadcast, reduce and
sendrecv, over n ranks. It is defined so that it reads as the speed of the slowest link a
collective crosses. Across nodes that link is the network, and the bound follows from it:

* **ring collectives** (all_reduce, all_gather, reduce_scatter, broadcast, reduce): each node
  sends the collective's bus bytes through its HCAs, so busbw <= the HCAs each node uses x
  their data rate (a node uses at most one HCA per rank it runs: a rank per node uses one);
* **alltoall**: each rank sends (n-g)/n of its data off its node of g ranks, so
  busbw <= node bandwidth x (n-1) / (g (n-g)) (a GPU's own HCA at scale); where the run's nodes on
  one leaf send more off the leaf than its uplinks carry, the leaf's share bounds it;
* **sendrecv**: the pair that crosses two nodes runs over one HCA: busbw <= one HCA's rate.

A healthy run reaches :data:`EXPECTED` of the bound at large sizes and is *low* under
:data:`LOW`. Calibrated on the real runs in tests/data/realdata/nccl-tests whose hardware their
source states: 2 DGX A100 with 8 HDR HCAs each reach 188.7 GB/s of 200 (94 %); NVIDIA quotes 46-48
GB/s per NDR HCA (92-96 %, nccl-tests#290); a Slingshot-11 pair 22.9 of 25 (91.5 %). A run whose
best busbw beats the bound used fewer network bytes than a ring (NVLS, tree, SHARP, few nodes:
the two-node H100 capture reaches 471 GB/s): it is normal, and said to be above the model.

Not modelled, said unknown: a single node (NVLink or PCIe, which the fabric does not describe),
a run without rows at 1 GiB or more (busbw is still rising), a collective of another kind
(gather, scatter, hypercube), hosts the fabric does not know.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from probes.nccl_parse import NcclTestResult
from topology.classify import Classification
from topology.model import Fabric, Link

EXPECTED = (0.90, 0.96)  # of the bound, at large sizes (see the module docstring)
LOW = 0.85  # under this fraction of the bound a run is low
LARGE_BYTES = 1 << 30  # sizes judged: busbw is near its plateau from 1 GiB on (2 nodes: 91-96 %)
# Lanes of 8b/10b links carry 80 % data; 64b/66b (FDR and later) ~97 %, inside EXPECTED.
_DATA_FRACTION = {"SDR": 0.8, "DDR": 0.8, "QDR": 0.8}
_RING = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce")
_FACTOR_STEPS = {"allreduce": 2, "allgather": 1, "reducescatter": 1, "alltoall": 1}


def collective_key(name: str) -> str:
    """``all_reduce_perf``, ``AllReduce``, ``all_reduce`` -> ``allreduce``."""
    return name.lower().removesuffix("_perf").replace("_", "")


def bus_factor(collective: str, nranks: int) -> float:
    """busbw / algbw for ``collective`` over ``nranks`` (nccl-tests' GetBw)."""
    steps = _FACTOR_STEPS.get(collective_key(collective), 0)
    return steps * (nranks - 1) / nranks if steps and nranks > 0 else 1.0


@dataclass(frozen=True, slots=True)
class HcaNet:
    """One HCA of a host as the fabric shows it: its name, the data rate its cable should give (its
    peers' where it trains below them), its leaf, and the rate it trains at now."""

    name: str
    gbps: float
    leaf: str | None
    trained_gbps: float | None = None  # None: as gbps

    @property
    def below_design(self) -> bool:
        return self.trained_gbps is not None and self.trained_gbps < self.gbps


@dataclass(frozen=True, slots=True)
class FabricFacts:
    """What ibfab knows of the hosts of a run: their HCAs, and each leaf's uplink capacity."""

    hosts: Mapping[str, tuple[HcaNet, ...]]
    leaf_uplinks_gbps: Mapping[str, float]
    source: str  # 'topology 12', 'lab demo', '--hcas 8 --rate 400'
    every_host: tuple[HcaNet, ...] = ()  # given by hand: the HCAs of any host

    def of(self, host: str) -> tuple[HcaNet, ...] | None:
        """The host's HCAs, by its name or its short name (NCCL prints what gethostname says)."""
        return self.hosts.get(host) or self.hosts.get(host.split(".", 1)[0]) or self.every_host or None

    def rails(self, host: str) -> int | None:
        hcas = self.of(host)
        return len(hcas) if hcas else None


def fabric_facts(fabric: Fabric, cls: Classification, source: str) -> FabricFacts:
    """Every host's HCAs (in rail order) with the data rate their cable should give and gives,
    and their leaf; and the uplink capacity of every leaf (at design rates), from a discovered
    fabric. The design rate of a cable that trains below its peers is its peers'
    (:func:`topology.wiring.links_below_peers`): a degraded cable does not lower what is expected."""
    from topology.wiring import links_below_peers

    design = {b.link.key: b.gbps for b in links_below_peers(fabric, cls)}

    def rate(lk: Link, rated: float | None = None) -> float:
        return (lk.gbps if rated is None else rated) * _DATA_FRACTION.get(lk.speed, 1.0)

    hosts: dict[str, list[tuple[int, HcaNet]]] = {}
    for guid, c in cls.nodes.items():
        if c.host is None or c.tier != 0:
            continue
        links = fabric.links_of(guid)
        if not links:
            continue
        lk = max(links, key=lambda x: x.gbps)
        leaf = cls.nodes[c.leaf].name if c.leaf is not None and c.leaf in cls.nodes else None
        order = c.rail if c.rail is not None else (c.hca_index or 0)
        should = rate(lk, design.get(lk.key))
        hosts.setdefault(c.host, []).append(
            (order, HcaNet(c.adapter or c.name, should, leaf, rate(lk) if rate(lk) != should else None))
        )
    uplinks: dict[str, float] = {}
    for guid, c in cls.nodes.items():
        if c.tier != 1:
            continue
        total = 0.0
        for lk in fabric.links_of(guid):
            far = cls.nodes.get(lk.other(guid).guid)
            if far is not None and far.tier is not None and far.tier > 1:
                total += rate(lk, design.get(lk.key))
        uplinks[c.name] = total
    ordered = {h: tuple(x for _, x in sorted(v, key=lambda t: t[0])) for h, v in hosts.items()}
    return FabricFacts(ordered, uplinks, source)


def uniform_facts(hcas: int, gbps: float, source: str) -> FabricFacts:
    """Facts given by hand: every host has ``hcas`` HCAs of ``gbps`` (no leaves known)."""
    return FabricFacts({}, {}, source, tuple(HcaNet("", gbps, None) for _ in range(hcas)))


@dataclass(frozen=True, slots=True)
class BusbwModel:
    """The busbw a healthy run reaches, and how it follows from the fabric."""

    collective: str
    nranks: int
    nodes: int
    ranks_per_node: int
    hcas_per_node: int  # the HCAs each node uses: its rails, at most one per rank
    hca_gbps: float  # their data rate (the slowest host's)
    factor: float  # busbw = algbw x factor
    kind: str  # 'ring', 'alltoall', 'sendrecv'
    bound_gbs: float  # the network's bound on busbw, GB/s
    leaf_bound_gbs: float | None  # alltoall: the busiest leaf's uplinks, when they bind
    source: str  # where the fabric facts came from

    @property
    def expected_gbs(self) -> tuple[float, float]:
        return self.bound_gbs * EXPECTED[0], self.bound_gbs * EXPECTED[1]

    @property
    def low_gbs(self) -> float:
        return self.bound_gbs * LOW


@dataclass(frozen=True, slots=True)
class BusbwVerdict:
    """``normal``, ``low`` or ``unknown`` (``why`` says which input is missing)."""

    verdict: str
    model: BusbwModel | None = None
    why: str | None = (
        None  # unknown: single_node, no_rows, small_sizes, no_collective, not_modelled, no_fabric, no_ranks
    )
    best_gbs: float | None = None  # the best busbw at the judged sizes
    best_size: int | None = None
    judged_sizes: tuple[int, ...] = ()
    low_sizes: tuple[tuple[int, float], ...] = ()  # (size, busbw) under the low bar

    @property
    def ratio(self) -> float | None:
        """The best busbw as a fraction of the bound."""
        if self.model is None or self.best_gbs is None or not self.model.bound_gbs:
            return None
        return self.best_gbs / self.model.bound_gbs

    @property
    def above_model(self) -> bool:
        return self.ratio is not None and self.ratio > 1.0

    @property
    def failed(self) -> bool:
        return self.verdict == "low"


def _alltoall_leaf_bound(
    facts: FabricFacts, hosts: Sequence[str], hca_gbps: float, node_gbs: float, n: int, g: int
) -> float | None:
    """alltoall's bound from the busiest leaf's uplinks, when they carry less than the run's nodes
    on that leaf send off it; None when they do not bind (or leaves are not known)."""
    if not facts.leaf_uplinks_gbps:
        return None
    on_leaf: Counter[str] = Counter()
    hcas_on_leaf: Counter[str] = Counter()
    for h in hosts:
        hcas = facts.of(h) or ()
        for leaf in {x.leaf for x in hcas if x.leaf}:
            on_leaf[leaf] += 1
        for x in hcas:
            if x.leaf:
                hcas_on_leaf[x.leaf] += 1
    nodes = len(hosts)
    worst: float | None = None
    for leaf, count in on_leaf.items():
        uplink = facts.leaf_uplinks_gbps.get(leaf, 0.0)
        if not uplink or count >= nodes:
            continue  # every node on this leaf: nothing leaves it
        off = (nodes - count) / (nodes - 1)  # a node's share of peers beyond the leaf
        demand = hcas_on_leaf[leaf] * hca_gbps * off  # Gb/s the leaf's HCAs send off it at line rate
        if demand > uplink:
            scaled = node_gbs * uplink / demand * (n - 1) / (g * (n - g))
            worst = scaled if worst is None else min(worst, scaled)
    return worst


def busbw_model(collective: str, nranks: int, hosts: Sequence[str], facts: FabricFacts) -> BusbwModel | str:
    """The model for a run of ``collective`` over ``nranks`` ranks on ``hosts``; else why not (a
    word of :attr:`BusbwVerdict.why`)."""
    key = collective_key(collective)
    nodes = len(hosts)
    if nodes <= 1:
        return "single_node"
    if key not in (*_RING, "alltoall", "sendrecv"):
        return "not_modelled"
    known = [facts.of(h) for h in hosts]
    if not all(known):
        return "no_fabric"
    if nranks % nodes:
        return "no_ranks"
    g = nranks // nodes
    rails = min(len(k or ()) for k in known)
    used = min(rails, g)
    gbps = min(min(x.gbps for x in (k or ())[:used]) for k in known)
    if gbps <= 0:
        return "no_fabric"
    node_gbs = used * gbps / 8.0
    leaf_bound = None
    if key in _RING:
        kind, bound = "ring", node_gbs
    elif key == "alltoall":
        kind, bound = "alltoall", node_gbs * (nranks - 1) / (g * (nranks - g))
        leaf_bound = _alltoall_leaf_bound(facts, hosts, gbps, node_gbs, nranks, g)
        bound = min(bound, leaf_bound) if leaf_bound is not None else bound
    else:
        kind, bound = "sendrecv", gbps / 8.0
    return BusbwModel(
        collective,
        nranks,
        nodes,
        g,
        used,
        gbps,
        bus_factor(collective, nranks),
        kind,
        bound,
        leaf_bound,
        facts.source,
    )


def judge_busbw(
    result: NcclTestResult,
    facts: FabricFacts | None,
    *,
    collective: str | None = None,
    hosts: Sequence[str] | None = None,
    nranks: int | None = None,
) -> BusbwVerdict:
    """The verdict on a run (see the module docstring). ``collective``, ``hosts`` and ``nranks``
    stand in where the output does not say them (a table without its header)."""
    if not result.rows:
        return BusbwVerdict("unknown", why="no_rows")
    run_hosts = list(hosts or result.hosts)
    if len(run_hosts) == 1 or (not run_hosts and result.environment.nodes == 1):
        return BusbwVerdict("unknown", why="single_node")
    if facts is None:
        return BusbwVerdict("unknown", why="no_fabric")
    name = result.collective or collective
    if name is None:
        return BusbwVerdict("unknown", why="no_collective")
    n = nranks or result.nranks
    if not run_hosts or not n:
        return BusbwVerdict("unknown", why="no_ranks")
    model = busbw_model(name, n, run_hosts, facts)
    if isinstance(model, str):
        return BusbwVerdict("unknown", why=model)
    judged = [r for r in result.rows if r.size >= LARGE_BYTES]
    if not judged:
        return BusbwVerdict("unknown", model, "small_sizes")
    best = {r.size: max(r.out_of_place.busbw, r.in_place.busbw) for r in judged}
    best_size = max(best, key=lambda s: best[s])
    best_gbs = best[best_size]
    sizes = tuple(best)
    if best_gbs >= model.low_gbs:
        return BusbwVerdict("normal", model, None, best_gbs, best_size, sizes)
    low = tuple((s, bw) for s, bw in best.items() if bw < model.low_gbs)
    return BusbwVerdict("low", model, None, best_gbs, best_size, sizes, low)


__all__ = [
    "EXPECTED",
    "LARGE_BYTES",
    "LOW",
    "BusbwModel",
    "BusbwVerdict",
    "FabricFacts",
    "HcaNet",
    "bus_factor",
    "busbw_model",
    "collective_key",
    "fabric_facts",
    "judge_busbw",
    "uniform_facts",
]
