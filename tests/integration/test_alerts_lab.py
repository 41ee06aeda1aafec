"""End to end: a real Prometheus loads ibfab's rules and scrapes ``ibfab exporter`` over a lab fabric.

Counters are collected from the lab about every second; the fabric is clean, so no alert is
active. Symbol errors are planted on one cable: within a bounded time ``IbfabLinkCritical`` fires
for exactly that cable in /api/v1/alerts, both ends and the reason in its annotations. The errors
stop (the link is healed) and, once they have left the exporter's short health window, the alert
resolves. Every rule evaluates without error, and every dashboard query runs against the same
Prometheus without error. Intervals are shortened (scrape and evaluation 1 s, ``for:`` seconds,
health window 15 s) so the test takes well under a minute; it stops only the PIDs it started.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fabric.app.health.assess import node_names
from fabric.app.health.collect import Collector
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.exports.alert_rules import RuleTiming, alert_rules
from fabric.exports.grafana import dashboard_queries, grafana_dashboard, with_sample_variables
from fabric.lab import simulator as lab
from fabric.store import Store
from tests.servers import free_port, get_json, stop_process

LAB = "alerts"
SPEC = "leafspine:leaves=2,spines=1,hosts=2"  # leaf-0N ports 1-2 to hosts, 3-4 to spine-01
WINDOW_S = 15.0  # the exporter's health window: errors leave it 15 s after they stop
# Short for: periods so the test runs in seconds; staleness gets longer, because on a loaded 2-core
# machine one collection can take several of the test's sub-second intervals (promtool's unit tests
# check that rule's firing exactly).
TIMING = RuleTiming(
    critical="3s", warn="3s", ber="3s", flapping="3s", repeat_offender="3s", uplinks="3s", stale="15s"
)
# Deadlines, not speeds (a busy machine only takes longer): collection (~1 s) + exporter refresh
# (1 s) + scrape (1 s) + for (3 s), with ample room; to resolve, the health window on top
FIRE_WITHIN_S = 90.0
RESOLVE_WITHIN_S = 120.0


@dataclass
class Rig:
    store: Store
    collector: Collector
    api: str  # Prometheus base URL
    names: dict[str, str]  # node name -> GUID
    logs: Path  # the module's directory: logs, and the lab under labs/

    def collect(self) -> None:
        self.collector.collect_once()

    def alerts(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = get_json(f"{self.api}/api/v1/alerts")["data"]["alerts"]
        return data

    def firing(self) -> list[dict[str, Any]]:
        return [a for a in self.alerts() if a["state"] == "firing"]

    def until(self, what: str, done: Callable[[], bool], within: float) -> float:
        """Collect and poll until ``done()``; seconds it took (fails after ``within``)."""
        start = time.monotonic()
        while not done():
            if time.monotonic() - start > within:
                tail = (self.logs / "prometheus.log").read_text()[-1500:]
                pytest.fail(
                    f"{what}: not within {within:g} s; alerts {self.alerts()}; prometheus log: {tail}"
                )
            self.collect()
            time.sleep(0.3)
        return time.monotonic() - start


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    root = tmp_path_factory.mktemp("alerts")
    db = root / "ibfab.db"
    rules = root / "ibfab-rules.yml"
    rules.write_text(alert_rules(window_s=WINDOW_S, timing=TIMING).to_yaml())
    exporter_port, prom_port = free_port(), free_port()
    started: list[subprocess.Popen[bytes]] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IBFAB_LAB_DIR", str(root / "labs"))
        mp.setenv("IBFAB_DATA_DIR", str(root / "data"))
        lab.up(SPEC, name=LAB)
        try:
            with Store.open(db) as store:
                collector = Collector(store, Session(Source.lab(LAB)))
                collector.collect_once()
                names = {name: guid for guid, name in node_names(store.load_topology().fabric).items()}
                argv = [sys.executable, "-c", "from fabric.cli import main; main()", "exporter"]
                argv += ["--listen", f"127.0.0.1:{exporter_port}", "--db", str(db), "--refresh", "1s"]
                argv += ["--window", f"{WINDOW_S:g}s"]
                started.append(
                    subprocess.Popen(
                        argv, stdout=subprocess.DEVNULL, stderr=(root / "exporter.log").open("w")
                    )
                )
                config = root / "prometheus.yml"
                config.write_text(
                    "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    f"rule_files: ['{rules}']\n"
                    "scrape_configs:\n  - job_name: ibfab\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{exporter_port}']\n"
                )
                started.append(
                    subprocess.Popen(
                        [
                            shutil.which("prometheus") or "prometheus",
                            f"--config.file={config}",
                            f"--web.listen-address=127.0.0.1:{prom_port}",
                            f"--storage.tsdb.path={root / 'tsdb'}",
                        ],
                        stdout=(root / "prometheus.log").open("w"),
                        stderr=subprocess.STDOUT,
                        cwd=root,
                    )
                )
                api = f"http://127.0.0.1:{prom_port}"
                r = Rig(store, collector, api, names, root)

                def scraping() -> bool:
                    try:
                        up = get_json(f"{api}/api/v1/query?query=ibfab_exporter_up")["data"]["result"]
                    except OSError:
                        return False
                    return bool(up) and up[0]["value"][1] == "1"

                r.until("Prometheus scrapes the exporter", scraping, 60)
                yield r
        finally:
            for proc in reversed(started):
                stop_process(proc)
            lab.down(LAB)


def _link(alert: dict[str, Any]) -> tuple[str, str, str, str]:
    labels = alert["labels"]
    return (labels["a_name"], labels["a_port"], labels["b_name"], labels["b_port"])


@pytest.mark.lab
@pytest.mark.slow
def test_alert_fires_on_planted_symbol_errors_and_resolves_when_healed(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IBFAB_LAB_DIR", str(rig.logs / "labs"))  # the module's lab, not this test's
    # a clean fabric is quiet: several collections, evaluations and for: periods, no alert at all
    quiet_until = time.monotonic() + 8
    while time.monotonic() < quiet_until:
        rig.collect()
        time.sleep(0.5)
    # Nothing fires, and no link alert is even pending. (Staleness may go pending for a moment
    # when one collection of this sub-second loop is slow on a loaded machine; it never fires.)
    alerts = rig.alerts()
    assert [a for a in alerts if a["state"] == "firing"] == []
    assert [
        a["labels"]["alertname"] for a in alerts if a["labels"]["alertname"] != "IbfabCountersStale"
    ] == []

    lab.set_counter(LAB, "leaf-01", 1, "SymbolErrorCounter", 500)  # the cable to cn0001 mlx5_0
    took = rig.until("IbfabLinkCritical firing", lambda: bool(rig.firing()), FIRE_WITHIN_S)
    [alert] = rig.firing()
    assert alert["labels"]["alertname"] == "IbfabLinkCritical"
    assert _link(alert) == ("leaf-01", "1", "cn0001 mlx5_0", "1")
    assert alert["labels"]["a_guid"] == rig.names["leaf-01"] and alert["labels"]["severity"] == "critical"
    notes = alert["annotations"]
    assert notes["ends"] == "leaf-01:1 <-> cn0001 mlx5_0:1"
    assert notes["reason"].startswith("symbol errors: 500 in the last")
    assert notes["action"].startswith("Clean and reseat both ends")
    assert "`ibfab health --since 15s`" in notes["description"]
    assert took < FIRE_WITHIN_S

    # healed: no new errors; once they leave the 15 s window the link is no longer critical
    resolved = rig.until("the alert resolves", lambda: rig.alerts() == [], RESOLVE_WITHIN_S)
    assert resolved < RESOLVE_WITHIN_S


@pytest.mark.lab
@pytest.mark.slow
def test_every_rule_evaluates_without_error(rig: Rig) -> None:
    groups = get_json(f"{rig.api}/api/v1/rules")["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert len(rules) == len(alert_rules().alerts) + len(alert_rules().recording)
    assert [(r["name"], r["lastError"]) for r in rules if r["health"] != "ok"] == []


@pytest.mark.lab
@pytest.mark.slow
def test_every_dashboard_query_runs_against_the_real_prometheus(rig: Rig) -> None:
    results = {}
    for expr in dashboard_queries(grafana_dashboard()):
        q = urllib.parse.urlencode({"query": with_sample_variables(expr)})
        body = get_json(f"{rig.api}/api/v1/query?{q}")
        assert body["status"] == "success", (expr, body)
        results[expr] = body["data"]["result"]
    # the lab's data reach the panels: statuses of all 8 links, leaf x spine cells for both leaves
    [by_status] = [r for e, r in results.items() if e.startswith("sum by (status)")]
    assert sum(float(s["value"][1]) for s in by_status) == 8
    [grid] = [r for e, r in results.items() if "leaf, spine" in e]
    assert sorted((s["metric"]["leaf"], s["metric"]["spine"]) for s in grid) == [
        ("leaf-01", "spine-01"),
        ("leaf-02", "spine-01"),
    ]
