"""What the subnet manager assigns, as a capture shows it: ports it has not configured, and
identities two devices claim.

* ``unconfigured_ports``: cabled HCA ports and cabled switches whose LID is 0 or 65535 (the SM
  gave them none), and ports the capture states are up but not Active (``Init``, ``Armed``:
  ibdiagnet's PORTS says so; ibnetdiscover does not). One anomaly for the fabric, however many:
  the count, a few names folded by host, and the commands that tell why (the SM is down, or
  cannot reach them).
* ``duplicate_guid``: a record whose GUID an earlier record of the capture has (two devices with
  one GUID, or a capture that joins two fabrics), naming both and where each is cabled.
* ``duplicate_lid``: ports of different devices with one LID, naming them all.

A source that states no LID (a record without one, a fabric stored before LIDs were kept) gives
nothing to judge: nothing is reported.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from topology.anomaly import Anomaly, Severity
from topology.classify import Classification
from topology.model import UNASSIGNED_LIDS, Fabric, Guid, Lid, NodeKind, PortRef

_SHOWN = 5  # names in a message; the rest are counted
_NUMBERED = re.compile(r"^(.*?)(\d+)(\D*)$")
_SM_CHECKS = (
    "check `sminfo` (is a master SM running, and which), the SM's log (OpenSM: /var/log/opensm.log; "
    "UFM: its event log) for sweep errors, `ibstat` on a host (State, Base lid) and `iblinkinfo` for the ports"
)


def addressing_anomalies(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    return [*_unconfigured(fabric, cls), *_duplicate_guids(fabric, cls), *_duplicate_lids(fabric, cls)]


# -- ports the SM has not configured --------------------------------------------------------------
def unconfigured_ports(fabric: Fabric) -> dict[PortRef, str]:
    """Cabled ports the SM has not configured, with why: ``LID 65535``, ``LID 0``, ``Init``..."""
    out: dict[PortRef, str] = {}
    # (a C-level look first: a configured fabric's 17k LIDs are not walked in Python)
    unassigned = () if UNASSIGNED_LIDS.isdisjoint(fabric.lids.values()) else fabric.lids.items()
    for ref, lid in unassigned:
        if lid not in UNASSIGNED_LIDS:
            continue
        node = fabric.nodes.get(ref.guid)
        if node is None:
            continue
        cabled = {p for p, _, _ in fabric.neighbours(ref.guid)}
        # A switch's LID is its port 0's (any cable will do); an HCA's, each cabled port's.
        if (cabled and ref.port == 0) if node.kind is NodeKind.SWITCH else ref.port in cabled:
            out[ref] = f"LID {lid}"
    for ref, state in fabric.inactive.items():
        out.setdefault(ref, state)
    return out


def _unconfigured(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    found = unconfigured_ports(fabric)
    if not found:
        return []
    n = len(found)
    refs = sorted(found)
    return [
        Anomaly(
            "unconfigured_ports",
            Severity.ERROR,
            tuple(sorted({r.guid for r in refs})),
            tuple(refs),
            f"{n} port{'s' * (n > 1)} the subnet manager has not configured ({_whys(found.values())}): "
            + _fold_ports(cls, refs)
            + f"; {'they carry' if n > 1 else 'it carries'} no traffic until it does; "
            + _SM_CHECKS,
        )
    ]


def _whys(whys: Iterable[str]) -> str:
    """``3 have no LID: 2 LID 65535, 1 LID 0; 2 are up but not Active: 2 Init``."""
    counts = Counter(whys)
    lids = {w: k for w, k in counts.items() if w.startswith("LID")}
    states = {w: k for w, k in counts.items() if w not in lids}
    parts = []
    for group, one, many in (
        (lids, "has no LID", "have no LID"),
        (states, "is up but not Active", "are up but not Active"),
    ):
        if group:
            n = sum(group.values())
            detail = ", ".join(f"{k} {w}" for w, k in sorted(group.items(), key=lambda kv: (-kv[1], kv[0])))
            parts.append(f"{n} {one if n == 1 else many}: {detail}")
    return "; ".join(parts)


def _fold_ports(cls: Classification, refs: list[PortRef]) -> str:
    """A few names: a host of several HCAs, every one listed, by its host name
    (``cn[0001-0040] (every HCA)``); other HCAs by host and adapter, hosts folded per adapter
    (``cn[0001-0002] mlx5_2``); switches by name."""
    listed = {r.guid for r in refs}
    whole: list[str] = []
    by_adapter: dict[str, list[str]] = defaultdict(list)
    others: list[str] = []
    for g in sorted(listed, key=lambda g: _label(cls, g)):
        c = cls.nodes.get(g)
        host_hcas = set(cls.hosts.get(c.host, ())) if c is not None and c.host is not None else set()
        if c is not None and c.host is not None and len(host_hcas) > 1 and host_hcas <= listed:
            if c.host not in whole:
                whole.append(c.host)
        elif c is not None and c.host is not None and c.adapter is not None:
            by_adapter[c.adapter].append(c.host)
        else:
            others.append(_label(cls, g))
    folded = [f"{f} (every HCA)" for f in fold(whole)]
    for adapter, hosts in sorted(by_adapter.items()):
        folded += [f"{f} {adapter}" for f in fold(hosts)]
    folded += fold(others)
    shown = folded[:_SHOWN]
    more = len(folded) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def fold(names: Iterable[str]) -> list[str]:
    """Names that differ only in one number folded into ranges, in order of first appearance:
    ``['cn0001', 'cn0002', 'cn0004', 'leaf-01']`` -> ``['cn[0001-0002,0004]', 'leaf-01']``.
    (topology knows no ClusterShell; this is its plain fold of the last number of a name.)"""
    groups: dict[tuple[str, str, int], list[int]] = {}
    order: list[tuple[str, str, int] | str] = []
    for name in names:
        m = _NUMBERED.match(name)
        if m is None:
            order.append(name)
            continue
        key = (m.group(1), m.group(3), len(m.group(2)))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(m.group(2)))
    out = []
    for item in order:
        if isinstance(item, str):
            out.append(item)
            continue
        head, tail, width = item
        numbers = sorted(set(groups[item]))
        if len(numbers) == 1:
            out.append(f"{head}{numbers[0]:0{width}d}{tail}")
            continue
        runs: list[list[int]] = []
        for x in numbers:
            if runs and x == runs[-1][-1] + 1:
                runs[-1].append(x)
            else:
                runs.append([x])
        spans = ",".join(
            f"{r[0]:0{width}d}" if len(r) == 1 else f"{r[0]:0{width}d}-{r[-1]:0{width}d}" for r in runs
        )
        out.append(f"{head}[{spans}]{tail}")
    return out


# -- identities two devices claim -----------------------------------------------------------------
def _duplicate_guids(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    out = []
    for d in fabric.duplicates:
        first = fabric.nodes.get(d.guid)
        if first is None:
            continue
        theirs = _cables_note(cls, [(p, far) for p, far, _ in fabric.neighbours(d.guid)])
        second = _cables_note(cls, list(d.cables))
        at = f"; its record at line {d.line}" if d.line else ""
        out.append(
            Anomaly(
                "duplicate_guid",
                Severity.ERROR,
                tuple(sorted({d.guid} | {far.guid for _, far in d.cables})),
                tuple(sorted(far for _, far in d.cables)),
                f"GUID {d.guid} is claimed by two devices: {_device(first.description, first.lid, theirs)} "
                f"and {_device(d.description, d.lid, second)}{at}: the SM and every tool take them for one, "
                "so one of them is lost to routing; find the card whose GUID was copied (`ibstat` on "
                "each host shows its node GUID) and give it its own, or, if the capture joins two "
                "fabrics' outputs, read each on its own",
            )
        )
    return out


def _device(description: str, lid: int | None, cables: str) -> str:
    parts = [f"LID {lid}" if lid is not None else "no LID stated"]
    if cables:
        parts.append(cables)
    return f"{description!r} ({', '.join(parts)})"


def _cables_note(cls: Classification, cables: list[tuple[int, PortRef]]) -> str:
    shown = [f"port {p} to {_label(cls, far.guid)} port {far.port}" for p, far in sorted(cables)[:2]]
    more = len(cables) - len(shown)
    return ", ".join(shown) + (f" and {more} more cables" if more > 0 else "")


def _duplicate_lids(fabric: Fabric, cls: Classification) -> list[Anomaly]:
    counts = Counter(fabric.lids.values())  # C-level: a fabric without duplicates stops here
    shared = {lid for lid, n in counts.items() if n > 1 and lid not in UNASSIGNED_LIDS}
    by_lid: dict[Lid, list[PortRef]] = defaultdict(list)
    for ref, lid in fabric.lids.items() if shared else ():
        if lid in shared:
            by_lid[lid].append(ref)
    out = []
    for lid, refs in sorted(by_lid.items()):
        if len(refs) < 2:
            continue
        refs.sort()
        named = ", ".join(_port_name(fabric, cls, r) for r in refs)
        out.append(
            Anomaly(
                "duplicate_lid",
                Severity.ERROR,
                tuple(sorted({r.guid for r in refs})),
                tuple(refs),
                f"LID {lid} is held by {len(refs)} ports: {named}: packets for it reach only one of them "
                "(two subnet managers on one fabric, or a port that kept an old LID); " + _SM_CHECKS,
            )
        )
    return out


def _port_name(fabric: Fabric, cls: Classification, ref: PortRef) -> str:
    node = fabric.nodes.get(ref.guid)
    if node is not None and node.kind is NodeKind.SWITCH:
        return f"switch {_label(cls, ref.guid)}"
    return f"{_label(cls, ref.guid)} port {ref.port}"


def _label(cls: Classification, guid: Guid) -> str:
    c = cls.nodes.get(guid)
    return c.name if c is not None else str(guid)
