"""``ibfab exporter``: the store's latest port counters and link health, served to Prometheus.

>>> serve("127.0.0.1:9315", default_db_path(), refresh_s=30, window_s=7200)   # doctest: +SKIP

What is served, names and labels, is documented in :mod:`fabric.exports.prometheus`.

DECISION: a cached view, rebuilt every ``--refresh`` seconds by the exporter's own loop and kept
*rendered* (text, and gzip), rather than a Collector that reads the store on every scrape. Why:

* The store changes only when a collection lands (every few minutes); scrapes come every 15-60 s
  and often from two Prometheus servers (an HA pair). Reading per scrape repeats identical work.
* Link health runs ``fabric.health.assess`` over the ``--window`` of snapshots: seconds of CPU on a
  large fabric. Done per scrape it would sit inside Prometheus' scrape timeout (10 s by default)
  and grow with the number of scrapers; done in the loop, a scrape only serialises ready-made
  families, in constant time whatever the store holds.
* Rendering is itself the expensive part on a large fabric: 17 counters x every port with six
  labels. Measured on a 4,096-port fabric (superpod-4su, 2-core machine under load): building the
  families 0.3-0.5 s, prometheus-client's text writer 1.4-2.7 s for 18.5 MB, gzip 0.3 s to 0.56 MB;
  a scrape of the kept view takes 0.5 ms (gzip) / 30 ms (plain). At 50,000 ports, rendering per
  scrape would take 20-30 s and miss the scrape timeout.
* A refresh whose (latest topology id, latest counter snapshot id) have not changed reuses the
  previous view, so an idle store costs two small SELECTs per refresh.

The price is that a new snapshot shows up to ``--refresh`` seconds late; the
``ibfab_exporter_last_snapshot_timestamp_seconds`` gauge tells how old the data is.

The endpoint never fails: a missing or empty store, an unreadable one or a health computation
that raises all give a 200 with ``ibfab_exporter_up 0`` and ``ibfab_exporter_error{reason=...} 1``
and whatever could still be read. When the store is busy or unreadable for one refresh, the
previous view keeps being served (flagged ``store_error``) rather than leaving a gap in every
graph. The store is opened read-only in spirit (``create=False``): the exporter never makes one.
"""

from __future__ import annotations

import errno
import gzip
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabric.app.metrics import DEFAULT_WINDOW_S, ExporterView, failed_view, read_view
from fabric.exports.prometheus import ExporterStatus, exporter_families, render
from fabric.store import default_db_path
from topology.errors import UsageError

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from fabric.health import HealthThresholds

DEFAULT_LISTEN = "127.0.0.1:9315"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DEFAULT_REFRESH_S = 30.0


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9315`` for IPv6) or a bare ``PORT`` on 127.0.0.1.

    >>> parse_listen("127.0.0.1:9315"), parse_listen("9316"), parse_listen("[::1]:9317")
    (('127.0.0.1', 9315), ('127.0.0.1', 9316), ('::1', 9317))
    """
    raw = text.strip()
    host, port_text = "127.0.0.1", raw
    if ":" in raw:
        host, _, port_text = raw.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not host:
            raise UsageError(
                f"--listen {text!r}: give an address (0.0.0.0:PORT to listen on every interface)"
            )
    if not port_text.isdigit() or int(port_text) > 65535:
        raise UsageError(f"--listen {text!r}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
    return host, int(port_text)


# -- serving ----------------------------------------------------------------------------------------
class Exporter:
    """The latest view, rebuilt by :meth:`refresh`, served by :meth:`__call__` (a WSGI app)."""

    def __init__(
        self,
        db_path: Path,
        window_s: float = DEFAULT_WINDOW_S,
        log: Callable[[str], None] = print,
        thresholds: HealthThresholds | None = None,
    ):
        self.db_path = db_path
        self.window_s = window_s
        self.log = log
        self.thresholds = thresholds
        self.view = ExporterView(
            b"", ExporterStatus(errors=frozenset({"store_error"}), message="store not read yet")
        )
        self._refreshed = False

    def refresh(self) -> ExporterView:
        """Read the store again (never raises: any failure becomes a ``store_error`` view)."""
        before = self.view
        try:
            view = read_view(
                self.db_path, window_s=self.window_s, previous=before, thresholds=self.thresholds
            )
        except Exception as exc:  # one bad refresh must not stop the exporter
            view = failed_view("store_error", f"{self.db_path}: {type(exc).__name__}: {exc}", before)
        if not self._refreshed or view.status.message != before.status.message or view.key != before.key:
            self.log(_describe(view))
        self.view = view  # one reference swap: scrapes see the old or the new view, never a mix
        self._refreshed = True
        return view

    def metrics(self, compressed: bool = False) -> bytes:
        """One scrape's body: the view's rendered text plus the exporter's own families.

        Compressed, it is two gzip members back to back (the view's, made once per refresh, and
        this scrape's): RFC 1952 allows it and Prometheus' reader, like gzip(1), reads them all.
        """
        started = time.perf_counter()
        view = self.view
        own = render(exporter_families(view.status, time.perf_counter() - started))
        if compressed:
            return view.gzipped + gzip.compress(own, 6)
        return view.text + own

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        if environ.get("PATH_INFO", "/") not in ("/", "/metrics"):
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"ibfab exporter: metrics are at /metrics\n"]
        compressed = "gzip" in environ.get("HTTP_ACCEPT_ENCODING", "")
        body = self.metrics(compressed)
        headers = [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))]
        if compressed:
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [b"" if environ.get("REQUEST_METHOD") == "HEAD" else body]


def _describe(view: ExporterView) -> str:
    s = view.status
    if s.errors and s.message:
        return f"store: {', '.join(sorted(s.errors))}: {s.message}"
    if view.key is None:
        return "store: nothing to serve"
    return (
        f"serving topology {view.key[0]} and counter snapshot {view.key[1]}"
        f" ({s.ports_unreachable} ports unreachable, {s.ports_unknown} on unknown nodes)"
    )


def _bind(host: str, port: int, app: Exporter) -> WSGIServer:
    """A threading WSGI server listening on host:port (UsageError when it cannot)."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from prometheus_client.exposition import ThreadingWSGIServer

    where = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as exc:
        raise UsageError(f"--listen {where}: unknown address ({exc.strerror})") from exc

    class _Server(ThreadingWSGIServer):
        address_family = family

    class _Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass  # Prometheus scrapes every few seconds: one log line each would drown the rest

    try:
        return make_server(host, port, app, _Server, handler_class=_Quiet)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"--listen {where}: address already in use (another exporter running?)") from exc
        raise UsageError(f"--listen {where}: cannot listen: {exc.strerror or exc}") from exc


def serve(
    listen: str,
    db_path: Path | None = None,
    *,
    refresh_s: float = DEFAULT_REFRESH_S,
    window_s: float = DEFAULT_WINDOW_S,
    log: Callable[[str], None] = print,
    stop: threading.Event | None = None,
    ready: Callable[[str], None] | None = None,
    thresholds: HealthThresholds | None = None,
) -> None:
    """Serve ``/metrics`` on ``listen`` until ``stop`` is set; the store is read every ``refresh_s``.

    Binds first (so a busy port fails at once), reads the store once, then answers scrapes.
    ``ready`` gets the URL once scrapes are answered (port 0 picks a free port).
    """
    host, port = parse_listen(listen)
    exporter = Exporter(db_path if db_path is not None else default_db_path(), window_s, log, thresholds)
    server = _bind(host, port, exporter)
    stop = stop if stop is not None else threading.Event()
    thread: threading.Thread | None = None
    try:
        exporter.refresh()
        thread = threading.Thread(target=server.serve_forever, name="ibfab-exporter-http", daemon=True)
        thread.start()
        shown = host if ":" not in host else f"[{host}]"
        url = f"http://{shown}:{server.server_port}/metrics"
        log(f"listening on {url}, reading {exporter.db_path} every {refresh_s:g} s")
        if ready is not None:
            ready(url)
        while not stop.wait(refresh_s):
            exporter.refresh()
    finally:
        if thread is not None:
            server.shutdown()
            thread.join(timeout=5)
        server.server_close()


__all__ = (
    "DEFAULT_LISTEN",
    "DEFAULT_REFRESH_S",
    "DEFAULT_WINDOW_S",
    "Exporter",
    "ExporterView",
    "parse_listen",
    "read_view",
    "serve",
)
