"""Switch tiers counted from the cabling: leaves are switches with host HCAs, the rest counted up
from them; and each switch's uplinks (cables to a higher tier)."""

from __future__ import annotations

import operator
from collections import Counter, deque
from collections.abc import Callable, Mapping
from itertools import filterfalse

from topology.boards import boards_over_leaves
from topology.classification import Role
from topology.model import Fabric, Guid
from topology.sections import SIDE


def count_uplinks(
    g: Guid,
    fars: list[Guid],
    tier_of: Callable[[Guid], int | None],
    section_of: Mapping[Guid, int],
    kinds: list[str],
) -> int:
    """Cables from switch ``g`` to switches of a higher tier of its own section (a loopback
    cable is on its own tier); a side group's cables to another section are its way out, so
    uplinks too. A compute switch's cables to a side group are not."""
    t = tier_of(g)
    assert t is not None
    if len(kinds) == 1:
        far_tiers = Counter(map(tier_of, fars))  # C-level: this runs over every switch port
        return sum(n for ft, n in far_tiers.items() if ft is not None and ft > t)
    mine = section_of[g]
    up = 0
    for f in fars:
        s = section_of.get(f)
        if s is None:
            continue  # an HCA
        if s != mine:
            up += kinds[mine] == SIDE
        elif (ft := tier_of(f)) is not None and ft > t:
            up += 1
    return up


def far_guids(fabric: Fabric, guid: Guid) -> list[Guid]:
    """The far end's GUID of every cable of ``guid``, in port order (a loopback cable twice)."""
    return list(map(_GUID, map(_FAR, fabric.neighbours(guid))))


# Fields by position (a PortRef is a named tuple (guid, port)): an item is read at C level, a
# named field through its descriptor. This runs over every switch port, several times.
_FAR = operator.itemgetter(1)
_GUID = operator.itemgetter(0)


def find_tiers(
    switch_far: Mapping[Guid, list[Guid]],
    roles: Mapping[Guid, tuple[Role, str | None, str | None, int | None]],
    hcas_on: dict[Guid, int],
    boards: Mapping[Guid, Guid],
) -> dict[Guid, int]:
    """Leaves are switches with host HCAs; the rest are counted up from them. Fills ``hcas_on``
    (host HCAs per switch that has any).

    A spine that also carries a few storage hosts (real fabrics do this) is not a leaf: a
    candidate linked to two or more other candidates that carry a larger share of hosts, and whose
    own ports are mostly switch links, is demoted before counting. So is a board of a director
    chassis that leaves hang off (``boards``: board -> chassis; topology.boards.boards_over_leaves).
    """
    # The per-port loops are C-level (map/filter over set lookups): they run over every switch
    # port, 82k of them at 16k HCAs.
    compute, unnamed = Role.COMPUTE, Role.UNNAMED  # read once: enum attribute lookups are slow
    host_set = {g for g, r in roles.items() if r[0] is compute or r[0] is unnamed}
    is_switch, is_host = switch_far.__contains__, host_set.__contains__
    share: dict[Guid, float] = {}
    for g, fars in switch_far.items():
        h = sum(map(is_host, fars))
        if h > 0:
            hcas_on[g] = h
            s = sum(map(is_switch, fars)) - fars.count(g)
            share[g] = h / max(1, h + s)
    candidates = share.keys()
    demoted = set()
    for g, own in share.items():
        if own < 0.25:
            richer = {fg for fg in candidates & set(switch_far[g]) if fg != g and share[fg] > own}
            if len(richer) >= 2:
                demoted.add(g)
    if boards:
        demoted |= boards_over_leaves(switch_far, candidates - demoted, boards)
    tiers: dict[Guid, int] = {}
    queue: deque[Guid] = deque()
    for g in sorted(candidates - demoted):
        tiers[g] = 1
        queue.append(g)
    switches = switch_far.keys()
    while queue:
        g = queue.popleft()
        # Breadth first: a switch's tier is its distance from the nearest leaf, whatever order
        # one level's switches are found in.
        t = tiers[g] + 1
        for fg in filterfalse(tiers.__contains__, switches & set(switch_far[g])):
            tiers[fg] = t
            queue.append(fg)
    hostless_leaves(switch_far, tiers)
    return tiers


def hostless_leaves(switch_far: Mapping[Guid, list[Guid]], tiers: dict[Guid, int]) -> None:
    """A leaf whose hosts are all gone looks like a core (only spines around it). It is a leaf
    when it reaches exactly the spines another leaf reaches; a core spans spines of many pods."""

    switches = switch_far.keys()

    def switch_neighbours(g: Guid) -> frozenset[Guid]:
        return frozenset(switches & set(switch_far[g])) - {g}

    leaf_uppers = {switch_neighbours(g) for g, t in tiers.items() if t == 1}
    for g, t in list(tiers.items()):
        if t >= 3:
            near = switch_neighbours(g)
            if near and all(tiers.get(x) == 2 for x in near) and near in leaf_uppers:
                tiers[g] = 1
