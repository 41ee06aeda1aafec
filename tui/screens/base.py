"""What every data screen shares: header, a status line saying what is loaded, a footer, and
``refresh_data`` called by the app whenever its data changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

if TYPE_CHECKING:
    from tui.app import IbfabApp


class DataScreen(Screen[None]):
    @property
    def ibfab(self) -> IbfabApp:
        return cast("IbfabApp", self.app)

    def compose_frame(self) -> ComposeResult:
        yield Header()
        yield Static("", id="status-line")

    def compose_footer(self) -> ComposeResult:
        yield Footer()

    def on_mount(self) -> None:
        self.ibfab.data_screens.add(self)
        self.refresh_data()

    def on_unmount(self) -> None:
        self.ibfab.data_screens.discard(self)

    def refresh_data(self) -> None:
        self.query_one("#status-line", Static).update(self.ibfab.status_line())
        self.draw()

    def draw(self) -> None:
        """Redraw from the app's data (override)."""
