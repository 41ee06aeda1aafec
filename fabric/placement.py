"""Topology-aware node choice: which free compute hosts a job should get, and in which ring order.

``place(fabric, cls, n, free=..., policy="pack"|"spread", exclude={host: reason})``:

* **pack** (training): one spine group when the job fits in one (leaves that reach the same
  upper switches: a pod; traffic between them never climbs above those switches), then the
  fewest scalable units, then the fewest leaves. In a rail-optimized
  fabric every host touches all the rail leaves of its unit, so a unit is the placement domain and
  its leaves come as a block; elsewhere the domain is the set of leaves a host is cabled to. The
  choice is exact (a small dynamic programme over units and, inside a unit, over its fullest
  domains), and deterministic: ties go to the lower unit.
* **spread**: round-robin over units, and inside each unit over its domains (failure domains).

The ring order keeps each domain's hosts together, so the ring crosses the spine tier once per
domain (never when one domain holds the job). Hosts are compute hosts only: service hosts
(login, storage, UFM: topology.hostroles; ``include_service=True`` takes them too), SHARP
aggregation nodes, switch management HCAs, HCAs without a real host name and hosts cabled to no
switch are never candidates (:attr:`Sites.left_out` says which and why).

A health view (:class:`PlacementHealth`, built by the health model's caller) is optional: with it the
cost names the worst link on the placement's paths, and :func:`unhealthy_hosts` turns it into an
``exclude`` mapping.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from fabric.health.status import Status, status_rank
from probes.inventory import expand_hosts, host_sort_key
from topology.classify import Classification, Role
from topology.errors import InputError, UsageError
from topology.model import Fabric, Guid, LinkKey, NodeKind
from topology.nameformats import SLURM_NODE, unfit

POLICIES = ("pack", "spread")


# -- health view (provided by the health model's caller; this module never imports it) ----------
@dataclass(frozen=True, slots=True)
class HostHealth:
    status: str  # ok | watch | warn | critical: the worst of the host's own cables
    reasons: tuple[str, ...] = ()
    repeat_offender: bool = False


@dataclass(frozen=True, slots=True)
class PlacementHealth:
    hosts: Mapping[str, HostHealth] = field(default_factory=dict)
    links: Mapping[LinkKey, str] = field(default_factory=dict)  # Link.key -> status


def health_view_from_links(
    fabric: Fabric,
    cls: Classification,
    links: Iterable[tuple[LinkKey, str, Sequence[str], bool]],
) -> PlacementHealth:
    """Per-host health from per-link records ``(key, status, reasons, repeat_offender)``.

    A host takes the worst status of its own cables; each bad cable adds a reason naming the
    switch port, e.g. ``critical link leaf-su01-r2:5 (BER 3e-12)``.
    """
    link_status: dict[LinkKey, str] = {}
    worst: dict[str, str] = {}
    reasons: dict[str, list[str]] = defaultdict(list)
    repeat: set[str] = set()
    for key, status, why, repeat_offender in links:
        link_status[key] = status
        for (guid, _), (far_guid, far_port) in ((key[0], key[1]), (key[1], key[0])):
            c = cls.nodes.get(Guid(guid))
            if c is None or c.role not in _HOST_ROLES or c.host is None:
                continue
            host = c.host
            if status_rank(status) > status_rank(worst.get(host, "ok")):
                worst[host] = status
            else:
                worst.setdefault(host, "ok")
            if status_rank(status) >= Status.WARN.rank or repeat_offender:
                far = cls.nodes.get(Guid(far_guid))
                where = f"{far.name if far else far_guid}:{far_port}"
                detail = f" ({'; '.join(why)})" if why else ""
                reasons[host].append(f"{status} link {where}{detail}")
            if repeat_offender:
                repeat.add(host)
    hosts = {
        h: HostHealth(s, tuple(reasons.get(h, ())), h in repeat)
        for h, s in sorted(worst.items(), key=lambda kv: host_sort_key(kv[0]))
    }
    return PlacementHealth(MappingProxyType(hosts), MappingProxyType(link_status))


def unhealthy_hosts(health: PlacementHealth, at_least: str = "warn") -> dict[str, str]:
    """``exclude`` mapping: hosts at or above ``at_least``, and repeat offenders, with the reason."""
    bar = status_rank(at_least)
    out: dict[str, str] = {}
    for host, h in health.hosts.items():
        if status_rank(h.status) >= bar:
            out[host] = h.reasons[0] if h.reasons else f"health {h.status}"
        elif h.repeat_offender:
            out[host] = "repeat offender" + (f": {h.reasons[0]}" if h.reasons else "")
    return out


# -- where each compute host sits -----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LeftOut:
    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class HostSite:
    host: str
    unit: int  # scalable unit (classification group); -1 when its leaves have none
    domain: str  # placement domain: the unit in rail-optimized fabrics, else the host's leaf set
    leaves: tuple[Guid, ...]  # every leaf its HCAs are cabled to, sorted
    rail_leaves: tuple[tuple[int, Guid], ...]  # (rail, or HCA index off-rail, leaf)
    hcas: tuple[Guid, ...]
    pod: int = 0  # spine group: the hosts whose unit's leaves reach the same upper switches


@dataclass(frozen=True)
class Sites:
    hosts: Mapping[str, HostSite]  # natural host order
    left_out: tuple[LeftOut, ...]  # HCAs that are no compute host's, with the reason
    unit_names: Mapping[int, str]  # su01.. (rail-optimized) or pod01..
    rail_optimized: bool
    pods: int = 1  # spine groups among the hosts


def unit_name(cls: Classification, unit: int) -> str:
    width = max(2, len(str(len(cls.groups))))
    return f"{'su' if cls.rail_optimized else 'pod'}{unit + 1:0{width}d}" if unit >= 0 else "none"


_HOST_ROLES = frozenset({Role.COMPUTE, Role.SERVICE})
SERVICE_HOST = "service host"  # the reason a service host is left out
NO_SWITCH = "cabled to no switch"
_LEFT_OUT_REASON = {
    Role.AGGREGATION: "SHARP aggregation node",
    Role.UNNAMED: "HCA without a host name",
    Role.SWITCH_MGMT: "switch management HCA",
    Role.ROUTER: "router",
}
# The reasons a fabric's host or HCA is no candidate (Sites.left_out), whatever the job asks.
FABRIC_LEFT_OUT = frozenset({*_LEFT_OUT_REASON.values(), SERVICE_HOST, NO_SWITCH})


def host_sites(fabric: Fabric, cls: Classification, include_service: bool = False) -> Sites:
    """Every compute host (and service host, with ``include_service``) with its unit, domain and
    leaves; the other hosts and HCAs as left-out items."""
    left: list[LeftOut] = []
    for guid, c in cls.nodes.items():
        if c.role in _LEFT_OUT_REASON:
            desc = " ".join(fabric.nodes[guid].description.split()) or guid
            left.append(LeftOut(f"{desc} ({guid})", _LEFT_OUT_REASON[c.role]))
    sites: dict[str, HostSite] = {}
    for host, hcas in cls.hosts.items():
        if not include_service and cls.is_service_host(host):
            left.append(LeftOut(host, SERVICE_HOST))
            continue
        rail_leaves: list[tuple[int, Guid]] = []
        units: dict[int, int] = defaultdict(int)
        for g in hcas:
            c = cls.nodes[g]
            if c.leaf is None or fabric.nodes[c.leaf].kind is not NodeKind.SWITCH:
                continue
            key = c.rail if c.rail is not None else (c.hca_index if c.hca_index is not None else 0)
            rail_leaves.append((key, c.leaf))
            units[c.group if c.group is not None else -1] += 1
        if not rail_leaves:
            left.append(LeftOut(host, NO_SWITCH))
            continue
        unit = max(sorted(units), key=lambda u: units[u])  # the unit most of its HCAs are in
        leaves = tuple(sorted({leaf for _, leaf in rail_leaves}))
        if cls.rail_optimized:
            domain = unit_name(cls, unit)
        else:
            domain = "+".join(cls.nodes[leaf].name for leaf in leaves)
        sites[host] = HostSite(host, unit, domain, leaves, tuple(sorted(rail_leaves)), hcas)
    ordered = {h: sites[h] for h in sorted(sites, key=host_sort_key)}
    left.sort(key=lambda lo: (lo.reason, host_sort_key(lo.name)))
    names = {u: unit_name(cls, u) for u in sorted({s.unit for s in sites.values()})}
    pod_of = _spine_groups(fabric, cls, ordered.values())
    ordered = {h: replace(s, pod=pod_of[h]) for h, s in ordered.items()}
    return Sites(
        MappingProxyType(ordered),
        tuple(left),
        MappingProxyType(names),
        cls.rail_optimized,
        len(set(pod_of.values())) or 1,
    )


def _spine_groups(fabric: Fabric, cls: Classification, sites: Iterable[HostSite]) -> dict[str, int]:
    """Each host's spine group, numbered in host order: the set of switches one tier above the
    leaves of its unit (of its own leaves when it has no unit). Two units under the same spines
    are one group; a fabric of one spine layer is one group."""
    uppers: dict[tuple[int, tuple[Guid, ...]], frozenset[Guid]] = {}
    number: dict[frozenset[Guid], int] = {}
    out: dict[str, int] = {}
    for s in sites:
        key = (s.unit, () if s.unit >= 0 else s.leaves)
        if key not in uppers:
            leaves = cls.groups[s.unit].leaves if s.unit >= 0 else s.leaves
            uppers[key] = frozenset(
                far.guid
                for leaf in leaves
                for _, far, _ in fabric.neighbours(leaf)
                if (c := cls.nodes.get(far.guid)) is not None
                and c.tier is not None
                and c.tier == (cls.nodes[leaf].tier or 0) + 1
            )
        out[s.host] = number.setdefault(uppers[key], len(number))
    return out


# -- the placement ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PlacementCost:
    units: int
    leaves: int
    crossings: int  # ring neighbours in different domains (traffic over the spine tier)
    units_min: int  # fewest units any n free hosts need
    leaves_min: int  # fewest leaves among placements with the fewest units
    crossings_min: int  # fewest crossings any ring over n free hosts needs
    worst_link: str | None = None  # worst health status on the placement's paths (health given)
    worst_links: tuple[str, ...] = ()  # those links, named by their switch ends
    spine_groups: int = 1  # spine groups (pods) the hosts are in
    spine_groups_min: int = 1  # fewest spine groups any n free hosts need

    def to_dict(self) -> dict[str, object]:
        return {
            "units": self.units,
            "leaves": self.leaves,
            "spine_crossings": self.crossings,
            "units_min": self.units_min,
            "leaves_min": self.leaves_min,
            "spine_crossings_min": self.crossings_min,
            "worst_link": self.worst_link,
            "worst_links": list(self.worst_links),
            "spine_groups": self.spine_groups,
            "spine_groups_min": self.spine_groups_min,
        }


@dataclass(frozen=True)
class Placement:
    hosts: tuple[str, ...]  # ring order
    policy: str
    cost: PlacementCost
    left_out: tuple[LeftOut, ...]  # hosts that could not be chosen, and why
    units: tuple[str, ...]  # unit names used
    domains: tuple[str, ...]  # domains in ring order
    service: frozenset[str] = frozenset()  # the chosen hosts that are service hosts (--include-service)

    def to_dict(self) -> dict[str, object]:
        return {
            "hosts": list(self.hosts),
            "roles": {h: "service" if h in self.service else "compute" for h in self.hosts},
            "policy": self.policy,
            "cost": self.cost.to_dict(),
            "units": list(self.units),
            "domains": list(self.domains),
            "left_out": [{"host": lo.name, "reason": lo.reason} for lo in self.left_out],
        }


def place(
    fabric: Fabric,
    cls: Classification,
    n: int,
    free: Iterable[str] | None = None,
    policy: str = "pack",
    exclude: Mapping[str, str] | None = None,
    health: PlacementHealth | None = None,
    sites: Sites | None = None,
    include_service: bool = False,
) -> Placement:
    """Choose ``n`` compute hosts (and service hosts with ``include_service``) from ``free``
    (default: all) minus ``exclude``; see the module doc."""
    if policy not in POLICIES:
        raise UsageError(f"unknown placement policy {policy!r} (use pack or spread)")
    if n < 1:
        raise UsageError(f"cannot place {n} nodes: ask for at least 1")
    sites = sites or host_sites(fabric, cls, include_service)
    candidates, left_out = _candidates(sites, free, exclude or {})
    left_out = [*sites.left_out, *left_out]  # the fabric's non-candidates first (service hosts...)
    if n > len(candidates):
        raise UsageError(
            f"cannot place {n} nodes: only {len(candidates)} free compute hosts"
            + (f" ({len(left_out)} left out)" if left_out else "")
        )
    domains = _domains(sites, candidates)
    if policy == "pack":
        chosen, best_units, best_leaves = _pack(_one_spine_group(domains, n), n)
    else:
        chosen = _spread(domains, n)
        best_units, best_leaves = _optimum(domains, n)
    ring = ring_order(sites, chosen)
    cost = evaluate(fabric, cls, ring, sites, health, (best_units, best_leaves, _crossings_min(domains, n)))
    pod_caps: dict[int, int] = defaultdict(int)
    for d in domains:
        pod_caps[d.pod] += len(d.hosts)
    cost = replace(
        cost,
        spine_groups=len({sites.hosts[h].pod for h in ring}),
        spine_groups_min=_fewest(pod_caps.values(), n),
    )
    used_units = tuple(sites.unit_names[u] for u in sorted({sites.hosts[h].unit for h in ring}))
    seen: dict[str, None] = {}
    for h in ring:
        seen.setdefault(sites.hosts[h].domain, None)
    service = frozenset(h for h in ring if cls.is_service_host(h))
    return Placement(ring, policy, cost, tuple(left_out), used_units, tuple(seen), service)


def ring_order(sites: Sites, hosts: Iterable[str]) -> tuple[str, ...]:
    """Hosts grouped by unit, then domain, then name: one spine crossing per domain boundary."""
    return tuple(
        sorted(
            hosts,
            key=lambda h: (sites.hosts[h].unit, sites.hosts[h].domain, host_sort_key(h)),
        )
    )


def ring_crossings(sites: Sites, ring: Sequence[str]) -> int:
    """Neighbours (the last wrapping to the first) in different domains."""
    if len(ring) < 2:
        return 0
    doms = [sites.hosts[h].domain for h in ring]
    return sum(1 for i in range(len(doms)) if doms[i] != doms[i - 1])


def evaluate(
    fabric: Fabric,
    cls: Classification,
    ring: Sequence[str],
    sites: Sites | None = None,
    health: PlacementHealth | None = None,
    bounds: tuple[int, int, int] = (0, 0, 0),
) -> PlacementCost:
    """The cost of any host list taken as a ring (for comparing with naive placements)."""
    sites = sites or host_sites(fabric, cls)
    units = {sites.hosts[h].unit for h in ring}
    leaves = {leaf for h in ring for leaf in sites.hosts[h].leaves}
    worst, worst_links = (None, ()) if health is None else _worst_link(fabric, cls, sites, ring, health)
    return PlacementCost(len(units), len(leaves), ring_crossings(sites, ring), *bounds, worst, worst_links)


# -- internals ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Domain:
    unit: int
    name: str
    hosts: tuple[str, ...]
    leaves: frozenset[Guid]
    pod: int = 0


def _candidates(
    sites: Sites, free: Iterable[str] | None, exclude: Mapping[str, str]
) -> tuple[list[str], list[LeftOut]]:
    left: list[LeftOut] = []
    if free is None:
        pool = list(sites.hosts)
    else:
        wanted = set(free)
        pool = [h for h in sites.hosts if h in wanted]
        left += [LeftOut(h, "not free") for h in sites.hosts if h not in wanted]
        counted = {lo.name for lo in sites.left_out}  # a service host: counted as one already
        left += [
            LeftOut(h, "not a compute host of this fabric")
            for h in sorted(wanted - set(sites.hosts) - counted, key=host_sort_key)
        ]
    out = []
    for h in pool:
        bad = unfit(h, SLURM_NODE)  # the ring goes out as a hostfile or a Slurm node list
        if h in exclude:
            left.append(LeftOut(h, f"excluded: {exclude[h]}"))
        elif bad is not None:
            left.append(LeftOut(h, f"not a host name a hostfile or Slurm node list can carry: {bad.why}"))
        else:
            out.append(h)
    return out, left


def _domains(sites: Sites, candidates: Iterable[str]) -> list[_Domain]:
    members: dict[tuple[int, str], list[str]] = defaultdict(list)
    for h in candidates:
        s = sites.hosts[h]
        members[(s.unit, s.domain)].append(h)
    return [
        _Domain(
            u,
            d,
            tuple(hs),
            frozenset(leaf for h in hs for leaf in sites.hosts[h].leaves),
            sites.hosts[hs[0]].pod,
        )
        for (u, d), hs in sorted(members.items())
    ]


def _one_spine_group(domains: Sequence[_Domain], n: int) -> Sequence[_Domain]:
    """The domains of the spine group that holds ``n`` hosts in the fewest units, then leaves
    (the lower group on a tie), when one can; else all of them. A job that fits under one set of
    spines is never spread over two: its traffic would climb to the cores."""
    by_pod: dict[int, list[_Domain]] = defaultdict(list)
    for d in domains:
        by_pod[d.pod].append(d)
    fitting = [p for p, ds in sorted(by_pod.items()) if sum(len(d.hosts) for d in ds) >= n]
    if len(by_pod) < 2 or not fitting:
        return domains
    best = min(fitting, key=lambda p: (*_optimum(by_pod[p], n), p))
    return by_pod[best]


def _unit_options(domains: Sequence[_Domain]) -> dict[int, list[tuple[int, int, tuple[_Domain, ...]]]]:
    """Per unit: (hosts, leaves, domains) for taking its j fullest domains, j = 1.."""
    by_unit: dict[int, list[_Domain]] = defaultdict(list)
    for d in domains:
        by_unit[d.unit].append(d)
    options: dict[int, list[tuple[int, int, tuple[_Domain, ...]]]] = {}
    for u, ds in sorted(by_unit.items()):
        ds.sort(key=lambda d: (-len(d.hosts), len(d.leaves), d.name))
        opts = []
        cap, leaves = 0, frozenset[Guid]()
        for j, d in enumerate(ds):
            cap += len(d.hosts)
            leaves |= d.leaves
            opts.append((cap, len(leaves), tuple(ds[: j + 1])))
        options[u] = opts
    return options


def _fewest(caps: Iterable[int], n: int) -> int:
    total = count = 0
    for c in sorted(caps, reverse=True):
        if total >= n:
            break
        total += c
        count += 1
    return count


def _optimum(domains: Sequence[_Domain], n: int) -> tuple[int, int]:
    _, units, leaves = _solve(domains, n)
    return units, leaves


def _solve(domains: Sequence[_Domain], n: int) -> tuple[tuple[_Domain, ...], int, int]:
    """Fewest units, then fewest leaves, holding ``n`` hosts (exact over unit options)."""
    options = _unit_options(domains)
    k = _fewest((opts[-1][0] for opts in options.values()), n)
    # state (units, leaves) -> (hosts covered, capped at n; chosen domains)
    states: dict[tuple[int, int], tuple[int, tuple[_Domain, ...]]] = {(0, 0): (0, ())}
    for opts in options.values():
        nxt = dict(states)
        for (u, lv), (cov, chosen) in states.items():
            if u >= k or cov >= n:
                continue
            for cap, leaves, doms in opts:
                key = (u + 1, lv + leaves)
                new_cov = min(n, cov + cap)
                if key not in nxt or nxt[key][0] < new_cov:
                    nxt[key] = (new_cov, chosen + doms)
                if new_cov >= n:
                    break  # more domains of this unit only add leaves
        states = nxt
    done = [(key, chosen) for key, (cov, chosen) in states.items() if cov >= n]
    (units, leaves), chosen = min(done, key=lambda kc: kc[0])
    return chosen, units, leaves


def _pack(domains: Sequence[_Domain], n: int) -> tuple[list[str], int, int]:
    chosen, units, leaves = _solve(domains, n)
    picked: list[str] = []
    for d in sorted(chosen, key=lambda d: (-len(d.hosts), d.unit, d.name)):
        picked.extend(d.hosts[: n - len(picked)])
        if len(picked) == n:
            break
    return picked, units, leaves


def _spread(domains: Sequence[_Domain], n: int) -> list[str]:
    by_unit: dict[int, list[list[str]]] = defaultdict(list)
    for d in domains:
        by_unit[d.unit].append(list(d.hosts))
    # one round: every unit gives one host, each unit cycling over its domains
    queues = [_interleave(ds) for _, ds in sorted(by_unit.items())]
    return _interleave(queues)[:n]


def _interleave(lists: Sequence[Sequence[str]]) -> list[str]:
    out: list[str] = []
    depth = max((len(x) for x in lists), default=0)
    for i in range(depth):
        out.extend(x[i] for x in lists if i < len(x))
    return out


def _crossings_min(domains: Sequence[_Domain], n: int) -> int:
    d = _fewest((len(x.hosts) for x in domains), n)
    return 0 if d <= 1 else d


def _worst_link(
    fabric: Fabric, cls: Classification, sites: Sites, ring: Sequence[str], health: PlacementHealth
) -> tuple[str | None, tuple[str, ...]]:
    """Worst status over the hosts' cables, plus leaf uplinks if the ring leaves one domain, plus
    spine uplinks if it leaves one unit."""
    keys: set[LinkKey] = set()
    for h in ring:
        for g in sites.hosts[h].hcas:
            keys.update(lk.key for lk in fabric.links_of(g))
    tier: Callable[[str], int] = lambda g: cls.nodes[Guid(g)].tier or 0  # noqa: E731
    climb: list[set[Guid]] = []
    if len({sites.hosts[h].domain for h in ring}) > 1:
        climb.append({leaf for h in ring for leaf in sites.hosts[h].leaves})
    if len({sites.hosts[h].unit for h in ring}) > 1 and climb:
        climb.append(
            {Guid(far.guid) for g in climb[0] for _, far, _ in fabric.neighbours(g) if tier(far.guid) == 2}
        )
    for level in climb:
        for g in level:
            for _, far, lk in fabric.neighbours(g):
                if tier(far.guid) > tier(g):
                    keys.add(lk.key)
    rated = [(status_rank(health.links[k]), k) for k in keys if k in health.links]
    if not rated:
        return "ok" if health.links else None, ()
    top = max(r for r, _ in rated)
    status = next(s.value for s in Status if s.rank == top)
    names = sorted(_link_name(cls, k) for r, k in rated if r == top) if top > 0 else []
    return status, tuple(names[:5])


def _link_name(cls: Classification, key: LinkKey) -> str:
    ends = []
    for guid, port in key:
        c = cls.nodes.get(Guid(guid))
        ends.append(f"{c.name if c else guid}:{port}")
    return " <-> ".join(ends)


# -- free sets ------------------------------------------------------------------------------------------
def parse_host_list(text: str, source: str = "<free>") -> list[str]:
    """One host or host range per line (``dgx-[0001-0032]``); ``#`` comments and blank lines skipped."""
    out: dict[str, None] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            try:
                hosts = expand_hosts(line, f"{source}:{lineno}")
            except UsageError as exc:  # a list that does not parse: exit 3, as any such input
                raise InputError(exc.one_line()) from exc
            for h in hosts:
                out.setdefault(h, None)
    return list(out)
