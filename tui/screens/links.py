"""Every cable in one virtual table: sort by score/BER/flaps/name, filter as you type (debounced)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input, Static

from tui.linkquery import parse_query
from tui.screens.base import FilterScreen, plain
from tui.widgets.link_table import LinkTable


class LinksScreen(FilterScreen):
    NAME = "links"
    HELP = (
        "Filter words are ANDed: status:warn (or ok watch warn crit nodata), tier:leaf-spine (or a bare\n"
        "tier pair: hca-leaf spine-core side_leaf-side_spine), rail:3, group:1; any other word must be\n"
        "in an end's name or host (dgx-0042, spine-01). Left/right scroll a narrow table sideways."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sort('score')", "sort: score"),
        Binding("b", "sort('ber')", "sort: BER"),
        Binding("f", "sort('flaps')", "sort: flaps"),
        Binding("n", "sort('name')", "sort: name"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.sort_key = "score"
        self.shown_for: object = None  # the LinkIndex the table was last filled from

    def compose(self) -> ComposeResult:
        yield from self.compose_frame()
        yield Input(
            placeholder="filter: status:warn crit tier:leaf-spine rail:3 dgx-0042 spine-01  (/ to edit, esc to leave)",
            id="filter",
        )
        yield Static("", id="links-count")
        yield LinkTable(id="links-table")
        yield from self.compose_footer()

    def filtered(self) -> LinkTable:
        return self.query_one(LinkTable)

    def draw(self) -> None:
        self.apply_filter()

    def apply_filter(self) -> None:
        app = self.data
        query = parse_query(self.filter_text)
        order = app.index.select(query, self.sort_key)
        table = self.query_one(LinkTable)
        table.show(app.rows, order)
        self.shown_for = app.index
        what = "loading…" if app.loading["topology"] else f"{len(order):,} of {len(app.rows):,} links"
        self.query_one("#links-count", Static).update(
            plain(
                f"{what}  sorted by {self.sort_key}{'  filter: ' + self.filter_text if self.filter_text else ''}"
            )
        )

    def action_sort(self, key: str) -> None:
        self.sort_key = key
        self.apply_filter()
