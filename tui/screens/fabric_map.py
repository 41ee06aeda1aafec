"""The fabric map: leaf x spine (or rail x unit) heat map of uplink health; the cursor's cell
is described below the grid in words."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from tui.mapdata import LEGEND, MapGrid, leaf_spine_grid, rail_unit_grid
from tui.screens.base import DataScreen
from tui.widgets.heatmap import HeatMap

VIEWS = ("leaf-spine", "rail-unit")


class FabricMapScreen(DataScreen):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("v", "toggle_view", "leaf/rail view")]

    def __init__(self) -> None:
        super().__init__()
        self.view_name = "leaf-spine"
        self.grid = MapGrid("", (), (), {})

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        yield Static("", id="map-title")
        yield HeatMap(id="heatmap")
        yield Static("", id="map-cell", classes="panel")
        yield from self.compose_footer()

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one(HeatMap).focus()

    def draw(self) -> None:
        app = self.ibfab
        if app.view is None:
            self.query_one("#map-title", Static).update(
                "loading topology…" if app.loading["topology"] else "no topology stored"
            )
            return
        build = leaf_spine_grid if self.view_name == "leaf-spine" else rail_unit_grid
        self.grid = build(app.view, app.rows)
        keys = {rc: app.rows[cell.links[0]].key for rc, cell in self.grid.cells.items()}
        title = f"{self.grid.title} ({len(self.grid.row_labels)} x {len(self.grid.col_labels)})   {LEGEND}"
        if app.health is None:
            title += "\nno health yet: every cable shows as no data"
        self.query_one("#map-title", Static).update(title + (f"\n{self.grid.note}" if self.grid.note else ""))
        self.query_one(HeatMap).show(self.grid, keys)

    def action_toggle_view(self) -> None:
        self.view_name = VIEWS[(VIEWS.index(self.view_name) + 1) % len(VIEWS)]
        self.draw()

    def on_heat_map_cell_changed(self, event: HeatMap.CellChanged) -> None:
        self.query_one("#map-cell", Static).update(self.describe(event.row, event.col))

    def describe(self, r: int, c: int) -> str:
        """The cell under the cursor in words: the two ends and each cable's status."""
        g = self.grid
        if not g.row_labels or not g.col_labels:
            return ""
        head = f"{g.row_labels[r]} x {g.col_labels[c]}"
        cell = g.cells.get((r, c))
        if cell is None:
            return f"{head}: no cable"
        rows = self.ibfab.rows
        lines = [f"{head}: {len(cell.links)} cable(s), worst {cell.status.upper()}"]
        for i in cell.links[:4]:
            lk = rows[i]
            score = "-" if lk.score is None else lk.score
            lines.append(
                f"  {lk.status.upper():8} score {score}  {lk.a_name}/{lk.a_port} - {lk.b_name}/{lk.b_port}"
                f"  {lk.width}x{lk.speed}  {'; '.join(lk.reasons)[:70]}"
            )
        if len(cell.links) > 4:
            lines.append(f"  … {len(cell.links) - 4} more")
        return "\n".join(lines)
