"""``ibfab exporter``: the store's latest port counters and link health, served to Prometheus.

>>> serve("127.0.0.1:9315", session, refresh_s=30, window_s=7200)   # doctest: +SKIP

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

Serving is :mod:`fabric.serve.http`: one thread, a cap on connections, timeouts on reading a
request and sending a response, GET and HEAD only, and the rendered page shared by every scrape of
a refresh (sent from the view's own bytes, never copied per request).
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from fabric.app.exports.metrics import (
    DEFAULT_WINDOW_S,
    ExporterView,
    exporter_page,
    failed_view,
    read_view,
    unread_view,
)
from fabric.serve.http import HttpServer, Limits, Request, Response
from topology.errors import UsageError

if TYPE_CHECKING:
    from fabric.app.session import Session

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
    """The latest view, rebuilt by :meth:`refresh`, served by :meth:`respond`."""

    def __init__(
        self, session: Session, window_s: float = DEFAULT_WINDOW_S, log: Callable[[str], None] = print
    ):
        self.session = session  # the exporter's one session: its store and thresholds
        self.db_path = session.store.path
        self.window_s = window_s
        self.log = log
        self.view = unread_view()
        self._refreshed = False

    def refresh(self) -> ExporterView:
        """Read the store again (never raises: any failure becomes a ``store_error`` view)."""
        before = self.view
        try:
            view = read_view(self.session, window_s=self.window_s, previous=before)
        except Exception as exc:  # one bad refresh must not stop the exporter
            view = failed_view("store_error", f"{self.db_path}: {type(exc).__name__}: {exc}", before)
        if not self._refreshed or view.status.message != before.status.message or view.key != before.key:
            self.log(_describe(view))
        self.view = view  # one reference swap: scrapes see the old or the new view, never a mix
        self._refreshed = True
        return view

    def page(self, compressed: bool = False) -> tuple[bytes, ...]:
        """One scrape's body as chunks: the view's rendered text (the very bytes every scrape of
        this refresh shares, never copied) and this scrape's own exporter families.

        Compressed, it is two gzip members back to back (the view's, made once per refresh, and
        this scrape's): RFC 1952 allows it and Prometheus' reader, like gzip(1), reads them all.
        """
        started = time.perf_counter()
        view = self.view
        own = exporter_page(view.status, time.perf_counter() - started)
        if compressed:
            return view.gzipped, gzip.compress(own, 6)
        return view.text, own

    def respond(self, request: Request) -> Response:
        """``/metrics`` (or ``/``); 404 elsewhere. The server has already refused other methods."""
        if request.path not in ("/", "/metrics"):
            return Response.text("404 Not Found", "ibfab exporter: metrics are at /metrics\n")
        compressed = "gzip" in request.headers.get("accept-encoding", "")
        headers: tuple[tuple[str, str], ...] = (("Content-Type", CONTENT_TYPE),)
        if compressed:
            headers += (("Content-Encoding", "gzip"),)
        return Response("200 OK", headers, self.page(compressed))


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


def serve(
    listen: str,
    session: Session,
    *,
    refresh_s: float = DEFAULT_REFRESH_S,
    window_s: float = DEFAULT_WINDOW_S,
    log: Callable[[str], None] = print,
    stop: threading.Event | None = None,
    ready: Callable[[str], None] | None = None,
    limits: Limits | None = None,
) -> None:
    """Serve ``/metrics`` on ``listen`` until ``stop`` is set; the store is read every ``refresh_s``.

    Binds first (so a busy port fails at once), reads the store once, then answers scrapes.
    ``ready`` gets the URL once scrapes are answered (port 0 picks a free port). ``limits``
    bound connections, time and request size (:class:`fabric.serve.http.Limits`).
    """
    host, port = parse_listen(listen)
    exporter = Exporter(session, window_s, log)
    server = HttpServer.bind(host, port, exporter.respond, limits, log)
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
        else:
            server.server_close()


__all__ = (
    "DEFAULT_LISTEN",
    "DEFAULT_REFRESH_S",
    "DEFAULT_WINDOW_S",
    "Exporter",
    "ExporterView",
    "Limits",
    "parse_listen",
    "read_view",
    "serve",
)
