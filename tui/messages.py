"""Every message the TUI posts, in one place (workers -> app -> screens, widgets -> screens).

Workers run in threads and post these with ``App.post_message`` (thread-safe); screens react in
their ``on_*`` handlers. Tests assert on them (``app.posted``) before they look at the screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

from fabric.app.health.window import HealthWindow
from fabric.app.readmodel.operations import PairHistory
from fabric.app.readmodel.routes import RoutesVerdict
from fabric.app.readmodel.views import FabricView, StoreState
from topology.model import LinkKey
from topology.route_findings import RouteFinding

if TYPE_CHECKING:
    from fabric.app.status import StatusReport
    from tui.linkquery import LinkIndex


class StateLoaded(Message):
    """The cheap store summary (first paint)."""

    def __init__(self, state: StoreState) -> None:
        super().__init__()
        self.state = state


class StoreWarning(Message):
    """A warning the store logged while the TUI (or its health process) read it: a damaged
    snapshot skipped, a damaged newest topology passed over."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ViewLoaded(Message):
    """The latest topology, classified (None: the store has none)."""

    def __init__(self, view: FabricView | None) -> None:
        super().__init__()
        self.view = view


class HealthLoaded(Message):
    """A health report over the newest counter window (None: no counters yet), with the link rows
    of ``view`` and their index already built from it (None: the app builds them)."""

    def __init__(
        self,
        health: HealthWindow | None,
        view: FabricView | None = None,
        index: LinkIndex | None = None,
        status: StatusReport | str | None = None,
    ) -> None:
        super().__init__()
        self.health = health
        self.view = view
        self.index = index
        self.status = status  # ibfab status on them (a string: why it could not be had)


class RoutesJudged(Message):
    """The tables stored with ``view``'s topology judged with ``health`` (the verdict is also
    the service's :meth:`routes_known` from now on)."""

    def __init__(self, view: FabricView, health: HealthWindow | None, verdict: RoutesVerdict) -> None:
        super().__init__()
        self.view = view
        self.health = health
        self.verdict = verdict


class StoreChanged(Message):
    """The poller saw a new topology or counter snapshot id."""

    def __init__(self, topology_id: int | None, snapshot_id: int | None) -> None:
        super().__init__()
        self.topology_id = topology_id
        self.snapshot_id = snapshot_id


class LoadFailed(Message):
    """A worker hit an ibfab error: shown as one line, never a traceback."""

    def __init__(self, what: str, error: str) -> None:
        super().__init__()
        self.what = what
        self.error = error


class OpenDetail(Message):
    """Open the detail screen for a node GUID or a link (by its key)."""

    def __init__(
        self, guid: str | None = None, link: tuple[tuple[str, int], tuple[str, int]] | None = None
    ) -> None:
        super().__init__()
        self.guid = guid
        self.link = link


class OpenRoutes(Message):
    """Open the routes screen, on ``finding`` (a route alert's) if given."""

    def __init__(self, finding: RouteFinding | None = None) -> None:
        super().__init__()
        self.finding = finding


class OpenScreen(Message):
    """Open a fresh screen by name (``overview``, ``anomalies``, ``links``...) on top of the history."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class OpenAccusers(Message):
    """Open the pairs of a sweep that accuse a suspect cable (slow pairs crossing it, and the fast
    ones that partly clear it)."""

    def __init__(
        self,
        sweep_id: int,
        cable: str,
        link: LinkKey | None,
        slow: tuple[PairHistory, ...],
        fast: tuple[PairHistory, ...],
    ) -> None:
        super().__init__()
        self.sweep_id = sweep_id
        self.cable = cable
        self.link = link
        self.slow = slow
        self.fast = fast


class SweepProgressed(Message):
    """Coalesced: at most one is in the queue; the handler takes the latest fabric.app.readmodel.service.SweepStep."""


class SweepFinished(Message):
    def __init__(self, sweep_id: int | None, text: str, ok: bool) -> None:
        super().__init__()
        self.sweep_id = sweep_id
        self.text = text
        self.ok = ok


class ActionApplied(Message):
    """A change (an isolation, an undo) was applied, refused or not confirmed."""

    def __init__(self, target: str, result: str, ok: bool) -> None:
        super().__init__()
        self.target = target
        self.result = result
        self.ok = ok
