"""Slurm ``topology.conf``: ``topology/tree`` (``SwitchName=``) or ``topology/block`` (``BlockName=``).

Tree: each node hangs off one level-0 switch. In a rail-optimized fabric that switch is the node's
scalable unit, not a real leaf: a DGX is cabled to all eight rail leaves of its unit, Slurm's tree
allows one lowest switch per node, and what Slurm needs to know (nodes of one unit talk through one
leaf hop, nodes of two units through the spines) is exactly the unit. So::

    SwitchName=su01 Nodes=dgx-[0001-0032]
    SwitchName=spine-01 Switches=su[01-04]

Elsewhere the level-0 switch is the node's leaf, with spines and cores above it as cabled. Only
compute hosts appear: SHARP aggregation nodes, switch management HCAs and HCAs without a real host
name are left out, and service hosts unless asked for (counted from :attr:`Export.skipped`).

Block: one ``BlockName=`` per level-0 switch, and ``BlockSizes=`` from the smallest block up by
powers of two (Slurm 23.11+; the 22.05 slurmctld here only has ``topology/tree``).
"""

from __future__ import annotations

from fabric.exports import Export
from fabric.exports.fitnames import fitting_tree
from fabric.exports.tree import SchedulerTree, fold
from topology.nameformats import SLURM_NODE

PLUGINS = ("tree", "block")


def topology_conf(tree: SchedulerTree, plugin: str = "tree") -> Export:
    tree, unfit = fitting_tree(tree, SLURM_NODE)  # a '#' or '[a-b]' in Nodes= would change the file
    if plugin == "tree":
        return Export(tree_conf(tree), skipped=tree.sites.left_out, unfit=unfit)
    if plugin == "block":
        return Export(block_conf(tree), skipped=tree.sites.left_out, unfit=unfit)
    from topology.errors import UsageError

    raise UsageError(f"unknown Slurm topology plugin {plugin!r} (use tree or block)")


def _header(tree: SchedulerTree, plugin: str) -> list[str]:
    hosts = len(tree.host_switch)
    return [
        f"# topology.conf for TopologyPlugin=topology/{plugin}, written by ibfab from {tree.source or 'a fabric'}",
        f"# {hosts} hosts; {len(tree.sites.left_out)} hosts and HCAs left out (not compute hosts)",
    ]


def tree_conf(tree: SchedulerTree) -> str:
    lines = _header(tree, "tree")
    for level in tree.levels:
        for sw in level:
            if sw.level == 0:
                lines.append(f"SwitchName={sw.name} Nodes={fold(sw.nodes)}")
            else:
                lines.append(f"SwitchName={sw.name} Switches={fold(sw.children)}")
    return "\n".join(lines) + "\n"


def block_sizes(sizes: list[int]) -> list[int]:
    """The smallest block, then doubling while the total holds it: 32 x 4 blocks -> 32,64,128."""
    if not sizes:
        return []
    base, total = min(sizes), sum(sizes)
    out = [base]
    while out[-1] * 2 <= total:
        out.append(out[-1] * 2)
    return out


def block_conf(tree: SchedulerTree) -> str:
    lines = _header(tree, "block")
    level0 = tree.levels[0] if tree.levels else ()
    for sw in level0:
        lines.append(f"BlockName={sw.name} Nodes={fold(sw.nodes)}")
    sizes = block_sizes([len(sw.nodes) for sw in level0])
    if sizes:
        lines.append("BlockSizes=" + ",".join(map(str, sizes)))
    return "\n".join(lines) + "\n"
