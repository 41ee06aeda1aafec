"""The fabric map's grids: leaf x spine (cables between them) and rail x unit (each leaf's uplinks).

A cell holds the cables it stands for and their worst status; :data:`SHADES` draws a status as a
shade that reads without colour (legend on screen).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from fabric.service import NO_DATA, STATUS_ORDER, FabricView, LinkRow

SHADES = {"ok": "░", "watch": "▒", "warn": "▓", "critical": "█", NO_DATA: "·"}
LEGEND = "░ ok   ▒ watch   ▓ warn   █ critical   · no data   (blank: no cable)"


@dataclass(frozen=True, slots=True)
class Cell:
    status: str
    links: tuple[int, ...]  # LinkRow indexes, worst first


@dataclass(frozen=True, slots=True)
class MapGrid:
    title: str
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    cells: dict[tuple[int, int], Cell]
    note: str = ""


def _cell(rows: Sequence[LinkRow], indexes: list[int]) -> Cell:
    indexes.sort(
        key=lambda i: (STATUS_ORDER[rows[i].status], rows[i].score if rows[i].score is not None else 101)
    )
    return Cell(rows[indexes[0]].status, tuple(indexes))


def leaf_spine_grid(view: FabricView, rows: Sequence[LinkRow]) -> MapGrid:
    """Rows: leaves by name; columns: spines by name; a cell: the cables between them."""
    cables: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in rows:
        if r.tiers == "leaf-spine":
            cables[(r.a_name, r.b_name)].append(r.index)
    leaves = sorted({a for a, _ in cables})
    spines = sorted({b for _, b in cables})
    li, si = {n: i for i, n in enumerate(leaves)}, {n: i for i, n in enumerate(spines)}
    cells = {(li[a], si[b]): _cell(rows, ix) for (a, b), ix in cables.items()}
    note = "" if cells else "no leaf-to-spine cables in this fabric"
    return MapGrid("leaf x spine: uplink health", tuple(leaves), tuple(spines), cells, note)


def rail_unit_grid(view: FabricView, rows: Sequence[LinkRow]) -> MapGrid:
    """Rows: rails; columns: units (groups); a cell: the uplinks of that rail's leaf in that unit."""
    cls = view.discovery.classification
    leaf_at: dict[str, tuple[int, int]] = {}
    for g in cls.leaves():
        c = cls.nodes[g]
        if c.rail is not None and c.group is not None:
            leaf_at[c.name] = (c.rail, c.group)
    uplinks: dict[tuple[int, int], list[int]] = defaultdict(list)
    for r in rows:
        if r.tiers == "leaf-spine" and r.a_name in leaf_at:
            uplinks[leaf_at[r.a_name]].append(r.index)
    rails = sorted({rg[0] for rg in leaf_at.values()})
    units = sorted({rg[1] for rg in leaf_at.values()})
    ri, ui = {r: i for i, r in enumerate(rails)}, {u: i for i, u in enumerate(units)}
    cells = {(ri[r], ui[u]): _cell(rows, ix) for (r, u), ix in uplinks.items()}
    note = "" if cells else "not rail-optimized: no rail x unit view (use the leaf x spine view)"
    return MapGrid(
        "rail x unit: each leaf's uplinks",
        tuple(f"rail {r}" for r in rails),
        tuple(f"su{u}" for u in units),
        cells,
        note,
    )
