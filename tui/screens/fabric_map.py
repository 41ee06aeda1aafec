"""The fabric map: one heat map per tier pair the fabric has (leaf x spine, spine x core, a side
group's side_leaf x side_spine) and rail x unit, by cable health, or (``w``) by the bandwidth the
latest sweep measured on each leaf-spine cable, or (``h``) by each cable's share of the hosts'
all-to-all routes in the stored forwarding tables against its tier and direction's mean (hot
links); the cursor's cell is described below the grid in words, and enter opens its worst (or
hottest) cable."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from fabric.app.sweeps.bandwidth import SweepBandwidth
from fabric.present.routes_tui import cable_load_line, no_load_note
from fabric.present.table import ellipsis
from topology.errors import IbfabError
from tui.mapdata import (
    BANDWIDTH_LEGEND,
    LEGEND,
    LOAD_LEGEND,
    RAIL_UNIT,
    MapGrid,
    bandwidth_grid,
    cable_figure,
    map_views,
    rail_unit_grid,
    route_load_grid,
    tier_pair_grid,
)
from tui.screens.base import DataScreen, plain
from tui.widgets.heatmap import HeatMap


class FabricMapScreen(DataScreen):
    NAME = "fabric map"
    HELP = (
        "One map per tier pair the fabric has (v: next), then rail x unit on a rail-optimized fabric.\n"
        "Side groups (storage, management) have their own side_leaf x side_spine map. Cells:\n"
        + LEGEND
        + "\nh (hot links): each cable's share of the stored tables' all-to-all routes, its "
        + LOAD_LEGEND
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("v", "toggle_view", "next map"),
        Binding("w", "toggle_bandwidth", "bandwidth"),
        Binding("h", "toggle_routes", "hot links"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.view_name = ""  # the first of map_views once the topology is there
        self.views: list[str] = []
        self.bandwidth_mode = False
        self.routes_mode = False
        self.bandwidth: SweepBandwidth | None = None
        self.bandwidth_note = "reading the latest sweep…"  # until load_bandwidth has answered
        self.grid = MapGrid("", (), (), {})

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        yield Static("", id="map-title")
        yield HeatMap(id="heatmap")
        yield Static("", id="map-cell", classes="panel")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.set_focus(self.query_one(HeatMap))

    def draw(self) -> None:
        app = self.data
        if app.view is None:
            self.query_one("#map-title", Static).update(
                "loading topology…" if app.loading["topology"] else "no topology stored"
            )
            return
        self.views = map_views(app.view, app.rows)
        if self.view_name not in self.views:
            self.view_name = self.views[0]
        side = "  (a side group)" if self.view_name.startswith("side_") else ""
        which = f"map {self.views.index(self.view_name) + 1}/{len(self.views)}{side}  v: next"
        routes = app.service.routes_known(app.view) if self.routes_mode else None
        if self.bandwidth_mode:
            self.grid = bandwidth_grid(app.rows, self.bandwidth)
            legend = BANDWIDTH_LEGEND
            which = "bandwidth (w: back to health)"
        else:
            self.grid = (
                rail_unit_grid(app.view, app.rows)
                if self.view_name == RAIL_UNIT
                else tier_pair_grid(app.rows, self.view_name)
            )
            legend = LEGEND
        if self.routes_mode:
            self.grid = route_load_grid(self.grid, routes.loads if routes and routes.judged else None)
            legend = LOAD_LEGEND
            which += "  (h: back to health)"
        keys = {rc: app.rows[cell.links[0]].key for rc, cell in self.grid.cells.items()}
        title = f"{self.grid.title} ({len(self.grid.row_labels)} x {len(self.grid.col_labels)})   {which}\n{legend}"
        if self.bandwidth_mode and self.bandwidth_note:
            title += f"\n{self.bandwidth_note}"
        elif self.routes_mode and no_load_note(routes):
            title += f"\n{no_load_note(routes)}"
        elif not self.bandwidth_mode and not self.routes_mode and app.health is None:
            title += "\nno health yet: every cable shows as no data"
        self.query_one("#map-title", Static).update(
            plain(title + (f"\n{self.grid.note}" if self.grid.note else ""))
        )
        self.query_one(HeatMap).show(self.grid, keys)

    def action_toggle_view(self) -> None:
        if self.views:
            self.view_name = self.views[(self.views.index(self.view_name) + 1) % len(self.views)]
        self.draw()

    def action_toggle_bandwidth(self) -> None:
        self.bandwidth_mode = not self.bandwidth_mode
        if self.bandwidth_mode:
            self.routes_mode = False
            self.load_bandwidth()
        self.draw()

    def action_toggle_routes(self) -> None:
        """Hot links: the judged tables are the app's (judged once, off the UI thread)."""
        self.routes_mode = not self.routes_mode
        if self.routes_mode:
            self.bandwidth_mode = False
        self.draw()

    @work(thread=True, exclusive=True, group="map-bandwidth", exit_on_error=False)
    def load_bandwidth(self) -> None:
        """The newest sweep's per-cable figures (reads its stored routes; a thread, not the UI)."""
        try:
            found, note = self.data.service.sweep_bandwidth(), ""
        except IbfabError as exc:
            found, note = None, exc.one_line()
        self.app.call_from_thread(self._set_bandwidth, found, note)

    def _set_bandwidth(self, found: SweepBandwidth | None, note: str) -> None:
        self.bandwidth, self.bandwidth_note = found, note
        if self.bandwidth_mode and self.is_mounted:
            self.draw()

    def on_heat_map_cell_changed(self, event: HeatMap.CellChanged) -> None:
        self.query_one("#map-cell", Static).update(plain(self.describe(event.row, event.col)))

    def describe(self, r: int, c: int) -> str:
        """The cell under the cursor in words: the two ends and each cable's status."""
        g = self.grid
        if not g.row_labels or not g.col_labels:
            return ""
        head = f"{g.row_labels[r]} x {g.col_labels[c]}"
        cell = g.cells.get((r, c))
        if cell is None:
            return f"{head}: no cable"
        rows = self.data.rows
        if self.routes_mode:
            view = self.data.view
            routes = self.data.service.routes_known(view) if view is not None else None
            loads = routes.loads if routes is not None and routes.judged is not None else None
            lines = [f"{head}: {len(cell.links)} cable(s)"]
            if loads is None:
                lines.append(f"  {no_load_note(routes)}")
            else:
                lines += [f"  {cable_load_line(rows[i], loads.cable(i))}" for i in cell.links[:4]]
            if len(cell.links) > 4:
                lines.append(f"  … {len(cell.links) - 4} more")
            return "\n".join(lines)
        if self.bandwidth_mode:
            lines = [f"{head}: {len(cell.links)} cable(s)"]
            lines += [
                f"  {rows[i].a_name}/{rows[i].a_port} - {rows[i].b_name}/{rows[i].b_port}"
                f"  {rows[i].width}x{rows[i].speed}: {cable_figure(rows[i], self.bandwidth)}"
                for i in cell.links[:4]
            ]
            if len(cell.links) > 4:
                lines.append(f"  … {len(cell.links) - 4} more")
            return "\n".join(lines)
        lines = [f"{head}: {len(cell.links)} cable(s), worst {cell.status.upper()}"]
        for i in cell.links[:4]:
            lk = rows[i]
            score = "-" if lk.score is None else lk.score
            lines.append(
                f"  {lk.status.upper():8} score {score}  {lk.a_name}/{lk.a_port} - {lk.b_name}/{lk.b_port}"
                f"  {lk.width}x{lk.speed}  {ellipsis('; '.join(lk.reasons), self.room(70))}"
            )
        if len(cell.links) > 4:
            lines.append(f"  … {len(cell.links) - 4} more")
        return "\n".join(lines)
