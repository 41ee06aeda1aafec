"""Prometheus as a source: a real Prometheus scrapes ``ibfab exporter`` over a lab fabric with
injected errors, and ``ibfab health --prometheus URL`` flags the same links as health from the
store, with the same error counts (and a clean fabric flags nothing either way). Scrape interval
1 s, exporter refresh 1 s; the test stops only the PIDs it started."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fabric.app.health.assess import assess_store, node_names
from fabric.app.health.collect import Collector
from fabric.app.health.prometheus import assess_prometheus
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.cli import main
from fabric.health import HealthReport, Status
from fabric.lab import simulator as lab
from fabric.store import Store
from tests.conftest import REALDATA
from tests.servers import free_port, get_json, stop_process
from topology.model import Fabric, LinkKey

LAB = "promsrc"
SPEC = "leafspine:leaves=2,spines=1,hosts=2"


@dataclass
class Rig:
    db: Path
    store: Store
    collector: Collector
    api: str
    fabric: Fabric
    guid_of: dict[str, str]  # node name -> GUID

    def query(self, promql: str) -> list[dict[str, Any]]:
        url = f"{self.api}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        result: list[dict[str, Any]] = get_json(url)["data"]["result"]
        return result

    def wait_for(self, what: str, promql: str, value: float, within: float = 30.0) -> None:
        """Collect and poll until Prometheus holds ``value`` for ``promql`` (the exporter served it)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            got = self.query(promql)
            if got and float(got[0]["value"][1]) == value:
                return
            self.collector.collect_once()
            time.sleep(0.5)
        pytest.fail(f"{what}: Prometheus did not get {value} for {promql} within {within:g} s")


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    root = tmp_path_factory.mktemp("promsrc")
    db = root / "ibfab.db"
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
                fabric = store.load_topology().fabric
                argv = [sys.executable, "-c", "from fabric.cli import main; main()", "exporter"]
                argv += ["--listen", f"127.0.0.1:{exporter_port}", "--db", str(db), "--refresh", "1s"]
                started.append(
                    subprocess.Popen(
                        argv, stdout=subprocess.DEVNULL, stderr=(root / "exporter.log").open("w")
                    )
                )
                config = root / "prometheus.yml"
                config.write_text(
                    "global:\n  scrape_interval: 1s\n"
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
                guid_of = {name: guid for guid, name in node_names(fabric).items()}
                r = Rig(db, store, collector, api, fabric, guid_of)
                deadline = time.monotonic() + 60
                while True:
                    try:
                        up = r.query("ibfab_exporter_up")
                        if up and up[0]["value"][1] == "1":
                            break
                    except OSError:
                        pass
                    if time.monotonic() > deadline:
                        pytest.fail(
                            "Prometheus does not scrape the exporter: "
                            + (root / "prometheus.log").read_text()[-800:]
                        )
                    time.sleep(0.5)
                yield r
        finally:
            for proc in reversed(started):
                stop_process(proc)
            lab.down(LAB)


def _flagged(report: HealthReport) -> dict[LinkKey, tuple[Status, int, int]]:
    """Links at warn or worse: (status, symbol errors, link downs)."""
    return {
        link.key: (link.status, link.ber.errors, link.downs)
        for link in report.links
        if link.status.rank >= Status.WARN.rank
    }


def _both(rig: Rig, start: float, end: float) -> tuple[HealthReport, HealthReport]:
    from_store = assess_store(rig.store, since_s=end - start, now=end, record=False).report
    from_prometheus = assess_prometheus(rig.api, rig.fabric, since_s=end - start, now=end, step_s=1.0).report
    return from_store, from_prometheus


def _link_at(rig: Rig, switch: str, port: int) -> LinkKey:
    guid = rig.guid_of[switch]
    (link,) = [
        lk
        for lk in rig.fabric.links
        if (lk.a.guid, lk.a.port) == (guid, port) or (lk.b.guid, lk.b.port) == (guid, port)
    ]
    return link.key


@pytest.mark.lab
@pytest.mark.slow
def test_prometheus_flags_the_same_links_as_the_store(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IBFAB_LAB_DIR", str(rig.db.parent / "labs"))
    start = time.time()
    for _ in range(4):  # a clean stretch: nothing flagged either way
        rig.collector.collect_once()
        time.sleep(0.5)
    time.sleep(2.5)  # the exporter refreshed and Prometheus scraped the last of them
    clean = _both(rig, start, time.time())
    assert _flagged(clean[0]) == {} and _flagged(clean[1]) == {}

    noisy, flapping = _link_at(rig, "leaf-01", 1), _link_at(rig, "leaf-02", 2)
    leaf1, leaf2 = rig.guid_of["leaf-01"], rig.guid_of["leaf-02"]
    for value in (200, 500):
        lab.set_counter(LAB, "leaf-01", 1, "SymbolErrorCounter", value)
        rig.wait_for(
            "symbol errors", f'infiniband_switch_port_symbol_error_total{{guid="{leaf1}",port="1"}}', value
        )
    for value in (1, 2, 3):
        lab.set_counter(LAB, "leaf-02", 2, "LinkDownedCounter", value)
        rig.wait_for(
            "link downs", f'infiniband_switch_port_link_downed_total{{guid="{leaf2}",port="2"}}', value
        )
    for _ in range(3):
        rig.collector.collect_once()
        time.sleep(0.5)
    time.sleep(2.5)
    end = time.time()
    from_store, from_prometheus = _both(rig, start, end)
    store_flags, prom_flags = _flagged(from_store), _flagged(from_prometheus)
    assert set(store_flags) == {noisy, flapping}
    assert prom_flags == store_flags  # the same links, statuses, error counts and downs
    assert store_flags[noisy][1] == 500 and store_flags[flapping][2] == 3

    res = CliRunner().invoke(
        main,
        [
            "health",
            "--prometheus",
            rig.api,
            "--since",
            f"{end - start + 5:.0f}s",
            "--db",
            str(rig.db),
            "--step",
            "1s",
            "--json",
        ],
    )
    assert res.exit_code in (0, 1), res.output
    flagged = {
        (tuple(link["a"].values()), tuple(link["b"].values()))
        for link in json.loads(res.stdout)["links"]
        if link["status"] in ("warn", "critical")
    }
    assert len(flagged) == 2


def test_an_unreachable_prometheus_is_a_one_line_error(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    capture = REALDATA / "ibnetdiscover" / "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt"
    res = CliRunner().invoke(
        main,
        ["health", "--prometheus", f"http://127.0.0.1:{port}", "--topology", str(capture), "--since", "1h"],
    )
    assert res.exit_code == 7 and res.stderr.count("\n") == 1
    assert f"cannot reach Prometheus at http://127.0.0.1:{port}" in res.stderr
    res = CliRunner().invoke(main, ["health", "--prometheus", "ftp://x", "--topology", str(capture)])
    assert res.exit_code == 2 and "http://" in res.stderr
