"""Link width and speed: a cable trained narrower or slower than its peers (``degraded_link``;
:func:`links_below_peers` gives the cables and the rate their peers train at, for the health
scores and the sweep plans as well).
"""

from __future__ import annotations

import operator
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import count
from operator import itemgetter

from topology.anomaly import Anomaly, Severity
from topology.classify import Classification
from topology.model import SPEED_ORDER, SPEED_RANK, Fabric, Guid, Link, link_gbps
from topology.wiring_peers import _label, _mode


@dataclass(frozen=True, slots=True)
class BelowPeers:
    """A cable trained narrower or slower than its peers, and what its peers train at.

    ``width``/``speed`` are the peers' usual values where the cable is below them, else the
    cable's own, so :attr:`gbps` is the rate the cable should give.
    """

    link: Link
    width: int
    speed: str

    @property
    def narrow(self) -> bool:
        return 0 < self.link.width < self.width

    @property
    def slow(self) -> bool:
        return self.speed != self.link.speed

    @property
    def gbps(self) -> float:
        return link_gbps(self.width, self.speed)

    def problems(self) -> str:
        """``1x where its peers run 4x`` and/or ``EDR where its peers run HDR``."""
        out = []
        if self.narrow:
            out.append(f"{self.link.width}x where its peers run {self.width}x")
        if self.slow:
            out.append(f"{self.link.speed} where its peers run {self.speed}")
        return " and ".join(out)


def links_below_peers(fabric: Fabric, cls: Classification) -> list[BelowPeers]:
    """Cables slower than their peers (fabric order), with the rate their peers train at.

    Width is compared across all cables of one tier pair. Speed is compared among cables that
    should run at one speed: a host's HCA cables to one leaf model, single-HCA hosts of one model
    on one leaf, or
    switch cables of one hardware pair (an EDR storage host on an HDR leaf is a design, not a fault).
    """
    # A node's part in the class of its cables: (tier, devid, None) for a switch, (0, 0, host key)
    # for an HCA of a multi-HCA host. Any other HCA's part names the switch it is cabled to, so
    # it is made per cable (token_of).
    devid = {g: n.devid or 0 for g, n in fabric.nodes.items()}
    token: dict[Guid, _Token] = {}
    plain_hcas: set[Guid] = set()
    hosts = cls.hosts
    service = cls.service_leaves
    for g, c in cls.nodes.items():
        t = c.tier if c.tier is not None else -1
        if t != 0:
            # A side group's tiers are its own: offset by section so its cables are compared
            # only with its own (the compute fabric, section 0, keeps its plain tiers); a service
            # leaf's cables only with service leaves' (topology.hostroles).
            token[g] = (t + 100 * c.section + 50 * (g in service), devid[g], None)
        elif c.host is not None and len(hosts.get(c.host, ())) >= 2:
            # A host's cables should run one speed, on one model of leaf: its card on an FDR
            # switch runs FDR beside its cards on an EDR switch by design.
            token[g] = (0, 0, ("host", c.host, devid.get(c.leaf, 0) if c.leaf is not None else 0))
        else:
            plain_hcas.add(g)

    def token_of(g: Guid, far: Guid) -> _Token:
        known = token.get(g)
        if known is not None:
            return known
        if g in plain_hcas:
            return (0, 0, ("leaf", far, devid[g]))
        return (-1, devid[g], None)  # a node the classification does not know: an untiered switch

    def classes(lk: Link) -> tuple[tuple[int, int], tuple[object, ...]]:
        ga, gb = lk.a.guid, lk.b.guid
        return _class(token_of(ga, gb), token_of(gb, ga))

    # One pass counts cables per (tier pair, speed key, width, speed); a clean fabric needs no
    # second pass, and a faulty one revisits only to name the cables (in fabric order).
    combos = _cable_classes(fabric.links, token, classes)
    by_tiers: dict[tuple[int, int], Counter[int]] = defaultdict(Counter)
    by_speed_key: dict[tuple[object, ...], dict[int, int]] = {}
    for (tp, key, width, speed), n in combos.items():
        if width:  # 0: the tool could not read it
            by_tiers[tp][width] += n
        rank = SPEED_RANK.get(speed)
        if rank is not None:
            ranks = by_speed_key.get(key)
            if ranks is None:
                by_speed_key[key] = {rank: n}
            else:
                ranks[rank] = ranks.get(rank, 0) + n
    width_mode = {tp: _mode(ws) for tp, ws in by_tiers.items() if ws.total() >= 2}
    # A key whose cables all run one speed has none below its mode: it needs no mode (a speed key
    # per multi-HCA host, a thousand of them at 8k HCAs, nearly all of one speed).
    speed_mode = {
        key: _mode(Counter(ranks))
        for key, ranks in by_speed_key.items()
        if len(ranks) > 1 and sum(ranks.values()) >= 3
    }
    suspect = set()
    for tp, key, width, speed in combos:
        wm, sm, rank = width_mode.get(tp), speed_mode.get(key), SPEED_RANK.get(speed)
        if (wm is not None and 0 < width < wm) or (sm is not None and rank is not None and rank < sm):
            suspect.add((tp, key))
    entries = [
        (lk, *tk)
        for lk in (fabric.links if suspect else ())
        if lk.a.guid != lk.b.guid and (tk := classes(lk)) in suspect
    ]
    out: list[BelowPeers] = []
    for lk, tp, key in entries:
        wm = width_mode.get(tp)
        sm = speed_mode.get(key)
        rank = SPEED_RANK.get(lk.speed)
        narrow = wm is not None and 0 < lk.width < wm
        slow = sm is not None and rank is not None and rank < sm
        if narrow or slow:
            width = wm if narrow and wm is not None else lk.width
            speed = SPEED_ORDER[sm] if slow and sm is not None else lk.speed
            out.append(BelowPeers(lk, width, speed))
    return out


def degraded_links(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    """A ``degraded_link`` anomaly for every cable below its peers (see :func:`links_below_peers`)."""
    return [
        Anomaly(
            "degraded_link",
            Severity.ERROR if d.narrow else Severity.WARNING,
            (d.link.a.guid, d.link.b.guid),
            (d.link.a, d.link.b),
            f"cable {_label(cls, d.link.a.guid)} port {d.link.a.port} <-> {_label(cls, d.link.b.guid)} "
            f"port {d.link.b.port} trains at {d.link.width}x{d.link.speed} ({d.link.gbps:g} Gb/s): "
            + d.problems()
            + "; reseat or replace the cable/transceiver",
        )
        for d in links_below_peers(fabric, cls)
    ]


# A Link's fields by position (a named tuple (a, b, width, speed) of PortRefs (guid, port)): an
# item is read at C level, a named field through its descriptor; these run over every cable.
_A_END, _B_END, _GUID_OF = itemgetter(0), itemgetter(1), itemgetter(0)
_WIDTH, _SPEED = itemgetter(2), itemgetter(3)
_Token = tuple[int, int, tuple[object, ...] | None]  # see links_below_peers
_Class = tuple[tuple[int, int], tuple[object, ...], int, str]


def _class(a: _Token, b: _Token) -> tuple[tuple[int, int], tuple[object, ...]]:
    """(tier pair, speed key) of a cable from its two ends' tokens: an HCA cable is compared by
    its HCA's key, a switch cable with the cables of the same tier pair and hardware pair."""
    (t_a, d_a, key_a), (t_b, d_b, key_b) = a, b
    tp = (t_a, t_b) if t_a <= t_b else (t_b, t_a)
    if t_a == 0 or t_b == 0:
        key = key_a if t_a == 0 else key_b
        assert key is not None  # every tier-0 token has its key
        return tp, key
    return tp, ("switches", tp, (d_a, d_b) if d_a <= d_b else (d_b, d_a))


def _cable_classes(
    links: Sequence[Link],
    token: dict[Guid, _Token],
    classes: Callable[[Link], tuple[tuple[int, int], tuple[object, ...]]],
) -> Counter[_Class]:
    """Cables (loopbacks aside) per (tier pair, speed key, width, speed).

    Cables whose two ends have a fixed token (``token``) are counted by their tokens with
    C-level map and Counter (49k cables at 16k HCAs), and each distinct pair becomes its class
    once. The rest (an end whose token depends on the cable) go through ``classes`` one by one."""
    ga, gb = list(map(_GUID_OF, map(_A_END, links))), list(map(_GUID_OF, map(_B_END, links)))
    # Tokens numbered (equal tokens, one number): the cables are counted by small integers, not
    # by nested tuples hashed and compared once per cable.
    ids: dict[_Token, int] = {}
    number = dict(zip(token, map(ids.setdefault, token.values(), count()), strict=True))
    token_by_id = {i: t for t, i in ids.items()}
    ta, tb = list(map(number.get, ga)), list(map(number.get, gb))
    fast = None not in ta and None not in tb and not any(map(operator.eq, ga, gb))
    out: Counter[_Class] = Counter()
    if not fast:
        for lk, a, b, ka, kb in zip(links, ga, gb, ta, tb, strict=True):
            if a != b and (ka is None or kb is None):
                out[(*classes(lk), lk.width, lk.speed)] += 1
    counted: Counter[tuple[int | None, int | None, int, str]] = Counter(
        zip(ta, tb, map(_WIDTH, links), map(_SPEED, links), strict=True)
        if fast
        else (
            (ka, kb, lk.width, lk.speed)
            for lk, a, b, ka, kb in zip(links, ga, gb, ta, tb, strict=True)
            if a != b and ka is not None and kb is not None
        )
    )
    for (ka, kb, width, speed), n in counted.items():
        assert ka is not None and kb is not None
        out[(*_class(token_by_id[ka], token_by_id[kb]), width, speed)] += n
    return out
