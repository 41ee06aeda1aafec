"""Benchmark: the TUI while it judges the forwarding tables stored with a 16,384-HCA fabric.

Builds a store in a temp dir (superpod-64su: 1,280 switches, 17,664 LIDs; its topology and
OpenSM-minhop tables from topology.generate_routes, about 15 s), opens the real app headless
through Textual's Pilot on the links screen (49,152 cables) and prints:

* keypresses in the links table (bench_tui's measure: press until the redraw) before, while the
  routes are judged (the app's worker waits on the judging child process) and after (the
  baseline of the same run): median and worst;
* how long the judgement took, end to end, and the judging once more with nothing changed
  (the service's cache: the stamp and the isolations read again, no child);
* this process's peak resident memory (the child's is its own).

    .venv/bin/python bench/bench_tui_routes.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_tui import press_keys  # this script's folder is first on sys.path

from fabric.app.readmodel.routes import RoutesCache
from fabric.app.readmodel.service import FabricService
from fabric.app.session import Session, StoreAccess
from fabric.store import Store
from topology.generate import generate, to_ibnetdiscover
from topology.generate_routes import minhop_tables
from topology.ibnetdiscover import parse_ibnetdiscover
from tui.app import build_app

SPEC = "superpod-64su"


def build(path: Path) -> None:
    t = time.perf_counter()
    text = to_ibnetdiscover(generate(SPEC))
    fabric = parse_ibnetdiscover(text.splitlines(), SPEC)
    with Store.open(path) as store:
        sid = store.save_topology(fabric, text, "ibnetdiscover", f"generated {SPEC}")
        store.save_routes(sid, minhop_tables(fabric), source="minhop (generated)")
    print(f"store built in {time.perf_counter() - t:.0f} s")


def ms(xs: list[float]) -> str:
    return f"n={len(xs)} median {statistics.median(xs):.0f} ms, worst {max(xs):.0f} ms" if xs else "n=0"


async def measure(path: Path) -> None:
    svc = FabricService(Session(store=StoreAccess(path)))
    app = build_app(svc, poll_seconds=None)
    async with app.run_test(size=(120, 40)) as pilot:
        while any(app.loading.values()):
            await pilot.pause(0.05)
        await pilot.press("l")
        await pilot.pause(0.5)
        before = await press_keys(pilot, 30)
        svc._routes = RoutesCache()  # forget the verdict the app's first load judged
        t = time.perf_counter()
        app.judge_routes()
        during = await press_keys(pilot, 5000, until=lambda: not app.loading["routes"])
        while app.loading["routes"]:
            await pilot.pause(0.01)
        judged = time.perf_counter() - t
        after = await press_keys(pilot, max(30, len(during)))
        assert app.view is not None
        t = time.perf_counter()
        again = svc.routes(app.view, app.health)
        cached = time.perf_counter() - t
        assert again is svc.routes_known(app.view) and again.judged is not None
    print(f"keys before:               {ms(before)}")
    print(f"keys while judging routes: {ms(during)}   (judged in {judged:.1f} s end to end)")
    print(f"keys after (baseline):     {ms(after)}")
    print(f"judging again, unchanged:  {cached * 1000:.0f} ms (the cache)")
    print(f"peak RSS of this process:  {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build (or reuse) the store in this directory")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-tui-routes-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "routes.db"
    if not path.exists():
        build(path)
    asyncio.run(measure(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
