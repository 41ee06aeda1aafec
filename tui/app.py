"""The Textual app: one factory, :func:`build_app`, for ``ibfab tui`` and for the tests.

The app owns the data (store state, classified topology, health, link rows and their index);
thread workers load it through :class:`fabric.app.readmodel.service.FabricService` and post the messages of
:mod:`tui.messages`; screens draw from the app's data in ``refresh_data``. First paint needs only
the cheap store summary; the topology and health arrive when their workers finish.

Health is computed in a child process (:meth:`FabricService.start_health`) that the load worker
waits on: tens of seconds of scoring on a large fabric would otherwise hold the GIL and make
every keypress wait. The worker also builds the link rows and their sort order, so the UI thread
only swaps them in.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from typing import ClassVar, TypeVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.worker import get_current_worker

from fabric.app.discovery.cables import CableInventory
from fabric.app.health.window import HealthProcess, HealthWindow
from fabric.app.readmodel.service import FabricService
from fabric.app.readmodel.views import FabricView, LinkRow, StoreState, with_health
from fabric.app.status import StatusReport
from topology.errors import IbfabError
from tui.linkquery import LinkIndex
from tui.messages import (
    ActionApplied,
    HealthLoaded,
    LoadFailed,
    OpenAccusers,
    OpenDetail,
    OpenRoutes,
    OpenScreen,
    RoutesJudged,
    StateLoaded,
    StoreChanged,
    StoreWarning,
    SweepFinished,
    ViewLoaded,
)
from tui.screens.anomalies import AnomaliesScreen
from tui.screens.base import DataScreen
from tui.screens.detail import DetailScreen
from tui.screens.fabric_map import FabricMapScreen
from tui.screens.help import HelpScreen
from tui.screens.links import LinksScreen
from tui.screens.operations import OperationsScreen
from tui.screens.overview import OverviewScreen
from tui.screens.pairs import AccusersScreen
from tui.screens.probes import ProbesScreen
from tui.screens.recommendations import RecommendationsScreen
from tui.screens.routes import RoutesScreen

POLL_SECONDS = 5.0
# Screen history deeper than this starts again from the overview (each screen holds its tables).
MAX_HISTORY = 24
T = TypeVar("T")
# The screens a key opens, by the name OpenScreen carries.
SCREENS: dict[str, type[DataScreen]] = {
    "overview": OverviewScreen,
    "anomalies": AnomaliesScreen,
    "links": LinksScreen,
    "map": FabricMapScreen,
    "probes": ProbesScreen,
    "recommendations": RecommendationsScreen,
    "operations": OperationsScreen,
    "routes": RoutesScreen,
}


def built_without_gc_pauses(build: Callable[[], T]) -> T:
    """``build()`` (a large structure that lives until the next load) with the cyclic collector
    off, then frozen out of its reach (:func:`gc.freeze`).

    On a 16,384-HCA fabric the topology and the health report are over a million objects; each
    full collection walks them all holding the GIL, 0.3-0.6 s during which no key is handled.
    They hold no reference cycles, so reference counting still frees them when replaced.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return build()
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


class StoreWarnings(logging.Handler):
    """The warnings of the layers below (logger ``fabric``: a damaged snapshot skipped, a damaged
    newest topology passed over) as :class:`StoreWarning` messages to the app, from any thread:
    under the TUI they are notifications, never lines on a stderr the screen is drawn over."""

    def __init__(self, app: App[None]) -> None:
        super().__init__(logging.WARNING)
        self.app = app

    def emit(self, record: logging.LogRecord) -> None:
        self.app.post_message(StoreWarning(" ".join(record.getMessage().split())))


class IbfabApp(App[None]):
    TITLE = "ibfab"
    CSS = """
    .panel { border: round $primary; padding: 0 1; height: auto; }
    .note { color: $text-muted; }
    #status-line { height: 1; background: $boost; }
    """
    # Every screen key opens a fresh screen on top of the history; escape goes back one step.
    # Priority: a screen key acts as it arrives, so the keys queued behind it (a burst, a paste)
    # reach the new screen, never the old one. A text box with focus still takes every printable
    # key (Textual drops the bindings of keys it consumes), and under a modal they do nothing.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o,1", "open('overview')", "overview", priority=True),
        Binding("e,2", "open('anomalies')", "anomalies", priority=True),
        Binding("l,3", "open('links')", "links", priority=True),
        Binding("m,4", "open('map')", "map", priority=True),
        Binding("p,5", "open('probes')", "probes", priority=True),
        Binding("r,6", "open('recommendations')", "advice", priority=True),
        Binding("c,7", "open('operations')", "changes", priority=True),
        Binding("t,8", "open('routes')", "routes", priority=True),
        Binding("escape", "go_back", "back"),
        Binding("g", "reload", "reload from the store", show=False, priority=True),
        Binding("question_mark", "help", "help", priority=True),
        Binding("q", "quit", "quit", priority=True),
    ]
    MODAL_BLOCKED: ClassVar[frozenset[str]] = frozenset({"open", "reload", "help", "quit"})

    def __init__(
        self,
        service: FabricService,
        *,
        poll_seconds: float | None = POLL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__()
        self.service = service
        self.clock = clock
        self.poll_seconds = poll_seconds
        self.state: StoreState | None = None
        self.view: FabricView | None = None
        self.health: HealthWindow | None = None
        self.status_report: StatusReport | str | None = None  # ibfab status, or why it is not had
        self.rows: tuple[LinkRow, ...] = ()
        self.index = LinkIndex(())
        self.loading = {"state": True, "topology": True, "health": True, "routes": True}
        self.errors: dict[str, str] = {}
        self.messages_seen: list[Message] = []  # our messages, in order (tests read this)
        self.generation = 0  # bumped whenever the data changes; a screen redraws when behind
        self._seen_ids: tuple[int | None, int | None] | None = None
        self._health_job: HealthProcess | None = None
        self._health_lock = threading.Lock()
        # the newest kept cable inventory, read once per store state (seconds on a large fabric)
        self._inventory: tuple[StoreState | None, CableInventory | None] | None = None
        self._inventory_lock = threading.Lock()
        self.warnings: list[str] = []  # each store warning once, in the order they came
        self._fabric_log = logging.getLogger("fabric")
        self._log_handlers: list[logging.Handler] | None = None

    # -- life cycle ---------------------------------------------------------------------------
    def get_default_screen(self) -> Screen[None]:
        return OverviewScreen()  # the bottom of the history: escape stops here

    def on_mount(self) -> None:
        # the store's warnings come here while the UI runs (the CLI's stderr handler set aside)
        self._log_handlers, self._fabric_log.handlers = self._fabric_log.handlers, [StoreWarnings(self)]
        self.sub_title = self.service.store_name()
        self.load(topology=True)
        if self.poll_seconds:
            self.set_interval(self.poll_seconds, self.poll)

    def action_reload(self) -> None:
        self.load(topology=True)

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.screen))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No screen key under a modal (a plan window, the help): priority bindings are checked
        past the modal, and a key for the window must not open a screen over it."""
        return not (action in self.MODAL_BLOCKED and isinstance(self.screen, ModalScreen))

    # -- navigation: one history stack ----------------------------------------------------------
    def action_open(self, name: str) -> None:
        self.open_screen(SCREENS[name]())

    def open_screen(self, screen: Screen[None]) -> None:
        """Push ``screen`` on the history; a history grown past MAX_HISTORY restarts at the overview."""
        if len(self.screen_stack) >= MAX_HISTORY:
            while len(self.screen_stack) > 1:
                self.pop_screen()
        self.push_screen(screen)

    def action_go_back(self) -> None:
        if len(self.screen_stack) > 1:
            self.pop_screen()

    def on_open_screen(self, msg: OpenScreen) -> None:
        self.messages_seen.append(msg)
        self.action_open(msg.name)

    def on_open_accusers(self, msg: OpenAccusers) -> None:
        self.messages_seen.append(msg)
        self.open_screen(AccusersScreen(msg))

    def on_unmount(self) -> None:
        self.stop_health()
        self.service.stop_routes()
        if self._log_handlers is not None:
            self._fabric_log.handlers, self._log_handlers = self._log_handlers, None

    def stop_health(self) -> None:
        """Kill a health computation still running (a newer one replaces it, or the app closes)."""
        with self._health_lock:
            job, self._health_job = self._health_job, None
        if job is not None:
            job.cancel()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load(self, topology: bool = True) -> None:
        """State, then (if asked) topology, then health: each posted as soon as it is there.
        Health starts first, in its own process, so it runs while the topology is classified."""
        svc = self.service
        worker = get_current_worker()
        try:
            self.post_message(StateLoaded(svc.state()))
            self.stop_health()
            job = svc.start_health()
            with self._health_lock:
                self._health_job = job
            view = built_without_gc_pauses(svc.load_view) if topology else self.view
            if topology:
                self.post_message(ViewLoaded(view))
            try:
                health = built_without_gc_pauses(job.result)
            finally:
                for text in job.warnings:  # what the store warned of in the health process
                    self.post_message(StoreWarning(text))
            with self._health_lock:
                if self._health_job is job:
                    self._health_job = None
            if worker.is_cancelled:
                return
            index = built_without_gc_pauses(lambda: _index(view, health))
            status = self._status(view, health)
            self.post_message(HealthLoaded(health, view, index, status))
        except IbfabError as exc:
            if not worker.is_cancelled:
                self.post_message(LoadFailed("store", exc.one_line()))
        except Exception as exc:  # one line on screen, never a traceback
            self.post_message(LoadFailed("store", f"{type(exc).__name__}: {exc}"))

    def _status(self, view: FabricView | None, health: HealthWindow | None) -> StatusReport | str | None:
        """ibfab status on what was just loaded, in the loading thread (a large fabric's sweep takes
        seconds to rank again: never on the screen's thread); a string says why it could not be had."""
        if view is None:
            return None
        try:
            return self.service.status(view, health, self.now())
        except IbfabError as exc:
            return exc.one_line()

    @work(thread=True, exclusive=True, group="poll", exit_on_error=False)
    def poll(self) -> None:
        try:
            ids = self.service.latest_snapshot_id()
        except IbfabError:
            return  # a writer holding the lock past the busy timeout: try again next tick
        if self._seen_ids is not None and ids != self._seen_ids:
            self.post_message(StoreChanged(*ids))
        self._seen_ids = ids

    # -- data arriving ------------------------------------------------------------------------
    def on_state_loaded(self, msg: StateLoaded) -> None:
        self.messages_seen.append(msg)
        self.state = msg.state
        self.loading["state"] = False
        if msg.state.topology is not None and msg.state.latest_snapshot is not None:
            self._seen_ids = self._seen_ids or (msg.state.topology.id, msg.state.latest_snapshot.id)
        self.refresh_screens()

    def on_view_loaded(self, msg: ViewLoaded) -> None:
        self.messages_seen.append(msg)
        self.view = msg.view
        self.loading["topology"] = False
        self._set_rows()

    def on_health_loaded(self, msg: HealthLoaded) -> None:
        self.messages_seen.append(msg)
        self.health = msg.health
        self.status_report = msg.status if msg.view is self.view else None
        self.loading["health"] = False
        self.judge_routes()
        if msg.index is not None and msg.view is self.view:  # built from the view on screen
            self.rows, self.index = tuple(msg.index.rows), msg.index
            self.refresh_screens()
            return
        self._set_rows()

    def on_store_changed(self, msg: StoreChanged) -> None:
        self.messages_seen.append(msg)
        new_topology = self.view is None or msg.topology_id != self.view.topology.id
        self.loading["health"] = True
        self.load(topology=new_topology)

    def on_store_warning(self, msg: StoreWarning) -> None:
        """Each warning once (every load reads the same damaged snapshot again), kept in
        :attr:`warnings` and shown as a notification that stays a while."""
        self.messages_seen.append(msg)
        if msg.text in self.warnings:
            return
        self.warnings.append(msg.text)
        self.notify(msg.text, title="store warning", severity="warning", timeout=30, markup=False)

    def on_load_failed(self, msg: LoadFailed) -> None:
        self.messages_seen.append(msg)
        self.errors[msg.what] = msg.error
        self.loading = dict.fromkeys(self.loading, False)
        self.notify(msg.error, title=f"{msg.what} error", severity="error", markup=False)
        self.refresh_screens()

    def on_open_detail(self, msg: OpenDetail) -> None:
        self.messages_seen.append(msg)
        if self.view is not None:
            self.open_screen(DetailScreen(guid=msg.guid, link=msg.link))

    def on_sweep_finished(self, msg: SweepFinished) -> None:
        self.messages_seen.append(msg)

    def on_action_applied(self, msg: ActionApplied) -> None:
        self.messages_seen.append(msg)
        self.notify(msg.result, title=msg.target, severity="information" if msg.ok else "error", markup=False)
        if msg.ok:
            self.refresh_screens()  # the open changes and the audit log moved
            self.judge_routes()  # routes over a cable isolated (or brought back) now

    # -- routes: the stored tables judged in a child process, once per what they rest on ---------
    def judge_routes(self) -> None:
        """Judge the tables stored with the topology on screen, with the health on screen: a
        worker waits on the service's child process (the service keeps the verdict: unchanged
        tables, flags and isolations return it at once)."""
        if self.view is None:
            self.loading["routes"] = False
            return
        self.loading["routes"] = True
        self._judge_routes(self.view, self.health)

    @work(thread=True, exclusive=True, group="routes", exit_on_error=False)
    def _judge_routes(self, view: FabricView, health: HealthWindow | None) -> None:
        try:
            verdict = self.service.routes(view, health)
            for text in verdict.warnings:  # what the store warned of in the judging process
                self.post_message(StoreWarning(text))
            self.post_message(RoutesJudged(view, health, verdict))
        except Exception as exc:  # one line on screen, never a traceback
            self.post_message(LoadFailed("routes", f"{type(exc).__name__}: {exc}"))

    def on_routes_judged(self, msg: RoutesJudged) -> None:
        self.messages_seen.append(msg)
        if msg.view is not self.view:
            return  # a topology since replaced: its own judgement follows
        if msg.health is self.health:
            self.loading["routes"] = False
        self.refresh_screens()

    def on_open_routes(self, msg: OpenRoutes) -> None:
        self.messages_seen.append(msg)
        self.open_screen(RoutesScreen(focus=msg.finding))

    def _set_rows(self) -> None:
        self.rows = with_health(self.view.links, self.health) if self.view is not None else ()
        self.index = LinkIndex(self.rows)
        self.refresh_screens()

    def refresh_screens(self) -> None:
        """Redraw the screen on top; the ones below redraw when they come back (on resume)."""
        self.generation += 1
        for screen in reversed(self.screen_stack):
            if isinstance(screen, DataScreen):
                if screen.is_mounted:
                    screen.refresh_data()
                return

    def now(self) -> float:
        return self.clock()

    def cable_inventory(self) -> CableInventory | None:
        """The store's newest cable inventory (None: no ibdiagnet run kept), read again only once
        the store has changed; called from worker threads."""
        with self._inventory_lock:
            state = self.state
            if self._inventory is None or self._inventory[0] is not state:
                self._inventory = (state, self.service.cable_inventory())
            return self._inventory[1]

    def _routes_failed(self) -> bool:
        """The stored tables of the topology on screen could not be judged (the routes screen
        says why); a verdict that waits for nothing."""
        verdict = self.service.routes_known(self.view) if self.view is not None else None
        return verdict is not None and bool(verdict.error)

    def status_line(self) -> str:
        """What is loaded, in words (shown at the top of every screen)."""
        if self.errors:
            return "ERROR: " + "; ".join(self.errors.values())
        parts = []
        if self.loading["state"]:
            parts.append("reading store…")
        elif self.loading["topology"]:
            parts.append("loading topology…")
        elif self.view is None:
            parts.append("no topology stored (ibfab discover --save)")
        else:
            parts.append(f"topology #{self.view.topology.id}: {len(self.rows):,} links")
        if not self.loading["topology"] and self.view is not None:
            if self.loading["health"]:
                parts.append("computing health…")
            elif self.health is None:
                parts.append("no counters yet (ibfab counters collect)")
            else:
                parts.append(f"health at snapshot #{self.health.snapshot_id}")
            # routes are judged once health is there (judge_routes): until the verdict comes,
            # loading["routes"] is a judgement running in its child process
            if not self.loading["health"] and self.loading["routes"]:
                parts.append("judging routes…")
            elif not self.loading["health"] and self._routes_failed():
                parts.append("routes not judged (t: why)")
        return " | ".join(parts)


def _index(view: FabricView | None, health: HealthWindow | None) -> LinkIndex:
    index = LinkIndex(with_health(view.links, health) if view is not None else ())
    index.order("score")  # the links screen's first sort, here rather than on the UI thread
    return index


def build_app(
    service: FabricService,
    *,
    poll_seconds: float | None = POLL_SECONDS,
    clock: Callable[[], float] = time.time,
) -> IbfabApp:
    """The app for ``ibfab tui`` and for tests (``poll_seconds=None``: no live refresh; ``clock``:
    the time ages are counted against)."""
    return IbfabApp(service, poll_seconds=poll_seconds, clock=clock)
