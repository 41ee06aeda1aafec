"""What changed between two fabrics: nodes and cables added, removed, or retrained.

Cables are matched by their two ports, so a cable moved to another port shows as one removed and
one added; a cable whose width or speed changed shows as changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from topology.model import Fabric, Guid, Link, LinkKey, Node


@dataclass(frozen=True, slots=True)
class LinkChange:
    before: Link
    after: Link


@dataclass(frozen=True)
class FabricDiff:
    nodes_added: tuple[Node, ...]
    nodes_removed: tuple[Node, ...]
    links_added: tuple[Link, ...]
    links_removed: tuple[Link, ...]
    links_changed: tuple[LinkChange, ...]

    @property
    def empty(self) -> bool:
        return not (
            self.nodes_added
            or self.nodes_removed
            or self.links_added
            or self.links_removed
            or self.links_changed
        )


def diff_fabrics(before: Fabric, after: Fabric) -> FabricDiff:
    b_links = {lk.key: lk for lk in before.links}
    a_links = {lk.key: lk for lk in after.links}
    changed = tuple(
        LinkChange(b_links[k], a_links[k])
        for k in sorted(b_links.keys() & a_links.keys())
        if (b_links[k].width, b_links[k].speed) != (a_links[k].width, a_links[k].speed)
    )
    return FabricDiff(
        nodes_added=tuple(after.nodes[g] for g in sorted(after.nodes.keys() - before.nodes.keys())),
        nodes_removed=tuple(before.nodes[g] for g in sorted(before.nodes.keys() - after.nodes.keys())),
        links_added=tuple(a_links[k] for k in sorted(a_links.keys() - b_links.keys())),
        links_removed=tuple(b_links[k] for k in sorted(b_links.keys() - a_links.keys())),
        links_changed=changed,
    )


def describe_node(fabric: Fabric, guid: Guid) -> str:
    node = fabric.nodes.get(guid)
    return node.description if node is not None and node.description else str(guid)


LINK_EVENT_KINDS = ("down", "up")


@dataclass(frozen=True, slots=True)
class LinkEvent:
    """A cable seen going down or coming back between two discovery snapshots.

    ``link`` is :attr:`topology.model.Link.key` (lower end first; reordered if given the other way);
    ``source`` names where the snapshots came from (``lab demo``, ``ssh ufm-head``).
    """

    time: float
    link: LinkKey
    kind: str  # "down" or "up"
    source: str = ""

    def __post_init__(self) -> None:
        if self.kind not in LINK_EVENT_KINDS:
            raise ValueError(f"link event kind must be 'down' or 'up', not {self.kind!r}")
        a, b = self.link
        if b < a:
            object.__setattr__(self, "link", (b, a))

    @classmethod
    def of(cls, link: Link, time: float, kind: str, source: str = "") -> LinkEvent:
        return cls(time, link.key, kind, source)
