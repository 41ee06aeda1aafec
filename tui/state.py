"""What screens read and how they ask to go somewhere, without knowing the App class.

The App (:mod:`tui.app`) holds the data and satisfies :class:`FabricData`; screens read it through
:func:`fabric_data` and ask for navigation by posting :mod:`tui.messages` (``OpenScreen``,
``OpenDetail``...), so ``tui.screens`` never imports ``tui.app`` (the app imports the screens).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from textual.app import App

from fabric.app.discovery.cables import CableInventory
from fabric.app.health.window import HealthWindow
from fabric.app.readmodel.service import FabricService
from fabric.app.readmodel.views import FabricView, LinkRow, StoreState
from fabric.app.status import StatusReport
from tui.linkquery import LinkIndex


@runtime_checkable
class FabricData(Protocol):
    service: FabricService
    state: StoreState | None
    view: FabricView | None
    health: HealthWindow | None
    status_report: StatusReport | str | None  # ibfab status on view and health (str: why not had)
    rows: tuple[LinkRow, ...]
    index: LinkIndex
    loading: dict[str, bool]
    errors: dict[str, str]
    generation: int  # bumped whenever the data changes

    def status_line(self) -> str: ...

    def now(self) -> float:
        """The wall clock ages are counted against (fixed in tests and snapshots)."""
        ...

    def cable_inventory(self) -> CableInventory | None:
        """The store's newest cable inventory, read once per store state (worker threads only)."""
        ...


def fabric_data(app: App[None]) -> FabricData:
    """The running app's data (an app without it is a programming error, said at once)."""
    if not isinstance(app, FabricData):
        raise TypeError(f"{type(app).__name__} does not hold the fabric's data")
    return app
