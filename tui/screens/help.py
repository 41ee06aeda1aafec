"""The key list (``?``)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = """\
EVERYWHERE
  o 1   overview            l 2   links             m 3   fabric map
  p 4   probes              r 5   recommendations   g     reload from the store
  ?     this help           q     quit              esc   back / close
LINKS
  /     filter (as you type: status:warn crit tier:leaf-spine rail:3 group:1 dgx-0042 spine-01)
  esc   leave the filter    s b f n  sort by score / BER / flaps / name
  up down pgup pgdn home end   move      enter (or click twice)   detail of the cable
FABRIC MAP
  arrows  move              v     leaf x spine <-> rail x unit      enter  detail of the worst cable
  w     bandwidth: what the latest sweep measured per leaf-spine cable (again: back to health)
DETAIL
  esc   back                a / b  open the near / far end's node
PROBES
  s     start a sweep (needs --lab or a sweep backend)    enter  show a stored sweep
RECOMMENDATIONS
  enter  apply the selected action: shows the plan, asks y/n, then applies it (audited)
Status is always written as a word (OK, WATCH, WARN, CRITICAL); colours only repeat it.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "dismiss", "close")]
    DEFAULT_CSS = "HelpScreen { align: center middle; } #help { width: 96; max-width: 100%; height: auto; max-height: 100%; border: round $primary; background: $surface; }"

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(KEYS, id="help-text")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
