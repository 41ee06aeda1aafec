"""Host roles: which hosts are compute hosts and which are service hosts, from the fabric's own
evidence; and which leaves carry only service hosts (service leaves).

Login, scheduler, UFM, cache and storage servers sit on the same fabric as the GPU nodes. A job,
a probe sweep or a scheduler's topology should not get them, and a leaf built for them (two
cables to one spine) is not a compute leaf short of 18 cables. What tells them apart is their
*shape*: how many HCAs a host has and how they spread over the leaves. The compute hosts are the
dominant shape; a host of another shape is a service host. Names are a hint only, never the
decision alone. Each decision names its rule (:class:`HostRule`):

* ``too_few_hosts``: fewer than :data:`MIN_HOSTS` hosts on leaves: a lab or a tiny fabric, no
  shape can be said to dominate; every host is compute.
* ``all_alike``: every host has the same shape (single-HCA clusters included); every host is
  compute, so a clean fabric is quiet and nothing is reclassified.
* ``no_dominant_shape``: the hosts of other shapes (those the rules below would call service
  hosts) are more than a third of the hosts and more than :data:`FEW_SERVICE_HOSTS`: a mixed
  cluster (a CPU partition beside a GPU partition), not a handful of servers; every host is
  compute.
* ``dominant_shape``: the most common (HCA count, leaves) shape: compute.
* ``same_adapters``: the dominant HCA count and the same HCA indexes (the same machine model),
  cabled otherwise: compute (its wiring is the anomaly checks' to judge).
* ``fewer_hcas``: fewer HCAs than the dominant shape, each an index the compute hosts use, on the
  leaves the compute hosts use, spread as they spread theirs: at least half of them, mostly on
  their own rail's leaf in a rail-optimized fabric; or fewer (two at least), every one on its
  own rail's leaf. A compute host that lost adapters (a dead card, a cable out): compute, always;
  the host-fault checks report it.
* ``fewer_hcas_service_name``: such a host whose name says it is a service host (``login``,
  ``ufm``, ``slurm``, ``cache``, ``storage``, ``mgmt``): the shape says it is not whole, the name
  says why. Service.
* ``other_shape``: any other shape (a storage server's two adapters on one leaf where the GPU
  nodes spread theirs over the rails; a UFM server's two off-rail adapters): service.
* ``above_leaves``: every HCA of the host is cabled to a switch above the leaves (a storage
  server on a spine), where the other hosts (at least :data:`MIN_HOSTS`, three times as many)
  are on leaves: service.

A leaf is a **service leaf** when it carries at least one named host and all its named hosts are
service hosts: it is judged against its own kind only (topology.wiring).

>>> shapes = {f"dgx{i:02d}": [(r, f"leaf{r}") for r in range(4)] for i in range(8)}
>>> shapes["login01"] = [(0, "leaf9")]
>>> roles = decide_roles(shapes, {}, {})
>>> roles["login01"].role, roles["login01"].rule.value, roles["dgx01"].rule.value
('service', 'other_shape', 'dominant_shape')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

# Fewer hosts than this on leaves: too few for a shape to dominate (labs, test benches).
MIN_HOSTS = 8
# Service hosts are a handful (at most this many) or a minority (at most a third of the hosts).
FEW_SERVICE_HOSTS = 8
# Words in a host name that say it is a service host (a hint; see fewer_hcas_service_name).
SERVICE_WORDS = ("login", "ufm", "slurm", "cache", "storage", "mgmt")

COMPUTE_HOST, SERVICE_HOST = "compute", "service"

L = TypeVar("L")  # a leaf's key (a GUID in the classification)


class HostRule(StrEnum):
    """The rule a host's role rests on (see the module docstring)."""

    TOO_FEW_HOSTS = "too_few_hosts"
    ALL_ALIKE = "all_alike"
    NO_DOMINANT_SHAPE = "no_dominant_shape"
    DOMINANT_SHAPE = "dominant_shape"
    SAME_ADAPTERS = "same_adapters"
    FEWER_HCAS = "fewer_hcas"
    FEWER_HCAS_SERVICE_NAME = "fewer_hcas_service_name"
    OTHER_SHAPE = "other_shape"
    ABOVE_LEAVES = "above_leaves"


_SERVICE_RULES = frozenset({HostRule.FEWER_HCAS_SERVICE_NAME, HostRule.OTHER_SHAPE, HostRule.ABOVE_LEAVES})


@dataclass(frozen=True, slots=True)
class HostRole:
    """A host's role, the rule it rests on and the evidence in words."""

    host: str
    rule: HostRule
    reason: str

    @property
    def service(self) -> bool:
        return self.rule in _SERVICE_RULES

    @property
    def role(self) -> str:
        """``compute`` or ``service`` (Role.COMPUTE / Role.SERVICE of the host's HCAs)."""
        return SERVICE_HOST if self.service else COMPUTE_HOST

    def to_dict(self) -> dict[str, str]:
        return {"host": self.host, "role": self.role, "rule": self.rule.value, "reason": self.reason}


def service_name(host: str) -> str | None:
    """The service word in ``host``'s name, if any (``B11-P1-CUFM-02`` -> ``ufm``)."""
    low = host.lower()
    return next((w for w in SERVICE_WORDS if w in low), None)


def _shape_words(n: int, leaves: int) -> str:
    return f"{n} HCA{'s' if n != 1 else ''} on {leaves} lea{'ves' if leaves != 1 else 'f'}"


def decide_roles(
    placed: Mapping[str, Sequence[tuple[int | None, L]]],
    leaf_rail: Mapping[L, int],
    index_rail: Mapping[int, int],
    above_leaves: frozenset[str] = frozenset(),
) -> dict[str, HostRole]:
    """The role of every host of ``placed`` (host -> its HCAs on leaves, as (HCA index, leaf)).

    ``leaf_rail``/``index_rail``: the rail each rail leaf carries and the rail of each HCA index
    (empty when the fabric is not rail-optimized); ``above_leaves``: hosts cabled only to
    switches above the leaves."""
    hosts = {h: list(hcas) for h, hcas in placed.items() if hcas}
    out: dict[str, HostRole] = {}
    if above_leaves and len(hosts) >= MIN_HOSTS and 3 * len(above_leaves) <= len(hosts):
        out = {
            h: HostRole(
                h, HostRule.ABOVE_LEAVES, f"cabled to a spine, where {len(hosts)} hosts are on leaves"
            )
            for h in sorted(above_leaves)
        }
    shape = {h: (len(hcas), len({leaf for _, leaf in hcas})) for h, hcas in hosts.items()}
    counts = Counter(shape.values())
    if len(hosts) < MIN_HOSTS:
        return out | _all(hosts, HostRule.TOO_FEW_HOSTS, f"{len(hosts)} hosts: too few to tell a shape")
    if len(counts) == 1:
        (n, s), k = counts.most_common(1)[0]
        return out | _all(hosts, HostRule.ALL_ALIKE, f"all {k} hosts have {_shape_words(n, s)}")
    (dom_n, dom_s), dom_k = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    dominant = [h for h, sh in shape.items() if sh == (dom_n, dom_s)]
    index_sets = Counter(frozenset(i for i, _ in hosts[h] if i is not None) for h in dominant)
    dom_indexes = index_sets.most_common(1)[0][0]
    # Leaves of the compute kind: those of the dominant hosts, and every rail leaf (a unit whose
    # hosts all lost or left unnamed an HCA has no dominant host on its leaves).
    compute_leaves = {leaf for h in dominant for _, leaf in hosts[h]} | set(leaf_rail)
    usual = f"{dom_k} hosts have {_shape_words(dom_n, dom_s)}"
    decided: dict[str, HostRole] = {}
    for h, (n, s) in shape.items():
        hcas = hosts[h]
        own = _shape_words(n, s)
        if (n, s) == (dom_n, dom_s):
            decided[h] = HostRole(h, HostRule.DOMINANT_SHAPE, f"{own}, as {usual}")
            continue
        indexes = frozenset(i for i, _ in hcas if i is not None)
        if n == dom_n and (not indexes or not dom_indexes or indexes == dom_indexes):
            decided[h] = HostRole(
                h, HostRule.SAME_ADAPTERS, f"{own}: the HCA count and adapters of the {usual}"
            )
            continue
        unlike = _unlike_lost_adapters(
            hcas, indexes, s, (dom_n, dom_s), dom_indexes, compute_leaves, leaf_rail, index_rail
        )
        if unlike is None:
            word = service_name(h)
            if word is not None:
                decided[h] = HostRole(
                    h,
                    HostRule.FEWER_HCAS_SERVICE_NAME,
                    f"{own} where {usual}, and its name says {word!r}",
                )
            else:
                decided[h] = HostRole(
                    h, HostRule.FEWER_HCAS, f"{own} where {usual}: a compute host short of adapters"
                )
            continue
        word = service_name(h)
        hint = f"; its name says {word!r}" if word else ""
        decided[h] = HostRole(h, HostRule.OTHER_SHAPE, f"{own} where {usual} ({unlike}{hint})")
    service = sum(1 for r in decided.values() if r.service)
    if service > FEW_SERVICE_HOSTS and 3 * service > len(hosts):
        return out | _all(
            hosts,
            HostRule.NO_DOMINANT_SHAPE,
            f"{service} of the {len(hosts)} hosts are not shaped as the {usual}: "
            "too many to be service hosts",
        )
    return out | decided


def _all(hosts: Mapping[str, object], rule: HostRule, reason: str) -> dict[str, HostRole]:
    return {h: HostRole(h, rule, reason) for h in hosts}


def _unlike_lost_adapters(
    hcas: Sequence[tuple[int | None, L]],
    indexes: frozenset[int],
    spread: int,
    dominant: tuple[int, int],
    dom_indexes: frozenset[int],
    compute_leaves: set[L],
    leaf_rail: Mapping[L, int],
    index_rail: Mapping[int, int],
) -> str | None:
    """None when the host is a compute host's shape with adapters missing (``fewer_hcas``), else
    what sets it apart, in words."""
    n = len(hcas)
    dom_n, dom_s = dominant
    if n == dom_n:  # not the same adapters (same_adapters): say how it differs
        other = [f"adapters {_indexes(indexes)} where theirs are {_indexes(dom_indexes)}"]
        if spread != dom_s:
            other.append(f"on {spread} lea{'f' if spread == 1 else 'ves'}")
        return "; ".join(other)
    if n > dom_n:
        return "more HCAs"
    if spread > dom_s or (dom_s == dom_n and spread != n):
        return "its HCAs spread otherwise"
    if dom_indexes and not indexes <= dom_indexes:
        return f"adapters {_indexes(indexes)} where theirs are {_indexes(dom_indexes)}"
    if not all(leaf in compute_leaves for _, leaf in hcas):
        return "on a leaf no compute host uses"
    on_rail = sum(1 for i, leaf in hcas if i is not None and leaf_rail.get(leaf, -1) == index_rail.get(i))
    if 2 * n < dom_n and (n < 2 or on_rail < n):
        # Fewer than half its peers' adapters: a compute host only when each one still sits on
        # its own rail's leaf (most service hosts with a few adapters are not cabled by rail).
        return "fewer than half their HCAs" + (", off their rails" if leaf_rail and on_rail < n else "")
    indexed = sum(1 for i, _ in hcas if i is not None)
    if leaf_rail and index_rail and indexed and 2 * on_rail < indexed:
        return "its HCAs are off their rails' leaves"
    return None


def _indexes(indexes: frozenset[int]) -> str:
    return ",".join(map(str, sorted(indexes)))


def service_leaves(leaf_hosts: Mapping[L, set[str]], roles: Mapping[str, HostRole]) -> frozenset[L]:
    """Leaves whose named hosts (at least one) are all service hosts."""
    return frozenset(
        leaf
        for leaf, hs in leaf_hosts.items()
        if hs and all((r := roles.get(h)) is not None and r.service for h in hs)
    )
