"""The Prometheus exporter: a real lab's counters through the store to /metrics, promtool and a real
Prometheus server; a missing or empty store still answers 200 with the error gauge."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.app.exports.metrics import DEFAULT_WINDOW_S, ExporterView, read_view
from fabric.app.health.assess import node_names
from fabric.app.health.collect import Collector
from fabric.app.session import Session, open_session
from fabric.app.source import Source
from fabric.cli.main import main
from fabric.core.fields import COUNTER_NAMES
from fabric.exports.prometheus import (
    COUNTER_METRICS,
    ERROR_REASONS,
    STICKY,
    counter_metric_name,
    port_families,
)
from fabric.lab import simulator as lab
from fabric.serve.exporter import parse_listen, serve
from fabric.store import PortCounterRow, Store
from tests.conftest import REALDATA
from tests.servers import free_port
from topology.errors import UsageError
from topology.ibnetdiscover import read_ibnetdiscover

LAB = "exporter"
SPEC = "leafspine:leaves=2,spines=1,hosts=2"  # leaf-0N ports 1-2 to hosts, 3-4 to spine-01
INJECTED = 120  # symbol errors planted on leaf-01 port 1 (to cn0001 mlx5_0) between two snapshots
Labels = frozenset[tuple[str, str]]


def _get(url: str, timeout: float = 10.0) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return int(resp.status), resp.read().decode()


def _samples(text: str) -> dict[str, dict[Labels, float]]:
    """Series name -> {label set: value}, parsed with prometheus-client's own text parser."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, dict[Labels, float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return out


def _one(series: dict[Labels, float], **want: str) -> tuple[dict[str, str], float]:
    hits = [(dict(k), v) for k, v in series.items() if all(dict(k).get(n) == x for n, x in want.items())]
    assert len(hits) == 1, (want, hits)
    return hits[0]


@dataclass(frozen=True)
class Served:
    db: Path
    url: str
    text: str
    names: dict[str, str]  # node name -> GUID
    snapshot_id: int
    taken_at: float


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A lab, two counter snapshots with errors planted in between, and `ibfab exporter` on it."""
    root = tmp_path_factory.mktemp("exporter")
    db = root / "ibfab.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IBFAB_LAB_DIR", str(root / "labs"))
        mp.setenv("IBFAB_DATA_DIR", str(root / "data"))
        lab.up(SPEC, name=LAB)
        try:
            with Store.open(db) as store:
                collector = Collector(store, Session(Source.lab(LAB)))
                collector.collect_once()
                lab.set_counter(LAB, "leaf-01", 1, "SymbolErrorCounter", INJECTED)
                lab.set_counter(LAB, "leaf-02", 3, "SymbolErrorCounter", 70000)  # ibsim clamps: 65535
                outcome = collector.collect_once()
                names = {name: guid for guid, name in node_names(store.load_topology().fabric).items()}
        finally:
            lab.down(LAB)
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    argv = [sys.executable, "-c", "from fabric.cli import main; main()", "exporter"]
    argv += ["--listen", f"127.0.0.1:{port}", "--db", str(db), "--refresh", "1s"]
    log = (root / "exporter.err").open("w")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, text = _get(url)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"exporter did not answer: {(root / 'exporter.err').read_text()}")
                time.sleep(0.1)
        assert status == 200
        yield Served(db, url, text, names, outcome.snapshot_id, outcome.taken_at)
    finally:
        proc.terminate()  # SIGTERM: the exporter leaves its loop and closes the socket
        assert proc.wait(timeout=10) == 0
        log.close()


@pytest.mark.lab
def test_injected_symbol_errors_with_treydock_names_and_far_end_labels(served: Served) -> None:
    s = _samples(served.text)
    leaf1, cn1 = served.names["leaf-01"], served.names["cn0001 mlx5_0"]
    labels, value = _one(s["infiniband_switch_port_symbol_error_total"], guid=leaf1, port="1")
    assert value == INJECTED
    assert labels == {
        "guid": leaf1,
        "port": "1",
        "switch": "leaf-01",
        "remote_guid": cn1,
        "remote_port": "1",
        "remote_name": "cn0001 mlx5_0",
    }
    # the HCA end of the same cable is an hca series, pointing back at the switch
    labels, value = _one(s["infiniband_hca_port_symbol_error_total"], guid=cn1, port="1")
    assert value == 0 and labels["hca"] == "cn0001 mlx5_0" and labels["remote_name"] == "leaf-01"
    assert labels["remote_guid"] == leaf1 and labels["remote_port"] == "1"
    # every cabled port of the lab (3 switches x 4 + 4 HCAs), every counter, for its own kind only
    for name in COUNTER_NAMES:
        assert len(s[counter_metric_name("switch", name)]) == 12, name
        assert len(s[counter_metric_name("hca", name)]) == 4, name
    assert {dict(k)["guid"] for k in s["infiniband_hca_port_receive_packets_total"]} == {
        served.names[f"cn000{i} mlx5_0"] for i in range(1, 5)
    }


@pytest.mark.lab
def test_data_counters_are_words_times_four_and_packets_unscaled(served: Served) -> None:
    s = _samples(served.text)
    with Store.open(served.db, create=False) as store:
        rows = {(r.guid, r.port): r.counters for r in store.load_port_counters(served.snapshot_id)}
    assert len(rows) == 16
    for (guid, port), counters in rows.items():
        kind = "switch" if guid.startswith("0x0c42") else "hca"  # lab switch / HCA GUID prefixes
        for name in ("xmit_data", "rcv_data", "xmit_pkts", "rcv_pkts"):
            _, value = _one(s[counter_metric_name(kind, name)], guid=guid, port=str(port))
            scale = 4 if name.endswith("_data") else 1
            assert value == counters[name] * scale, (guid, port, name)
    # discovery MADs crossed every cable, so the check above compared non-zero values
    _, sent = _one(
        s["infiniband_switch_port_transmit_data_bytes_total"], guid=served.names["leaf-01"], port="1"
    )
    assert sent > 0 and sent % 4 == 0


@pytest.mark.lab
def test_saturated_counter_has_its_gauge_and_others_none(served: Served) -> None:
    s = _samples(served.text)
    leaf2, spine = served.names["leaf-02"], served.names["spine-01"]
    _, value = _one(s["infiniband_switch_port_symbol_error_total"], guid=leaf2, port="3")
    assert value == 65535  # 70000 was asked for; the 16-bit counter stops there
    [(labels, flag)] = [(dict(k), v) for k, v in s["infiniband_port_saturated"].items()]
    assert flag == 1
    assert labels == {
        "guid": leaf2,
        "port": "3",
        "kind": "switch",
        "name": "leaf-02",
        "remote_guid": spine,
        "remote_port": "3",  # leaf-02's first uplink lands on spine-01 port 3
        "remote_name": "spine-01",
        "counter": "symbol_error",
    }


@pytest.mark.lab
def test_link_health_score_status_ber_and_flaps(served: Served) -> None:
    s = _samples(served.text)
    leaf1, cn1 = served.names["leaf-01"], served.names["cn0001 mlx5_0"]
    # a = the lower end of the cable (topology.model.Link): the switch GUID 0x0c42... < 0x1070...
    bad = {"a_guid": leaf1, "a_port": "1", "a_name": "leaf-01", "b_guid": cn1, "b_port": "1"}
    labels, score = _one(s["ibfab_link_health_score"], **bad)
    assert labels["b_name"] == "cn0001 mlx5_0"
    assert score < 40  # 120 symbol errors within about a second of 200 Gb/s: far over budget
    statuses = {
        dict(k)["status"]: v
        for k, v in s["ibfab_link_status"].items()
        if all(dict(k)[n] == x for n, x in bad.items())
    }
    assert statuses == {"ok": 0, "watch": 0, "warn": 0, "critical": 1}
    _, ber = _one(s["ibfab_link_ber"], **bad)
    _, upper = _one(s["ibfab_link_ber_upper"], **bad)
    assert 1e-12 < ber < upper  # 120 errors in ~1e11 bits
    _, flaps = _one(s["ibfab_link_flaps_per_hour"], **bad)
    assert flaps == 0
    # every cable of the lab has a score; the untouched host cables are healthy-or-uncertified
    assert len(s["ibfab_link_health_score"]) == 8
    assert sum(v for k, v in s["ibfab_link_status"].items()) == 8  # exactly one status per link
    _, clean = _one(s["ibfab_link_health_score"], a_guid=served.names["leaf-02"], a_port="1")
    assert clean > score
    # what the alert annotations read: the reasons of links that are not ok, in health's order
    reasons = sorted(
        (v, dict(k)["kind"], dict(k)["reason"])
        for k, v in s["ibfab_link_reason"].items()
        if all(dict(k)[n] == x for n, x in bad.items())
    )
    assert reasons[0][:2] == (1, "ber") and reasons[0][2].startswith("symbol errors: 120 in the last")
    assert [v for v, _, _ in reasons] == list(range(1, len(reasons) + 1))
    not_ok = {
        tuple(dict(k)[n] for n in ("a_guid", "a_port"))
        for k, v in s["ibfab_link_status"].items()
        if v == 1 and dict(k)["status"] != "ok"
    }
    assert {tuple(dict(k)[n] for n in ("a_guid", "a_port")) for k in s["ibfab_link_reason"]} == not_ok
    _, downs = _one(s["ibfab_link_downs"], **bad)
    _, offences = _one(s["ibfab_link_repeat_offences"], **bad)
    assert downs == 0 and offences == 1  # today, as the link is critical now
    _, sample = _one(s["ibfab_link_ber_sample_size"], **bad)
    assert sample == pytest.approx(120 / ber)
    [(_, window)] = s["ibfab_health_window_seconds"].items()
    assert window == DEFAULT_WINDOW_S  # the --window the assessment was asked for


@pytest.mark.lab
def test_exporter_metadata(served: Served) -> None:
    s = _samples(served.text)
    assert s["ibfab_exporter_up"] == {frozenset(): 1.0}
    assert {dict(k)["reason"]: v for k, v in s["ibfab_exporter_error"].items()} == dict.fromkeys(
        ERROR_REASONS, 0.0
    )
    assert s["ibfab_exporter_last_snapshot_timestamp_seconds"][frozenset()] == served.taken_at
    assert s["ibfab_exporter_ports_unreachable"][frozenset()] == 0
    assert s["ibfab_exporter_ports_unknown"][frozenset()] == 0
    assert 0 <= s["ibfab_exporter_scrape_duration_seconds"][frozenset()] < 1
    refreshed = s["ibfab_exporter_last_refresh_timestamp_seconds"][frozenset()]
    assert served.taken_at <= refreshed <= time.time()


@pytest.mark.lab
def test_gzip_scrape_is_the_same_exposition_and_other_paths_are_404(served: Served) -> None:
    import gzip
    import urllib.error

    req = urllib.request.Request(served.url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.headers["Content-Encoding"] == "gzip"
        assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        body = resp.read()
    plain = _samples(served.text)
    unzipped = _samples(gzip.decompress(body).decode())  # two gzip members, one stream
    volatile = {n for n in plain if n.startswith("ibfab_exporter_") and n.endswith("_seconds")}
    assert {n: v for n, v in unzipped.items() if n not in volatile} == {
        n: v for n, v in plain.items() if n not in volatile
    }
    assert len(body) * 5 < len(served.text)
    with pytest.raises(urllib.error.HTTPError) as err:
        _get(served.url.replace("/metrics", "/favicon.ico"))
    assert err.value.code == 404


@pytest.mark.lab
def test_promtool_accepts_the_exposition(served: Served) -> None:
    res = subprocess.run(
        ["promtool", "check", "metrics"], input=served.text, capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == "" and res.stderr == ""  # not even a lint warning


@pytest.mark.lab
@pytest.mark.slow
def test_real_prometheus_scrapes_the_injected_value(served: Served, tmp_path: Path) -> None:
    port = free_port()
    target = urllib.parse.urlsplit(served.url).netloc
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"scrape_configs:\n  - job_name: ibfab\n    static_configs:\n      - targets: ['{target}']\n"
    )
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            shutil.which("prometheus") or "prometheus",
            f"--config.file={config}",
            f"--web.listen-address=127.0.0.1:{port}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )

    def query(expr: str) -> list[dict[str, object]]:
        q = urllib.parse.urlencode({"query": expr})
        _, body = _get(f"http://127.0.0.1:{port}/api/v1/query?{q}", timeout=5)
        result: list[dict[str, object]] = json.loads(body)["data"]["result"]
        return result

    leaf1 = served.names["leaf-01"]
    expr = f'infiniband_switch_port_symbol_error_total{{guid="{leaf1}",port="1"}}'
    try:
        deadline = time.monotonic() + 30
        found: list[dict[str, object]] = []
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                found = query(expr)
            except OSError:
                found = []
            if found:
                break
            time.sleep(0.5)
        assert found, (
            f"Prometheus never stored the series: {(tmp_path / 'prometheus.log').read_text()[-2000:]}"
        )
        [series] = found
        value = series["value"]
        assert isinstance(value, list) and float(value[1]) == INJECTED
        assert series["metric"] == {
            "__name__": "infiniband_switch_port_symbol_error_total",
            "guid": leaf1,
            "port": "1",
            "switch": "leaf-01",
            "remote_guid": served.names["cn0001 mlx5_0"],
            "remote_port": "1",
            "remote_name": "cn0001 mlx5_0",
            "instance": target,
            "job": "ibfab",
        }
        [up] = query('up{job="ibfab"}')
        up_value = up["value"]
        assert isinstance(up_value, list) and up_value[1] == "1"
        [sat] = query("infiniband_port_saturated == 1")
        assert isinstance(sat["metric"], dict) and sat["metric"]["counter"] == "symbol_error"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.mark.lab
def test_store_error_keeps_serving_the_previous_view(served: Served, tmp_path: Path) -> None:
    good = read_view(open_session(db=served.db))
    assert good.status.errors == frozenset() and good.key is not None and good.text
    assert read_view(open_session(db=served.db), previous=good) is not good  # restamped ...
    assert read_view(open_session(db=served.db), previous=good).text is good.text  # ... but not rebuilt
    garbage = tmp_path / "ibfab.db"
    garbage.write_bytes(b"this is not sqlite" * 100)
    bad = read_view(open_session(db=garbage), previous=good)
    assert bad.status.errors == frozenset({"store_error"}) and "not an SQLite database" in bad.status.message
    assert bad.text is good.text and bad.key is None  # the next good read rebuilds
    assert bad.status.last_snapshot_time == served.taken_at


# -- without a lab ---------------------------------------------------------------------------------
def _serve_in_thread(db: Path) -> Iterator[str]:
    stop = threading.Event()
    ready: list[str] = []
    lines: list[str] = []
    thread = threading.Thread(
        target=serve,
        args=("127.0.0.1:0", open_session(db=db)),
        kwargs={"refresh_s": 0.2, "log": lines.append, "stop": stop, "ready": ready.append},
        daemon=True,
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not ready and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ready, lines
    try:
        yield ready[0]
    finally:
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive()


def _errors(text: str) -> dict[str, float]:
    return {dict(k)["reason"]: v for k, v in _samples(text)["ibfab_exporter_error"].items()}


def test_missing_store_answers_200_with_the_error_gauge(tmp_path: Path) -> None:
    db = tmp_path / "nothing" / "ibfab.db"
    for url in _serve_in_thread(db):
        status, text = _get(url)
        assert status == 200
        s = _samples(text)
        assert s["ibfab_exporter_up"] == {frozenset(): 0.0}
        assert _errors(text) == {**dict.fromkeys(ERROR_REASONS, 0.0), "store_missing": 1.0}
        assert not any(name.startswith("infiniband_") or name.startswith("ibfab_link") for name in s)
        assert "ibfab_exporter_last_snapshot_timestamp_seconds" not in s
    assert not db.exists() and not db.parent.exists()  # the exporter never creates a store


def test_empty_store_answers_200_then_serves_once_counters_land(tmp_path: Path) -> None:
    db = tmp_path / "ibfab.db"
    Store.open(db).close()
    fabric = read_ibnetdiscover(REALDATA / "ibnetdiscover" / _SMALL)
    for url in _serve_in_thread(db):
        status, text = _get(url)
        assert status == 200
        assert _errors(text)["no_topology"] == 1 and _errors(text)["no_counters"] == 1
        with Store.open(db) as store:
            topology_id = store.save_topology(fabric, "", tool="ibnetdiscover", source="test")
        time.sleep(0.6)  # three refreshes
        _, text = _get(url)
        assert _errors(text) == {**dict.fromkeys(ERROR_REASONS, 0.0), "no_counters": 1.0}
        link = fabric.links[0]
        with Store.open(db) as store:
            store.save_counter_snapshot(
                1000.0,
                "test",
                topology_id,
                [
                    PortCounterRow(1000.0, link.a.guid, link.a.port, counters={"symbol_errors": 7}),
                    PortCounterRow(1000.0, link.b.guid, link.b.port, reachable=False),
                ],
            )
        deadline = time.monotonic() + 5
        while _samples(text)["ibfab_exporter_up"][frozenset()] != 1 and time.monotonic() < deadline:
            time.sleep(0.1)
            _, text = _get(url)
        s = _samples(text)
        assert s["ibfab_exporter_up"][frozenset()] == 1
        assert s["ibfab_exporter_ports_unreachable"][frozenset()] == 1
        kind = "switch" if fabric.nodes[link.a.guid].kind.value == "switch" else "hca"
        _, value = _one(
            s[counter_metric_name(kind, "symbol_errors")], guid=link.a.guid, port=str(link.a.port)
        )
        assert value == 7


# the smallest real capture with a switch and a host (read in place, never copied)
_SMALL = "junousi-manpage-2007-voltaire-non-chassis-grouping.txt"


def test_port_families_count_unreachable_and_unknown_ports() -> None:
    fabric = read_ibnetdiscover(REALDATA / "ibnetdiscover" / _SMALL)
    link = next(lk for lk in fabric.links if fabric.nodes[lk.a.guid].kind.value == "switch")
    names = node_names(fabric)
    sticky_max = {name: (1 << 16) - 1 for name in STICKY if name in ("symbol_errors", "rcv_errors")}
    rows = [
        PortCounterRow(
            1.0,
            link.a.guid,
            link.a.port,
            peer_guid=link.b.guid,
            peer_port=link.b.port,
            counters={**sticky_max, "xmit_data": 2**62, "link_downed": 3},
        ),
        PortCounterRow(1.0, link.b.guid, link.b.port, reachable=False, unreachable_reason="timeout"),
        PortCounterRow(1.0, "0x00000000deadbeef", 1, counters={"symbol_errors": 1}),
    ]
    built = port_families(fabric, names, rows)
    assert (built.unreachable, built.unknown) == (1, 1)
    by_name = {f.name: f for f in built.families}
    assert len(by_name) == 2 * len(COUNTER_METRICS) + 1
    sent = by_name["infiniband_switch_port_transmit_data_bytes"].samples
    assert [s.value for s in sent] == [float(2**64)]  # 4 x 2**62 words
    saturated = by_name["infiniband_port_saturated"].samples
    assert sorted(s.labels["counter"] for s in saturated) == ["receive_errors", "symbol_error"]
    assert {s.labels["remote_name"] for s in saturated} == {names[link.b.guid]}
    assert [s.value for s in by_name["infiniband_switch_port_link_downed"].samples] == [3.0]


@pytest.mark.parametrize(
    ("text", "want"),
    [("127.0.0.1:9315", ("127.0.0.1", 9315)), ("9400", ("127.0.0.1", 9400)), ("[::1]:0", ("::1", 0))],
)
def test_parse_listen(text: str, want: tuple[str, int]) -> None:
    assert parse_listen(text) == want


@pytest.mark.parametrize("text", [":9315", "localhost", "127.0.0.1:99999", "127.0.0.1:http"])
def test_parse_listen_refuses(text: str) -> None:
    with pytest.raises(UsageError, match="--listen"):
        parse_listen(text)


def test_port_in_use_is_a_one_line_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = CliRunner().invoke(
            main, ["exporter", "--listen", f"127.0.0.1:{port}", "--db", str(tmp_path / "x.db")]
        )
    assert res.exit_code == 2
    assert res.output == (
        f"ibfab: error: --listen 127.0.0.1:{port}: address already in use (another exporter running?)\n"
    )


def test_bad_refresh_is_a_usage_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["exporter", "--refresh", "soon", "--db", str(tmp_path / "x.db")])
    assert res.exit_code == 2 and "--refresh 'soon'" in res.output


def test_view_of_a_missing_store_is_not_an_exception(tmp_path: Path) -> None:
    view: ExporterView = read_view(open_session(db=tmp_path / "absent.db"))
    assert view.status.errors == frozenset({"store_missing"}) and view.text == b""
    assert os.listdir(tmp_path) == []
