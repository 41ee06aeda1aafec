"""``ibfab exporter``: serve the store's latest counters and link health to Prometheus."""

from __future__ import annotations

import signal
import threading
from types import FrameType

import click


@click.command("exporter")
@click.option(
    "--listen",
    default="127.0.0.1:9315",
    show_default=True,
    metavar="HOST:PORT",
    help="Address to serve /metrics on (0.0.0.0:PORT for every interface).",
)
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option(
    "--refresh", default="30s", show_default=True, metavar="DURATION", help="How often to re-read the store."
)
@click.option(
    "--window",
    default="130m",
    show_default=True,
    metavar="DURATION",
    help="Counter history that link health is judged over.",
)
@click.option(
    "--thresholds",
    metavar="FILE.toml",
    help="Health thresholds, as ibfab health takes them (keys under [health]).",
)
@click.option(
    "--max-connections",
    default=256,
    show_default=True,
    type=click.IntRange(1, 10000),
    help="Open connections at most; at the cap the longest-idle one is closed for a newcomer.",
)
def exporter_cmd(
    listen: str, db: str | None, refresh: str, window: str, thresholds: str | None, max_connections: int
) -> None:
    """Serve per-port counters and per-link health from the store in the Prometheus text format.

    Metrics follow infiniband_exporter's names (infiniband_switch_port_*_total,
    infiniband_hca_port_*_total) plus ibfab_link_* health and ibfab_exporter_* status gauges.
    The endpoint answers even when the store is missing or empty (ibfab_exporter_up 0).
    It answers GET and HEAD only, from one thread, with bounded connections and timeouts.
    """
    from fabric.cli.options import build_session
    from fabric.core.units import parse_duration
    from fabric.serve.exporter import Limits, parse_listen, serve

    parse_listen(listen)  # a bad address is a usage error before anything else happens
    refresh_s = parse_duration(refresh, "--refresh")
    window_s = parse_duration(window, "--window")
    session = build_session(db=db, thresholds=thresholds)  # the exporter's one session
    stop = threading.Event()

    def _terminate(signum: int, frame: FrameType | None) -> None:
        stop.set()  # SIGTERM (systemd, kill): leave the loop and close the socket

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        serve(
            listen,
            session,
            refresh_s=refresh_s,
            window_s=window_s,
            log=lambda line: click.echo(f"ibfab exporter: {line}", err=True),
            stop=stop,
            limits=Limits(max_connections=max_connections),
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
