"""``?``: every key of the screen it was opened on, read from the live bindings (the app's, the
screen's and each of its focusable widgets'), so the list cannot fall behind the code; then what
the screen adds in words (a filter's language, what the marks mean)."""

from __future__ import annotations

import re
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Static

from tui.screens.base import DataScreen, plain

COMMON = (
    "Keys are read only when no text box has focus: while you type in a filter every printable key\n"
    "goes into it (esc or enter leaves it). A screen key always opens that screen fresh on top of\n"
    "the history; esc goes back one step. Status is always written as a word (OK, WATCH, WARN,\n"
    "CRITICAL); colours only repeat it. Nothing changes the fabric without a typed confirmation."
)


# The panes a key may act in, as operators see them (? named them by their internal ids).
PANES = {
    "ov-status": "the what-is-wrong list",
    "ov-worst": "the worst links",
    "ov-body": "the overview",
    "links-table": "the link table",
    "heatmap": "the map",
    "anomalies": "the anomaly list",
    "detail-body": "the detail",
    "detail-ports": "the port list",
    "detail-hcas": "the host's HCAs",
    "ops-body": "the operations",
    "ops-open": "the open changes",
    "ops-audit": "the audit log",
    "ops-runs": "the runs",
    "probes-body": "the probes",
    "sweeps": "the sweep list",
    "pairs": "the pair list",
    "suspects": "the suspect cables",
    "accusers": "the accusing pairs",
    "advice": "the recommendations",
    "confirm-scroll": "the plan",
}


def pane_name(widget: DOMNode) -> str:
    """Where a key acts, in words: the pane's name, else what kind of pane it is."""
    if widget.id in PANES:
        return PANES[widget.id]
    kind = type(widget).__name__
    if "Table" in kind:
        return "the table"
    if "Scroll" in kind:
        return "the scrolled text"
    return "the highlighted pane"


def screen_name(screen: Screen[object]) -> str:
    """``fabric map``: the screen's NAME, else its class in words."""
    name = screen.NAME if isinstance(screen, DataScreen) else ""
    if name:
        return name
    words = re.sub(r"(?<!^)(?=[A-Z])", " ", type(screen).__name__.removesuffix("Screen"))
    return words.lower()


def key_lines(screen: Screen[object]) -> list[str]:
    """One line per action: its keys and what it does, for the app, the screen, then its widgets."""
    app = screen.app
    sections: list[tuple[str, DOMNode]] = [("everywhere", app), ("this screen", screen)]
    for widget in screen.query("*"):
        if widget.can_focus and not isinstance(widget, Input) and widget._bindings.key_to_bindings:
            sections.append((f"in {pane_name(widget)} (tab moves focus)", widget))
    lines: list[str] = []
    seen_sections: set[tuple[str, ...]] = set()
    for title, node in sections:
        actions: dict[tuple[str, str], tuple[list[str], str]] = {}
        for _key, binding in node._bindings:
            if not binding.description or binding.system:
                continue
            keys, _ = actions.setdefault((binding.action, binding.description), ([], binding.description))
            shown = app.get_key_display(binding)
            if shown not in keys:
                keys.append(shown)
        if not actions:
            continue
        block = tuple(f"  {' '.join(keys):<14} {what}" for keys, what in actions.values())
        if block in seen_sections:
            continue
        seen_sections.add(block)
        lines.append(title.upper())
        lines += block
    return lines


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "close"),
        Binding("question_mark", "close", "close"),
        Binding("q", "close", "close"),
    ]
    DEFAULT_CSS = "HelpScreen { align: center middle; } #help { width: 100; max-width: 100%; height: auto; max-height: 100%; border: round $primary; background: $surface; padding: 0 1; }"

    def __init__(self, under: Screen[object]) -> None:
        super().__init__()
        self.under = under
        extra = under.HELP if isinstance(under, DataScreen) else ""
        self.text = "\n".join(
            [
                f"KEYS OF THE {screen_name(under).upper()} SCREEN",
                *key_lines(under),
                "",
                *([extra, ""] if extra else []),
                COMMON,
            ]
        )

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(plain(self.text), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
