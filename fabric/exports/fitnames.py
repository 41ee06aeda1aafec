"""The scheduler tree without the hosts whose names an output cannot carry.

Each export checks its host names against its format's rule (:mod:`topology.nameformats`) with one
call, :func:`fitting_tree`, and writes the tree it returns; the hosts left out are records
(:class:`topology.nameformats.UnfitName`) that the export hands on for stderr, one line each. A
level-0 switch left without hosts goes, and so does a switch above left without children: a
``SwitchName=`` line never names nothing.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from fabric.exports.tree import SchedulerTree, TreeSwitch
from topology.nameformats import NameFormat, UnfitName, unfit_names


def fitting_tree(tree: SchedulerTree, fmt: NameFormat) -> tuple[SchedulerTree, tuple[UnfitName, ...]]:
    """(``tree`` without the hosts ``fmt`` cannot carry, those hosts' records)."""
    bad = unfit_names(tree.host_switch, fmt)
    if not bad:
        return tree, ()
    levels: list[tuple[TreeSwitch, ...]] = []
    kept: set[str] = set()
    for depth, level in enumerate(tree.levels):
        if depth == 0:
            pruned = (replace(sw, nodes=tuple(h for h in sw.nodes if h not in bad)) for sw in level)
            now = tuple(sw for sw in pruned if sw.nodes)
        else:
            pruned = (replace(sw, children=tuple(c for c in sw.children if c in kept)) for sw in level)
            now = tuple(sw for sw in pruned if sw.children)
        if not now:
            break
        levels.append(now)
        kept = {sw.name for sw in now}
    sites = replace(
        tree.sites, hosts=MappingProxyType({h: s for h, s in tree.sites.hosts.items() if h not in bad})
    )
    fitted = replace(
        tree,
        levels=tuple(levels),
        host_switch=MappingProxyType({h: s for h, s in tree.host_switch.items() if h not in bad}),
        host_tiers=MappingProxyType({h: t for h, t in tree.host_tiers.items() if h not in bad}),
        sites=sites,
    )
    return fitted, tuple(bad.values())
