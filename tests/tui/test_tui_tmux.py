"""End to end in a real terminal: ``ibfab tui`` under tmux (100x30), keys sent, screen text read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tui_data import build_store

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
IBFAB = Path(sys.executable).with_name("ibfab")


class Tmux:
    def __init__(self, socket: Path, session: str) -> None:
        self.base = ["tmux", "-S", str(socket)]
        self.session = session

    def run(self, *args: str) -> str:
        return subprocess.run(
            [*self.base, *args], capture_output=True, text=True, timeout=30, check=True
        ).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.session, *keys)

    def wait_for(self, *texts: str, timeout: float = 60.0) -> str:
        """The screen once every one of ``texts`` is on it (a screen is drawn in parts)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            shown = self.screen()
            if all(text in shown for text in texts):
                return shown
            time.sleep(0.2)
        raise AssertionError(f"{texts!r} never all appeared; screen:\n{self.screen()}")


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    t = Tmux(tmp_path / "tmux.sock", f"ibfab-{uuid.uuid4().hex[:8]}")
    yield t
    subprocess.run([*t.base, "kill-server"], capture_output=True, timeout=30)


def test_navigate_filter_detail_quit(tmux: Tmux, tmp_path: Path) -> None:
    path, *_ = build_store(tmp_path / "tui.db")
    env = {**os.environ, "NO_COLOR": "1", "TERM": "xterm-256color"}
    done = tmp_path / "exited"
    command = f"{IBFAB} tui --db {path} --poll 0; echo $? > {done}; sleep 60"
    subprocess.run(
        [*tmux.base, "new-session", "-d", "-s", tmux.session, "-x", "100", "-y", "50", command],
        check=True,
        timeout=30,
        env=env,
    )
    # 50 rows: what is wrong first, the highlighted entry, then the fabric's summary
    tmux.wait_for(
        "health at snapshot #16", "WHAT IS WRONG (3", "switches 20 (16 leaf, 4 spine)", "critical: 2"
    )
    tmux.keys("l")
    tmux.wait_for("128 of 128 links", "STATUS   SCORE BER", "CRITICAL")  # status in words with NO_COLOR
    tmux.keys("/")  # and the filter right behind it: keys typed before the filter box has focus go to it
    tmux.keys("-l", "spine-01")
    tmux.keys("Enter")
    shown = tmux.wait_for("16 of 128 links", "filter: spine-01")
    lines = [ln for ln in shown.splitlines() if "leaf-su" in ln]
    assert lines and all("spine-01" in ln for ln in lines)
    assert "CRITICAL 0" in lines[0] and "leaf-su01-r0" in lines[0]
    tmux.keys("Enter")
    tmux.wait_for("leaf-su01-r0 port 5  <->  spine-01 port 1", "status CRITICAL  score 0")
    tmux.wait_for("counter history: per-sample deltas")
    tmux.keys("Escape")
    tmux.wait_for("16 of 128 links")
    tmux.keys("q")
    end = time.monotonic() + 60  # a deadline, not a speed
    while not done.exists() and time.monotonic() < end:
        time.sleep(0.2)
    assert done.read_text().strip() == "0"


def test_walk_overview_anomalies_element_links_recommendations_quit(tmux: Tmux, tmp_path: Path) -> None:
    """The issue's walk at 80x24, and the issue's burst: / and a filter with screen keys in it,
    sent to the terminal in one write."""
    path, *_ = build_store(tmp_path / "tui.db")
    env = {**os.environ, "NO_COLOR": "1", "TERM": "xterm-256color"}
    done = tmp_path / "exited"
    command = f"{IBFAB} tui --db {path} --poll 0; echo $? > {done}; sleep 60"
    subprocess.run(
        [*tmux.base, "new-session", "-d", "-s", tmux.session, "-x", "80", "-y", "24", command],
        check=True,
        timeout=30,
        env=env,
    )
    # at 80x24 the overview opens on what is wrong: the two critical cables, the miswired host
    tmux.wait_for(
        "health at snapshot #16",
        "WHAT IS WRONG (3, worst first",
        "CRITICAL  cable",
        "ERROR     host   dgx-0002",
    )
    tmux.keys("e")
    tmux.wait_for("3 of 3 findings in 2 kind(s)", "── link health", "── rail_miswire")
    tmux.keys("Enter")  # the worst finding: the critical cable
    tmux.wait_for("leaf-su01-r0 port 5  <->  spine-01 port 1", "status CRITICAL  score 0")
    tmux.keys("l")
    tmux.wait_for("128 of 128 links")
    tmux.keys("/dgx-0001 mlx5_0", "Enter")  # one write: / and the text behind it
    tmux.wait_for("filter: dgx-0001 mlx5_0", "1 of 128 links")
    tmux.keys("r")
    tmux.wait_for("recommendation(s); enter shows the plan", "isolate_port")
    tmux.keys("Escape")
    tmux.wait_for("filter: dgx-0001 mlx5_0")  # back one step: the links screen as it was
    tmux.keys("q")
    end = time.monotonic() + 60  # a deadline, not a speed
    while not done.exists() and time.monotonic() < end:
        time.sleep(0.2)
    assert done.read_text().strip() == "0"
