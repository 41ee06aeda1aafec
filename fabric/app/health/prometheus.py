"""Health from Prometheus: ``ibfab health --prometheus URL``.

Sites that already scrape their IB counters into Prometheus (ibfab's exporter, or
treydock/infiniband_exporter, whose names ours follow) have the history health needs. This asks
Prometheus for a range query per counter over the window, turns the answers into the counter table
(fabric.exports.prometheus_query) and scores it with the same fabric.health.assess as the store's
path. The cables and their rates come from a topology: the store's newest, or a saved
ibnetdiscover file. Prometheus keeps no discovery events and no findings history, so flaps come
from the LinkDowned/LinkErrorRecovery counters alone and there are no repeat offenders.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any

from fabric.app.health.assess import AssessedHealth, node_names
from fabric.core.fields import COUNTER_NAMES
from fabric.exports.prometheus_query import counter_query, counter_table, matrix, step_for
from fabric.health import HealthThresholds, assess, frame_snapshots
from topology.errors import StoreError, TransportError, UsageError
from topology.model import Fabric

if TYPE_CHECKING:
    from fabric.app.session import StoreAccess

DEFAULT_STEP_S = 60.0
TIMEOUT_S = 60.0
# An answer larger than this is refused (a wider --step or a shorter --since makes it smaller).
MAX_ANSWER_BYTES = 1 << 30


def query_range(url: str, query: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
    """One range query's series; unreachable or refusing Prometheus is a one-line error."""
    base = url.rstrip("/")
    params = urllib.parse.urlencode(
        {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
    )
    where = f"{base}/api/v1/query_range"
    try:
        with urllib.request.urlopen(f"{where}?{params}", timeout=TIMEOUT_S) as resp:
            body = resp.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as exc:  # Prometheus says why in the JSON body of a 4xx/5xx
        body = exc.read(1 << 20)
        try:
            return matrix(json.loads(body), where)
        except ValueError:
            raise TransportError(f"Prometheus at {base}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TransportError(f"cannot reach Prometheus at {base}: {reason}") from None
    if len(body) > MAX_ANSWER_BYTES:
        raise UsageError(
            f"Prometheus at {base}: answer over {MAX_ANSWER_BYTES >> 20} MiB; give a wider --step"
        )
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise TransportError(f"Prometheus at {base}: the answer is not JSON ({exc})") from None
    return matrix(doc, where)


def assess_prometheus(
    url: str,
    fabric: Fabric,
    *,
    since_s: float,
    now: float | None = None,
    step_s: float = DEFAULT_STEP_S,
    thresholds: HealthThresholds | None = None,
    topology_id: int = 0,
) -> AssessedHealth:
    """Score every link of ``fabric`` over the counters Prometheus holds for the last ``since_s``."""
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--prometheus {url!r}: give the server's http:// or https:// URL")
    now = time.time() if now is None else now
    start = now - since_s
    step = step_for(since_s, step_s)
    answers = {name: query_range(url, counter_query(name), start, now, step) for name in COUNTER_NAMES}
    if not any(answers.values()):
        raise StoreError(
            f"Prometheus at {url.rstrip('/')}: no infiniband_*_port_* series in the last {since_s:g} s "
            "(is it scraping `ibfab exporter` or infiniband_exporter?)"
        )
    frame = counter_table(answers, url)
    report = assess(
        frame_snapshots(frame), fabric, since=start, now=now, thresholds=thresholds or HealthThresholds()
    )
    # the span the samples cover, as health says it (never the window asked for)
    covered = (float(frame["time"].min()), float(frame["time"].max())) if len(frame) else None
    return AssessedHealth(report, fabric, topology_id, node_names(fabric), 0, covered=covered)


def topology_for(stored: StoreAccess, topology_file: str | None) -> tuple[Fabric, int]:
    """The cables to score: a saved ibnetdiscover file, else the store's newest topology."""
    if topology_file:
        from topology.ibnetdiscover import parse_ibnetdiscover_text
        from topology.textfile import read_input_text

        text = read_input_text(topology_file, "ibnetdiscover")
        return parse_ibnetdiscover_text(text, topology_file), 0
    from fabric.app.health.assess import counters_store

    with counters_store(stored) as store:
        if not store.list_topologies():
            raise StoreError(
                f"{store.path}: no topology stored; give --topology FILE (saved ibnetdiscover output)"
            )
        topology = store.load_topology("latest")
    return topology.fabric, topology.id


__all__ = ["DEFAULT_STEP_S", "assess_prometheus", "query_range", "topology_for"]
