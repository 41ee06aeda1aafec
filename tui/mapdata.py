"""The fabric map's grids: one per pair of switch tiers the fabric has (leaf x spine, spine x core,
a side group's side_leaf x side_spine...: the cables between them) and rail x unit (each leaf's
uplinks), by health; leaf x spine by the bandwidth the latest sweep measured on each cable; and
any of them by each cable's share of the routes in the stored forwarding tables.

A cell holds the cables it stands for and their worst status; :data:`SHADES` draws a status as a
shade that reads without colour (legend on screen). Bandwidth borrows the status shades: at least
90 % of line rate reads as ok, under 50 % as critical.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from fabric.app.readmodel.route_loads import RowLoads
from fabric.app.readmodel.views import NO_DATA, FabricView, LinkRow, RowStatus, status_order
from fabric.app.sweeps.bandwidth import SweepBandwidth

SHADES: dict[RowStatus | str, str] = {"ok": "░", "watch": "▒", "warn": "▓", "critical": "█", NO_DATA: "·"}
# Tier words in the order a map reads them: compute tiers up, then side groups', hostless last.
TIER_ORDER = ("leaf", "spine", "core", "side_leaf", "side_spine", "side_core", "hostless")
RAIL_UNIT = "rail-unit"
LEGEND = "░ ok   ▒ watch   ▓ warn   █ critical   · no data   (blank: no cable)"


@dataclass(frozen=True, slots=True)
class Cell:
    status: RowStatus | str
    links: tuple[int, ...]  # LinkRow indexes, worst first


@dataclass(frozen=True, slots=True)
class MapGrid:
    title: str
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    cells: dict[tuple[int, int], Cell]
    note: str = ""
    row_axis: str = ""  # what the rows are (leaf, rail) and the columns (spine, unit)
    col_axis: str = ""


def _cell(rows: Sequence[LinkRow], indexes: list[int]) -> Cell:
    indexes.sort(
        key=lambda i: (status_order(rows[i].status), rows[i].score if rows[i].score is not None else 101)
    )
    return Cell(rows[indexes[0]].status, tuple(indexes))


def tier_pairs(rows: Sequence[LinkRow]) -> list[str]:
    """The switch-to-switch tier pairs the fabric has cables on (``leaf-spine``, ``spine-core``...),
    lower tiers first."""
    pairs = {r.tiers for r in rows if not r.tiers.startswith("hca-")}

    def rank(pair: str) -> tuple[int, ...]:
        return tuple(TIER_ORDER.index(t) if t in TIER_ORDER else len(TIER_ORDER) for t in pair.split("-", 1))

    return sorted(pairs, key=lambda p: (rank(p), p))


def map_views(view: FabricView, rows: Sequence[LinkRow]) -> list[str]:
    """Every map the fabric has: each tier pair, then rail x unit on a rail-optimized fabric."""
    views = tier_pairs(rows)
    if view.discovery.classification.rail_optimized:
        views.append(RAIL_UNIT)
    return views or ["leaf-spine"]


def tier_pair_grid(rows: Sequence[LinkRow], pair: str = "leaf-spine") -> MapGrid:
    """Rows: the lower tier's switches by name; columns: the upper tier's; a cell: the cables
    between them (``pair`` as in LinkRow.tiers, e.g. ``spine-core``)."""
    lower, _, upper = pair.partition("-")
    cables, los, his = _pair_cables(rows, pair)
    cells = {(los[a], his[b]): _cell(rows, ix) for (a, b), ix in cables.items()}
    note = "" if cells else f"no {lower}-to-{upper} cables in this fabric"
    return MapGrid(f"{lower} x {upper}: cable health", tuple(los), tuple(his), cells, note, lower, upper)


def leaf_spine_grid(view: FabricView, rows: Sequence[LinkRow]) -> MapGrid:
    """Rows: leaves by name; columns: spines by name; a cell: the cables between them."""
    return tier_pair_grid(rows, "leaf-spine")


def _pair_cables(
    rows: Sequence[LinkRow], pair: str = "leaf-spine"
) -> tuple[dict[tuple[str, str], list[int]], dict[str, int], dict[str, int]]:
    """The rows' indexes of one tier pair per (lower, upper) switch, and each switch's position
    (by name): the axes of the grids."""
    cables: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in rows:
        if r.tiers == pair:
            cables[(r.a_name, r.b_name)].append(r.index)
    los = sorted({a for a, _ in cables})
    his = sorted({b for _, b in cables})
    return cables, {n: i for i, n in enumerate(los)}, {n: i for i, n in enumerate(his)}


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
        "rail",
        "unit",
    )


# -- bandwidth mode: what the latest sweep measured per leaf-spine cable ---------------------------
BANDWIDTH_LEGEND = (
    "share of line rate, median of the pairs crossing the cable:"
    "  ░ >= 90%   ▒ >= 75%   ▓ >= 50%   █ < 50%   · no pair crossed it"
)
# A share of line rate drawn as the status whose shade (and colour) it borrows.
_SHARE_STEPS = ((0.9, "ok"), (0.75, "watch"), (0.5, "warn"))


def share_status(share: float | None) -> RowStatus | str:
    if share is None:
        return NO_DATA
    return next((status for floor, status in _SHARE_STEPS if share >= floor), "critical")


def bandwidth_grid(rows: Sequence[LinkRow], bandwidth: SweepBandwidth | None) -> MapGrid:
    """Leaf x spine; a cell's shade is its slowest cable's median share of line rate."""
    cables, leaves, spines = _pair_cables(rows)
    figures = bandwidth.cables if bandwidth is not None else {}

    def share(i: int) -> float:
        fig = figures.get(rows[i].key)
        return 2.0 if fig is None else fig.median_share  # unmeasured sorts after every measured cable

    cells = {}
    for (a, b), ix in cables.items():
        ix.sort(key=lambda i: (share(i), i))
        worst = figures.get(rows[ix[0]].key)
        cells[(leaves[a], spines[b])] = Cell(share_status(worst.median_share if worst else None), tuple(ix))
    if bandwidth is None:
        note = "no sweep stored yet (press p, then s on a lab; or ibfab sweep run)"
    elif not figures:
        note = f"sweep #{bandwidth.sweep_id} stored no routes: nothing to place on cables"
    else:
        note = ""
    title = (
        f"leaf x spine: measured bandwidth, sweep #{bandwidth.sweep_id} ({bandwidth.pattern})"
        if bandwidth is not None
        else "leaf x spine: measured bandwidth"
    )
    return MapGrid(title, tuple(leaves), tuple(spines), cells, note, "leaf", "spine")


def cable_figure(row: LinkRow, bandwidth: SweepBandwidth | None) -> str:
    """``48% of line rate (median of 6 pairs, min 40%, 96 Gb/s)`` or why there is no figure."""
    fig = bandwidth.cables.get(row.key) if bandwidth is not None else None
    if fig is None:
        return "no pair of the sweep crossed it"
    gbps = f", {fig.median_gbps:.0f} Gb/s" if fig.median_gbps is not None else ""
    return (
        f"{fig.median_share:.0%} of line rate (median of {fig.pairs} pair{'s' if fig.pairs != 1 else ''},"
        f" min {fig.min_share:.0%}{gbps})"
    )


# -- route load mode: each cable's share of the hosts' all-to-all routes ---------------------------
LOAD_LEGEND = (
    "routes on a cable's busier way over the mean of its tier and direction:"
    "  ░ up to 1.25x   ▒ up to 1.5x   ▓ up to 2x   █ over 2x   · none counted"
)
# A load drawn as the status whose shade (and colour) it borrows; 1.5x is where the routes check
# starts to call a switch's spread unbalanced (topology.route_balance.MAX_RATIO).
_LOAD_STEPS = ((1.25, "ok"), (1.5, "watch"), (2.0, "warn"))


def load_status(load: float | None) -> RowStatus | str:
    if load is None:
        return NO_DATA
    return next((status for ceiling, status in _LOAD_STEPS if load <= ceiling), "critical")


def route_load_grid(base: MapGrid, loads: RowLoads | None) -> MapGrid:
    """``base``'s cells (a tier pair's, rail x unit's) shaded by their hottest cable's load, its
    cables hottest first; every cell "none counted" when ``loads`` is None (no tables stored:
    nothing is coloured)."""
    cells = {}
    for rc, cell in base.cells.items():
        if loads is None:
            cells[rc] = Cell(NO_DATA, cell.links)
            continue
        of = {i: loads.load_of(i) for i in cell.links}
        ix = sorted(cell.links, key=lambda i: (-(of[i] or 0.0) if of[i] is not None else 1.0, i))
        cells[rc] = Cell(load_status(of[ix[0]]), tuple(ix))
    title = f"{base.row_axis} x {base.col_axis}: all-to-all route load"
    return MapGrid(title, base.row_labels, base.col_labels, cells, base.note, base.row_axis, base.col_axis)
