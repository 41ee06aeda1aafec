"""The ``pairwise`` pattern made by whole arrays, with its lower bound and its coverage without
routes counted by column (few Python steps per probe: a 4,341-HCA fabric has over a million
probes). Pure. The plain reading, probe by probe, is the oracle (tests/oracles/plan.py)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from probes.pairs import Endpoint, Probe
from probes.plan_coverage import Coverage, RoundCoverage, leaf_spine_cables, short_leaves
from topology.classify import Classification
from topology.model import Fabric, Guid, Link
from topology.routes import UpDown


def ranks(eps: Sequence[Endpoint]) -> dict[Guid, int]:
    """Each endpoint's place in endpoint order, by GUID (endpoints() makes one per GUID)."""
    rank = {ep.guid: i for i, ep in enumerate(sorted(eps))}
    if len(rank) != len(eps):  # pragma: no cover - a programming error, not an input
        raise AssertionError("two probe endpoints share a GUID")
    return rank


@dataclass(frozen=True)
class Columns:
    """The pairwise probes as arrays, in plan order: round, client and server (ranks in ``ordered``)."""

    round: Any  # NDArray[np.int64]
    client: Any
    server: Any
    ordered: list[Endpoint]


def pairwise_probes(eps: Sequence[Endpoint], per_host: bool) -> tuple[list[Probe], Columns]:
    """Every host pair once, by the circle method over the sorted hosts (n-1 rounds of n/2 pairs,
    a bye for an odd count; the pair's ends swap on odd rounds): each HCA of the second host is
    probed from the first host's HCA on its rail (its last, should it have two there), in round
    ``r`` (per host: ``r`` x rails + the rail's index). Made by whole arrays, in the plan's final
    order (round, then client and server in endpoint order): the rounds are index arithmetic."""
    import numpy as np

    ordered = sorted(eps)
    rank = ranks(eps)
    names = sorted({ep.host for ep in eps})
    host_index = {host: i for i, host in enumerate(names)}
    rails = sorted({ep.rail for ep in eps})
    rail_index = {rail: i for i, rail in enumerate(rails)}
    size, n_rails = len(eps), len(rails)
    # the client side: endpoint rank by (host, rail), the last of a rail; row n: the bye
    at = np.full((len(names) + 1, n_rails), -1, dtype=np.int64)
    # the server side: each host's endpoints in order (rank, rail index), padded with -1
    slots: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for ep in eps:
        h, ri = host_index[ep.host], rail_index[ep.rail]
        at[h, ri] = rank[ep.guid]
        slots[h].append((rank[ep.guid], ri))
    width = max(len(v) for v in slots.values())
    server_rank = np.full((len(names) + 1, width), -1, dtype=np.int64)
    server_rail = np.zeros((len(names) + 1, width), dtype=np.int64)
    for h, mine in slots.items():
        server_rank[h, : len(mine)] = [r for r, _ in mine]
        server_rail[h, : len(mine)] = [ri for _, ri in mine]
    # circle over the sorted hosts: position 0 stays, the others turn one step a round
    people = len(names) + len(names) % 2  # the bye is index len(names) when the count is odd
    turns = people - 1
    half = np.arange(people // 2)
    r = np.arange(turns)[:, None]

    def seat(j: Any) -> Any:
        return np.where(j == 0, 0, (j - 1 - r) % turns + 1)

    first, second = seat(half[None, :]), seat(people - 1 - half[None, :])
    odd = r % 2 == 1
    client_host, server_host = np.where(odd, second, first), np.where(odd, first, second)
    rail = server_rail[server_host]  # (rounds, pairs, slots)
    servers = server_rank[server_host]
    clients = at[client_host[:, :, None], rail]
    both = (clients >= 0) & (servers >= 0)
    rounds = np.broadcast_to(r[:, :, None], both.shape)[both]
    rail, client, server = rail[both], clients[both], servers[both]
    hint = rounds * n_rails + rail if per_host else rounds
    key = (hint * size + client) * size + server  # unique: (client, server) is one probe a round
    order = np.argsort(key, kind="stable")
    hint, client, server = hint[order], client[order], server[order]
    pick = ordered.__getitem__
    probes = list(map(Probe, map(pick, client.tolist()), map(pick, server.tolist()), hint.tolist()))
    return probes, Columns(hint, client, server, ordered)


def bound_columns(columns: Columns, per_host: bool) -> tuple[int, str]:
    """The lower bound of the pairwise columns: the most probes one HCA (host) is in, degrees by
    ``bincount``; of the ends with the most, the one met first (client, then server, probe by
    probe), as :func:`bound_counted` finds it."""
    import numpy as np

    eps = columns.ordered
    if not len(columns.round):
        return 0, "no probes"
    ends = np.empty(2 * len(columns.round), dtype=np.int64)
    ends[0::2], ends[1::2] = columns.client, columns.server
    names: list[str] = []
    if per_host:
        names = sorted({ep.host for ep in eps})
        host_of = {host: i for i, host in enumerate(names)}
        ends = np.array([host_of[ep.host] for ep in eps], dtype=np.int64)[ends]
    keys, first = np.unique(ends, return_index=True)
    degree = np.bincount(ends)[keys]
    most = int(degree.max())
    winner = int(keys[np.flatnonzero(degree == most)[np.argmin(first[degree == most])]])
    what = "host" if per_host else "HCA"
    name = names[winner] if per_host else eps[winner].label
    return most, f"max probes per {what} ({most}, {name}): one per round"


def coverage_columns(
    fabric: Fabric, cls: Classification, updown: UpDown, columns: Columns, eps: Sequence[Endpoint]
) -> Coverage:
    """The coverage (without routes) of the pairwise columns, as :func:`coverage_by_round`
    counts it: rounds, rails, leaf ends and leaf pairs by ``unique``/``bincount``; a round's
    cables as the OR of its leaf pairs' bit masks."""
    import numpy as np

    cables = leaf_spine_cables(cls, fabric)
    ordered = columns.ordered
    leaves = sorted({ep.leaf for ep in ordered if ep.leaf is not None})
    assert all(ep.leaf is not None for ep in ordered)
    leaf_index = {leaf: i for i, leaf in enumerate(leaves)}
    leaf_of = np.array([leaf_index[ep.leaf] for ep in ordered], dtype=np.int64)  # type: ignore[index]
    rails = sorted({ep.rail for ep in ordered})
    rail_of = np.array([rails.index(ep.rail) for ep in ordered], dtype=np.int64)
    rnd, client, server = columns.round, columns.client, columns.server
    rounds, counts = np.unique(rnd, return_counts=True)
    n_leaves, n_rails = len(leaves), len(rails)
    rail_keys = np.unique(rnd * n_rails + rail_of[client])
    rails_by_round: dict[int, list[int]] = defaultdict(list)
    for key in rail_keys.tolist():
        rails_by_round[key // n_rails].append(rails[key % n_rails])
    a_leaf, b_leaf = leaf_of[client], leaf_of[server]
    ends = np.bincount(a_leaf, minlength=n_leaves) + np.bincount(b_leaf, minlength=n_leaves)
    bit: dict[Link, int] = {}
    masks: dict[tuple[int, int], int] = {}
    crossed: dict[int, int] = defaultdict(int)
    for key in np.unique((rnd * n_leaves + a_leaf) * n_leaves + b_leaf).tolist():
        pair = (key // n_leaves % n_leaves, key % n_leaves)
        mask = masks.get(pair)
        if mask is None:
            a, b = leaves[pair[0]], leaves[pair[1]]
            mask = 0
            for lk in updown.uplinks(a, b) + updown.uplinks(b, a):
                mask |= 1 << bit.setdefault(lk, len(bit))
            masks[pair] = mask
        crossed[key // (n_leaves * n_leaves)] |= mask
    of_cables = 0
    for lk in cables:
        if lk in bit:
            of_cables |= 1 << bit[lk]
    everything = 0
    for mask in crossed.values():
        everything |= mask
    covered = {lk for lk, i in bit.items() if lk in cables and everything >> i & 1}
    end_count = dict(zip(leaves, ends.tolist(), strict=True))
    short = short_leaves(cls, cables, end_count)
    rails_total = tuple(sorted({ep.rail for ep in eps}))
    rails_covered = tuple(sorted({rail for got in rails_by_round.values() for rail in got}))
    return Coverage(
        from_routes=False,
        cables_total=len(cables),
        cables_covered=len(covered),
        uncovered=tuple(sorted(cables - covered, key=lambda lk: lk.key)),
        rails_total=rails_total,
        rails_covered=rails_covered,
        per_round=tuple(
            RoundCoverage(r, n, (crossed[r] & of_cables).bit_count(), tuple(sorted(rails_by_round[r])))
            for r, n in zip(rounds.tolist(), counts.tolist(), strict=True)
        ),
        short_leaves=short,
        unroutable=(),
    )
