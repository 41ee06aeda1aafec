"""The links table: a virtual table that draws only the rows on screen, so 50,000 cables cost
the same to scroll, sort and filter as fifty (the rows live in a :class:`~tui.linkquery.LinkIndex`;
this widget holds only the list of visible row indexes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from fabric.app.readmodel.views import LinkRow
from fabric.present.health import flaps_text
from tui.messages import OpenDetail

# (title, width); the row text is built by _cells in the same order.
COLUMNS: tuple[tuple[str, int], ...] = (
    ("STATUS", 8),
    ("SCORE", 5),
    ("BER", 8),
    ("FLAPS/H", 7),
    ("END A", 22),
    ("PORT", 4),
    ("END B", 20),
    ("PORT", 4),
    ("TIERS", 11),
    ("RAIL", 4),
    ("LINK", 7),
)
STATUS_STYLES = {
    "ok": Style(color="green"),
    "watch": Style(color="yellow"),
    "warn": Style(color="dark_orange", bold=True),
    "critical": Style(color="red", bold=True),
}
_HEADER = Style(bold=True, underline=True)
_CURSOR = Style(reverse=True)
_PLAIN = Style()  # never None: the NO_COLOR (monochrome) filter reads every segment's style


def _fit(text: str, width: int) -> str:
    return text[: width - 1] + "…" if len(text) > width else text.ljust(width)


def row_text(row: LinkRow) -> str:
    """One row as plain text (what the screen shows, without colour)."""
    cells = (
        row.status.upper(),
        "-" if row.score is None else str(row.score),
        "-" if row.ber is None else f"{row.ber:.1e}",
        flaps_text(row.flaps_per_hour),
        row.a_name,
        str(row.a_port),
        row.b_name,
        str(row.b_port),
        row.tiers,
        "-" if row.rail is None else str(row.rail),
        f"{row.width}x{row.speed}",
    )
    return " ".join(_fit(c, w) for c, (_, w) in zip(cells, COLUMNS, strict=True))


HEADER_TEXT = " ".join(_fit(t, w) for t, w in COLUMNS)
LINE_WIDTH = len(HEADER_TEXT)


class LinkTable(ScrollView, can_focus=True):
    """Line 0 is the header (it does not scroll); line y > 0 shows ``order[scroll_y + y - 1]``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "up", show=False),
        Binding("down,j", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "jump(0)", "first", show=False),
        Binding("end", "jump(-1)", "last", show=False),
        Binding("enter", "choose", "detail"),
    ]
    DEFAULT_CSS = "LinkTable { height: 1fr; }"
    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: Sequence[LinkRow] = ()
        self.order: Sequence[int] = ()

    def show(self, rows: Sequence[LinkRow], order: Sequence[int]) -> None:
        """Show ``rows[i] for i in order``; keeps the cursor on the same cable when it is still shown."""
        current = self.current_row()
        self.rows, self.order = rows, order
        self.virtual_size = Size(LINE_WIDTH, len(order) + 1)
        if current is not None and order and len(order) < 200_000:
            try:
                self.cursor = (
                    list(order).index(current.index)
                    if len(order) <= 5000
                    else min(self.cursor, len(order) - 1)
                )
            except ValueError:
                self.cursor = 0
        else:
            self.cursor = 0
        self.refresh()

    def current_row(self) -> LinkRow | None:
        if not self.order or not 0 <= self.cursor < len(self.order):
            return None
        return self.rows[self.order[self.cursor]]

    def watch_cursor(self, value: int) -> None:
        if not self.order:
            return
        clamped = max(0, min(value, len(self.order) - 1))
        if clamped != value:
            self.cursor = clamped
            return
        body = max(1, self.size.height - 1)
        top = round(self.scroll_offset.y)
        if clamped < top:
            self.scroll_to(y=clamped, animate=False, immediate=True)
        elif clamped >= top + body:
            self.scroll_to(y=clamped - body + 1, animate=False, immediate=True)
        self.refresh()

    def action_cursor(self, step: int) -> None:
        self.cursor += step

    def action_page(self, direction: int) -> None:
        self.cursor += direction * max(1, self.size.height - 2)

    def action_jump(self, where: int) -> None:
        self.cursor = 0 if where == 0 else len(self.order) - 1

    def action_choose(self) -> None:
        row = self.current_row()
        if row is not None:
            self.post_message(OpenDetail(link=row.key))

    def on_click(self, event: events.Click) -> None:
        if event.y < 1:
            return
        index = round(self.scroll_offset.y) + event.y - 1
        if 0 <= index < len(self.order):
            again = index == self.cursor
            self.cursor = index
            if again or event.chain >= 2:
                self.action_choose()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x = round(self.scroll_offset.x)
        if y == 0:
            return (
                Strip([Segment(HEADER_TEXT, _HEADER)])
                .crop(scroll_x, scroll_x + width)
                .extend_cell_length(width, _PLAIN)
            )
        index = round(self.scroll_offset.y) + y - 1
        if index >= len(self.order):
            return Strip.blank(width, _PLAIN)
        row = self.rows[self.order[index]]
        text = row_text(row)
        status_w = COLUMNS[0][1]
        style = STATUS_STYLES.get(row.status, Style())
        segments = [Segment(text[:status_w], style), Segment(text[status_w:], _PLAIN)]
        if index == self.cursor:
            segments = [Segment(s.text, (s.style or _PLAIN) + _CURSOR) for s in segments]
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width, _CURSOR if index == self.cursor else _PLAIN)
