"""The metric families ``ibfab exporter`` serves: names, labels, and how each is built.

Pure functions from store records (a Fabric, a counter snapshot's rows, a HealthReport) to
prometheus-client metric families; :mod:`fabric.serve.exporter` reads the store and serves them.

Per-port counters follow treydock/infiniband_exporter's names, so its dashboards and recording
rules keep working, with guilbaults/infiniband-exporter's far-end labels added::

    infiniband_switch_port_<counter>_total{guid, port, switch, remote_guid, remote_port, remote_name}
    infiniband_hca_port_<counter>_total{guid, port, hca, remote_guid, remote_port, remote_name}

``<counter>`` is one of ``symbol_error``, ``link_error_recovery``, ``link_downed``,
``receive_errors``, ``receive_remote_physical_errors``, ``receive_switch_relay_errors``,
``transmit_discards``, ``transmit_constraint_errors``, ``receive_constraint_errors``,
``local_link_integrity_errors``, ``excessive_buffer_overrun_errors``, ``vl15_dropped``,
``transmit_wait``, ``transmit_data_bytes``, ``receive_data_bytes``, ``transmit_packets``,
``receive_packets``. Values are the raw readings of the latest complete counter snapshot (never
reset by ibfab); the data counters count 4-byte words on the wire and are served x 4 as bytes.
``guid`` is the node GUID (``0x`` + 16 hex digits), ``switch``/``hca`` the operator's name for the
node as ``ibfab health`` prints it (``leaf-su01-r3``, ``dgx-0042 mlx5_3``; fabric.app.health),
``remote_*`` the far end of the cable when the snapshot was taken (empty when the port had no
known peer). A port that did not answer has no series in that scrape (see
``ibfab_exporter_ports_unreachable``).

Sticky counters (every counter narrower than 64 bits) stop at their maximum, where their rate
reads as zero; each one at its maximum gets a series, value 1, in::

    infiniband_port_saturated{guid, port, kind, name, remote_guid, remote_port, remote_name, counter}

with ``kind`` ``switch`` or ``hca``, ``name`` the node's name and ``counter`` the ``<counter>`` stem
above. Counters below their maximum have no series (a 0 for each of 13 counters on every port
would multiply the series count for nothing).

Link health (``ibfab health``'s assessment over the ``--window`` that ends at the latest snapshot,
findings not recorded), one series per cable
of the latest topology, ``a`` the lower end as in topology.model.Link::

    ibfab_link_health_score{a_guid, a_port, a_name, b_guid, b_port, b_name}        0-100
    ibfab_link_status{a_guid, a_port, a_name, b_guid, b_port, b_name, status}     1 current, 0 others
    ibfab_link_ber{...}            symbol errors / bits (absent while the link has no counter deltas)
    ibfab_link_ber_upper{...}      upper confidence bound of the BER
    ibfab_link_flaps_per_hour{...}

``status`` takes every value of fabric.health.Status (``ok``, ``watch``, ``warn``, ``critical``).

The exporter itself::

    ibfab_exporter_up                                    1 when the last refresh read everything
    ibfab_exporter_error{reason}                         1 for each current problem, 0 otherwise
    ibfab_exporter_last_snapshot_timestamp_seconds       when the served counter snapshot was taken
    ibfab_exporter_last_refresh_timestamp_seconds        when the exporter last read the store
    ibfab_exporter_refresh_duration_seconds              how long that read (and health) took
    ibfab_exporter_scrape_duration_seconds               how long this scrape took to assemble
    ibfab_exporter_ports_unreachable                     ports of that snapshot that did not answer
    ibfab_exporter_ports_unknown                         ports of nodes the latest topology lacks

``reason`` is one of :data:`ERROR_REASONS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from fabric.core.fields import COUNTER_NAMES, COUNTERS, max_value
from fabric.health.status import Status
from topology.model import Fabric, Guid, NodeKind

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from fabric.health.records import HealthReport
    from fabric.store.records import PortCounterRow

# canonical counter name -> (metric stem, multiplier, help text)
COUNTER_METRICS: Mapping[str, tuple[str, int, str]] = MappingProxyType(
    {
        "symbol_errors": ("symbol_error", 1, "Minor link errors on one or more lanes (SymbolErrorCounter)"),
        "link_error_recovery": (
            "link_error_recovery",
            1,
            "Link retrains that recovered without going down (LinkErrorRecoveryCounter)",
        ),
        "link_downed": ("link_downed", 1, "Times the link went down (LinkDownedCounter)"),
        "rcv_errors": ("receive_errors", 1, "Received packets with errors (PortRcvErrors)"),
        "rcv_remote_physical_errors": (
            "receive_remote_physical_errors",
            1,
            "Received packets marked bad by a remote physical error (PortRcvRemotePhysicalErrors)",
        ),
        "rcv_switch_relay_errors": (
            "receive_switch_relay_errors",
            1,
            "Received packets the switch could not relay (PortRcvSwitchRelayErrors)",
        ),
        "xmit_discards": ("transmit_discards", 1, "Outbound packets discarded (PortXmitDiscards)"),
        "xmit_constraint_errors": (
            "transmit_constraint_errors",
            1,
            "Outbound packets dropped by partition or rate constraints (PortXmitConstraintErrors)",
        ),
        "rcv_constraint_errors": (
            "receive_constraint_errors",
            1,
            "Inbound packets dropped by partition or rate constraints (PortRcvConstraintErrors)",
        ),
        "local_link_integrity_errors": (
            "local_link_integrity_errors",
            1,
            "Local link integrity threshold errors (LocalLinkIntegrityErrors)",
        ),
        "excessive_buffer_overrun_errors": (
            "excessive_buffer_overrun_errors",
            1,
            "Receive buffer overrun threshold errors (ExcessiveBufferOverrunErrors)",
        ),
        "vl15_dropped": ("vl15_dropped", 1, "Subnet management packets dropped (VL15Dropped)"),
        "xmit_wait": ("transmit_wait", 1, "Ticks with data to send but no credit (PortXmitWait)"),
        "xmit_data": ("transmit_data_bytes", 4, "Data bytes sent (PortXmitData x 4: it counts 4-byte words)"),
        "rcv_data": (
            "receive_data_bytes",
            4,
            "Data bytes received (PortRcvData x 4: it counts 4-byte words)",
        ),
        "xmit_pkts": ("transmit_packets", 1, "Packets sent (PortXmitPkts)"),
        "rcv_pkts": ("receive_packets", 1, "Packets received (PortRcvPkts)"),
    }
)
assert tuple(COUNTER_METRICS) == COUNTER_NAMES  # one metric per counter the store keeps

REMOTE_LABELS: tuple[str, ...] = ("remote_guid", "remote_port", "remote_name")
SWITCH_PORT_LABELS: tuple[str, ...] = ("guid", "port", "switch", *REMOTE_LABELS)
HCA_PORT_LABELS: tuple[str, ...] = ("guid", "port", "hca", *REMOTE_LABELS)
SATURATED_LABELS: tuple[str, ...] = ("guid", "port", "kind", "name", *REMOTE_LABELS, "counter")
LINK_LABELS: tuple[str, ...] = ("a_guid", "a_port", "a_name", "b_guid", "b_port", "b_name")
# Not "infiniband_port_counter_saturated": promtool's linter refuses a gauge whose name says "counter".
SATURATED_METRIC = "infiniband_port_saturated"
# Sticky counters: those that stop at their maximum (64-bit ones cannot get there in decades).
STICKY: tuple[str, ...] = tuple(name for name in COUNTER_NAMES if COUNTERS[name][0] < 64)

ERROR_REASONS: tuple[str, ...] = (
    "store_missing",  # no store file at the path
    "store_error",  # the store could not be read (not an ibfab store, busy, corrupt)
    "no_topology",  # no topology snapshot saved yet (ibfab discover --save)
    "no_counters",  # no complete counter snapshot yet
    "health_error",  # counters served, but link health could not be computed
)


def counter_metric_name(kind: str, name: str) -> str:
    """The full series name of counter ``name`` on a ``switch`` or ``hca`` port.

    >>> counter_metric_name("switch", "xmit_data")
    'infiniband_switch_port_transmit_data_bytes_total'
    """
    return f"infiniband_{kind}_port_{COUNTER_METRICS[name][0]}_total"


@dataclass(frozen=True, slots=True)
class PortFamilies:
    """The per-port families of one counter snapshot and what could not be shown."""

    families: tuple[Metric, ...]
    unreachable: int  # ports that did not answer
    unknown: int  # ports of nodes the topology does not know (no kind, no name)


def port_families(fabric: Fabric, names: Mapping[str, str], rows: Iterable[PortCounterRow]) -> PortFamilies:
    """Counter families (switch and HCA) and the saturation gauge from one snapshot's rows."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    families: dict[tuple[str, str], CounterMetricFamily] = {}
    for kind, labels in (("switch", SWITCH_PORT_LABELS), ("hca", HCA_PORT_LABELS)):
        for name, (_, _, help_text) in COUNTER_METRICS.items():
            # CounterMetricFamily adds the _total suffix in the exposition
            families[(kind, name)] = CounterMetricFamily(
                counter_metric_name(kind, name).removesuffix("_total"), help_text, labels=labels
            )
    saturated = GaugeMetricFamily(
        SATURATED_METRIC,
        "1 while a sticky counter sits at its maximum: the true count is at least that and its rate reads 0",
        labels=SATURATED_LABELS,
    )
    unreachable = unknown = 0
    for row in rows:
        if not row.reachable:
            unreachable += 1
            continue
        node = fabric.nodes.get(Guid(row.guid))
        if node is None:
            unknown += 1
            continue
        kind = "switch" if node.kind is NodeKind.SWITCH else "hca"
        remote = _remote(row, names)
        node_name = names.get(row.guid, row.guid)
        series = [row.guid, str(row.port), node_name, *remote]
        for name, value in row.counters.items():
            stem, scale, _ = COUNTER_METRICS[name]
            families[(kind, name)].add_metric(series, float(value * scale))
            if name in STICKY and value >= max_value(name):
                saturated.add_metric([row.guid, str(row.port), kind, node_name, *remote, stem], 1.0)
    return PortFamilies((*families.values(), saturated), unreachable, unknown)


def _remote(row: PortCounterRow, names: Mapping[str, str]) -> list[str]:
    if row.peer_guid is None:
        return ["", "", ""]
    port = "" if row.peer_port is None else str(row.peer_port)
    return [row.peer_guid, port, names.get(row.peer_guid, row.peer_guid)]


def link_families(report: HealthReport, names: Mapping[str, str]) -> tuple[Metric, ...]:
    """Score, status, BER, BER upper bound and flap rate of every link in ``report``."""
    from prometheus_client.core import GaugeMetricFamily

    score = GaugeMetricFamily(
        "ibfab_link_health_score", "Link health score, 100 healthy to 0 (fabric.health)", labels=LINK_LABELS
    )
    status = GaugeMetricFamily(
        "ibfab_link_status",
        "1 for the link's current health status (ok, watch, warn, critical), 0 for the others",
        labels=(*LINK_LABELS, "status"),
    )
    ber = GaugeMetricFamily(
        "ibfab_link_ber", "Bit error rate over the health window: symbol errors / bits", labels=LINK_LABELS
    )
    ber_upper = GaugeMetricFamily(
        "ibfab_link_ber_upper", "Upper confidence bound of the link's bit error rate", labels=LINK_LABELS
    )
    flaps = GaugeMetricFamily(
        "ibfab_link_flaps_per_hour", "Link-down events per hour over the health window", labels=LINK_LABELS
    )
    for link in report.links:
        labels = [
            link.a.guid,
            str(link.a.port),
            names.get(link.a.guid, link.a.guid),
            link.b.guid,
            str(link.b.port),
            names.get(link.b.guid, link.b.guid),
        ]
        score.add_metric(labels, float(link.score))
        for s in Status:
            status.add_metric([*labels, s.value], 1.0 if s is link.status else 0.0)
        if link.ber.value is not None:
            ber.add_metric(labels, link.ber.value)
        if link.ber.upper is not None:
            ber_upper.add_metric(labels, link.ber.upper)
        flaps.add_metric(labels, link.flaps_per_hour)
    return (score, status, ber, ber_upper, flaps)


@dataclass(frozen=True, slots=True)
class ExporterStatus:
    """What the last refresh found, for the ``ibfab_exporter_*`` families."""

    errors: frozenset[str] = frozenset()  # ERROR_REASONS entries
    message: str = ""  # one line for the log: what went wrong
    last_snapshot_time: float | None = None
    refreshed_at: float | None = None
    refresh_seconds: float | None = None
    ports_unreachable: int = 0
    ports_unknown: int = 0


def exporter_families(status: ExporterStatus, scrape_seconds: float) -> tuple[Metric, ...]:
    """The exporter's own families (always served, whatever the store holds)."""
    from prometheus_client.core import GaugeMetricFamily

    out = [
        GaugeMetricFamily(
            "ibfab_exporter_up",
            "1 when the last refresh read a topology, a counter snapshot and link health; 0 otherwise",
            value=0.0 if status.errors else 1.0,
        )
    ]
    error = GaugeMetricFamily(
        "ibfab_exporter_error", "1 for each problem the last refresh of the store met", labels=("reason",)
    )
    for reason in ERROR_REASONS:
        error.add_metric([reason], 1.0 if reason in status.errors else 0.0)
    out.append(error)
    optional: Sequence[tuple[str, str, float | None]] = (
        (
            "ibfab_exporter_last_snapshot_timestamp_seconds",
            "When the served counter snapshot was taken (seconds since the epoch)",
            status.last_snapshot_time,
        ),
        (
            "ibfab_exporter_last_refresh_timestamp_seconds",
            "When the exporter last read the store (seconds since the epoch)",
            status.refreshed_at,
        ),
        (
            "ibfab_exporter_refresh_duration_seconds",
            "How long the last read of the store and the health assessment took",
            status.refresh_seconds,
        ),
    )
    out += [GaugeMetricFamily(n, h, value=v) for n, h, v in optional if v is not None]
    out += [
        GaugeMetricFamily(
            "ibfab_exporter_ports_unreachable",
            "Ports of the served counter snapshot that did not answer",
            value=float(status.ports_unreachable),
        ),
        GaugeMetricFamily(
            "ibfab_exporter_ports_unknown",
            "Ports of the served counter snapshot on nodes the latest topology does not know",
            value=float(status.ports_unknown),
        ),
        GaugeMetricFamily(
            "ibfab_exporter_scrape_duration_seconds",
            "How long this scrape took to assemble",
            value=scrape_seconds,
        ),
    ]
    return tuple(out)


def render(families: Iterable[Metric]) -> bytes:
    """Families in the Prometheus text format (prometheus-client's own writer)."""
    from prometheus_client import CollectorRegistry, generate_latest

    class _Families:
        def collect(self) -> Iterator[Metric]:
            yield from families

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families())
    return bytes(generate_latest(registry))
