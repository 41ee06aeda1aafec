"""The fabric map's grid: one two-character cell per (row, column), a shade per status; only the
lines on screen are drawn. Two header lines name the axes: the row and column tiers with each
column's number, then the cursor column's name. Moving the cursor posts :class:`HeatMap.CellChanged`."""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.mapdata import SHADES, MapGrid
from tui.messages import OpenDetail
from tui.widgets.link_table import STATUS_STYLES

LABEL_W = 20
CELL_W = 2
HEADER = 2  # lines above the grid: axes and column numbers, the cursor column's name
_CURSOR = Style(reverse=True)
_PLAIN = Style()  # never None: the NO_COLOR (monochrome) filter reads every style
_AXIS = Style(bold=True)


class HeatMap(ScrollView, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1, 0)", show=False),
        Binding("down", "move(1, 0)", show=False),
        Binding("left", "move(0, -1)", show=False),
        Binding("right", "move(0, 1)", show=False),
        Binding("enter", "choose", "detail"),
    ]
    DEFAULT_CSS = "HeatMap { height: 1fr; }"
    cursor: reactive[tuple[int, int]] = reactive((0, 0), always_update=True)

    class CellChanged(Message):
        def __init__(self, row: int, col: int) -> None:
            super().__init__()
            self.row = row
            self.col = col

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.grid = MapGrid("", (), (), {})
        self.worst_link: dict[tuple[int, int], tuple[tuple[str, int], tuple[str, int]]] = {}

    def show(
        self, grid: MapGrid, keys: dict[tuple[int, int], tuple[tuple[str, int], tuple[str, int]]]
    ) -> None:
        self.grid, self.worst_link = grid, keys
        self.virtual_size = Size(LABEL_W + CELL_W * len(grid.col_labels), len(grid.row_labels) + HEADER)
        self.cursor = (0, 0)

    def watch_cursor(self, value: tuple[int, int]) -> None:
        r, c = value
        rows, cols = len(self.grid.row_labels), len(self.grid.col_labels)
        if not rows or not cols:
            return
        r, c = max(0, min(r, rows - 1)), max(0, min(c, cols - 1))
        if (r, c) != value:
            self.cursor = (r, c)
            return
        self.scroll_to_region_of(r, c)
        self.post_message(self.CellChanged(r, c))
        self.refresh()

    def scroll_to_region_of(self, r: int, c: int) -> None:
        top, left = round(self.scroll_offset.y), round(self.scroll_offset.x)
        height, width = max(1, self.size.height - HEADER), max(CELL_W, self.size.width - LABEL_W)
        y = r if r < top else (r - height + 1 if r >= top + height else top)
        x_cell = c * CELL_W
        x = x_cell if x_cell < left else (x_cell - width + CELL_W if x_cell >= left + width else left)
        if (x, y) != (left, top):
            self.scroll_to(x=x, y=y, animate=False, immediate=True)

    def action_move(self, dr: int, dc: int) -> None:
        r, c = self.cursor
        self.cursor = (r + dr, c + dc)

    def action_choose(self) -> None:
        key = self.worst_link.get(self.cursor)
        if key is not None:
            self.post_message(OpenDetail(link=key))

    def on_click(self, event: events.Click) -> None:
        if event.x < LABEL_W:
            return
        r = round(self.scroll_offset.y) + event.y - HEADER
        c = (round(self.scroll_offset.x) + event.x - LABEL_W) // CELL_W
        if 0 <= r < len(self.grid.row_labels) and 0 <= c < len(self.grid.col_labels):
            again = (r, c) == self.cursor
            self.cursor = (r, c)
            if again:
                self.action_choose()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y < HEADER:
            return self._header(y, width)
        r = round(self.scroll_offset.y) + y - HEADER
        if r >= len(self.grid.row_labels):
            return Strip.blank(width, _PLAIN)
        label = self.grid.row_labels[r][: LABEL_W - 1].ljust(LABEL_W)
        segments = [Segment(label, Style(bold=r == self.cursor[0]))]
        cells = []
        for c in range(len(self.grid.col_labels)):
            cell = self.grid.cells.get((r, c))
            text = "  " if cell is None else SHADES[cell.status] * CELL_W
            style = _PLAIN if cell is None else STATUS_STYLES.get(cell.status, _PLAIN)
            if (r, c) == self.cursor:
                text, style = ("[]" if cell is None else text), style + _CURSOR
            cells.append(Segment(text, style))
        scroll_x = round(self.scroll_offset.x)
        body = Strip(cells).crop(scroll_x, scroll_x + max(0, width - LABEL_W))
        return Strip([*segments, *body]).extend_cell_length(width, _PLAIN)

    def _header(self, y: int, width: int) -> Strip:
        g = self.grid
        if y == 0:
            corner = f"{g.row_axis or 'row'} \\ {g.col_axis or 'column'}"[: LABEL_W - 1].ljust(LABEL_W)
            numbers = column_numbers(len(g.col_labels))
            scroll_x = round(self.scroll_offset.x)
            body = Strip([Segment(numbers, _AXIS)]).crop(scroll_x, scroll_x + max(0, width - LABEL_W))
            return Strip([Segment(corner, _AXIS), *body]).extend_cell_length(width, _PLAIN)
        r, c = self.cursor
        if not g.col_labels or not g.row_labels:
            return Strip.blank(width, _PLAIN)
        row = g.row_labels[r]
        row = row if row.startswith(g.row_axis) else f"{g.row_axis} {row}".strip()
        text = f"{row}  x  {g.col_axis or 'column'} {c + 1}: {g.col_labels[c]}"
        return Strip([Segment(text[:width], _AXIS)]).extend_cell_length(width, _PLAIN)


def column_numbers(n: int, every: int = 5) -> str:
    """The column axis: the numbers of column 1 and every ``every``-th column, each ending under its
    own two-character cell (``" 1       5        10"``), so the numbers never run together."""
    line = [" "] * (CELL_W * n)
    for c in range(n):
        if c == 0 or (c + 1) % every == 0:
            text = str(c + 1)
            end = CELL_W * (c + 1)
            start = max(0, end - len(text))
            line[start:end] = text[-(end - start) :]
    return "".join(line)
