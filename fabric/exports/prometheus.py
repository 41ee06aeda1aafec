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
node as ``ibfab health`` prints it (``leaf-su01-r3``, ``dgx-0042 mlx5_3``; fabric.app.health.assess),
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
    ibfab_link_flaps_per_hour{...}    downs + retrains per hour the link was observed (as ``ibfab health``;
                                      absent when under 10 min of samples gave no rate)
    ibfab_link_ber_sample_size{...}   bits the BER is over (link rate x seconds the ends were read)
    ibfab_link_downs{...}             link-down events in the window (both ends merged, + discovery)
    ibfab_link_recoveries{...}        link error recoveries (retrains without going down)
    ibfab_link_repeat_offences{...}   distinct UTC days with a warn-or-worse finding in the lookback
    ibfab_link_reason{..., kind, reason}   1, 2, ...: the order ``ibfab health`` lists the reasons in
    ibfab_health_window_seconds       the counter history (--window) the assessment covers

``status`` takes every value of fabric.health.Status (``ok``, ``watch``, ``warn``, ``critical``).
``ibfab_link_reason`` has series only for links that are not ok (a clean fabric serves none);
``kind`` is fabric.health.score.finding_kind of the reason (``ber``, ``flapping``, ``rcv_errors``, ...).

Routes (when forwarding tables are stored with the latest topology): see
:mod:`fabric.exports.prometheus_routes` (``ibfab_route_link_routes``,
``ibfab_route_credit_loop_channels``, ``ibfab_route_findings``, ``ibfab_route_errors``).

Switch uplinks (latest topology, topology.classify tiers: 1 leaf, 2 spine, 3 core)::

    ibfab_switch_uplinks{guid, switch, tier}          cables to switches of a higher tier
    ibfab_switch_uplinks_usual{guid, switch, tier}    what most switches of its tier have
                                                      (topology.wiring.usual_uplinks; absent for a
                                                      tier of fewer than 3 cabled-up switches)

The latest finished probe sweep (``ibfab sweep``), its suspect links as ``ibfab sweep show`` ranks them::

    ibfab_sweep_last_id, ibfab_sweep_last_timestamp_seconds      the sweep and when it finished
    ibfab_sweep_suspect_score{a_guid, ..., b_name}     slow pairs crossing it / all pairs crossing it
    ibfab_sweep_suspect_slow_pairs{a_guid, ..., b_name}

Schedules run by ``ibfab daemon`` (enabled ones with a finished run), and collection pace::

    ibfab_schedule_last_run_success{schedule, kind}              1 ok, 0 failed
    ibfab_schedule_last_run_timestamp_seconds{schedule, kind}    when that run finished
    ibfab_schedule_last_run_error{schedule, kind, error}         1, only while the last run failed
    ibfab_counters_interval_seconds      median time between the last counter snapshots

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

import itertools
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
    from probes.localize import Suspect
    from topology.classify import Classification

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
SWITCH_LABELS: tuple[str, ...] = ("guid", "switch", "tier")
SCHEDULE_LABELS: tuple[str, ...] = ("schedule", "kind")
# Snapshots whose gaps give the collection interval: enough to outvote one late or manual run.
INTERVAL_SNAPSHOTS = 11
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
    "sweep_error",  # the latest probe sweep's records could not be read
    "routes_error",  # the forwarding tables stored with the topology could not be judged
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
        "ibfab_link_flaps_per_hour",
        "Link-downs and retrains per hour of the time the link was observed (first to last sample)",
        labels=LINK_LABELS,
    )
    bits = GaugeMetricFamily(
        "ibfab_link_ber_sample_size",
        "Bits the link's BER is estimated over: link rate x seconds its ends were read",
        labels=LINK_LABELS,
    )
    downs = GaugeMetricFamily(
        "ibfab_link_downs",
        "Link-down events over the health window (both ends within the merge time counted once)",
        labels=LINK_LABELS,
    )
    recoveries = GaugeMetricFamily(
        "ibfab_link_recoveries",
        "Link error recoveries (retrains without going down) over the health window",
        labels=LINK_LABELS,
    )
    repeat_days = GaugeMetricFamily(
        "ibfab_link_repeat_offences",
        "Distinct UTC days with a warn or critical finding on the link within the repeat-offender lookback",
        labels=LINK_LABELS,
    )
    reason = GaugeMetricFamily(
        "ibfab_link_reason",
        "Why a link is not ok, one series per reason; the value is its place in ibfab health's list (1 first)",
        labels=(*LINK_LABELS, "kind", "reason"),
    )
    from fabric.health.score import finding_kind

    for link in report.links:
        labels = link_labels(link.a.guid, link.a.port, link.b.guid, link.b.port, names)
        score.add_metric(labels, float(link.score))
        for s in Status:
            status.add_metric([*labels, s.value], 1.0 if s is link.status else 0.0)
        if link.ber.value is not None:
            ber.add_metric(labels, link.ber.value)
        if link.ber.upper is not None:
            ber_upper.add_metric(labels, link.ber.upper)
        if link.ber.bits > 0:
            bits.add_metric(labels, link.ber.bits)
        if link.flaps_per_hour is not None:
            flaps.add_metric(labels, link.flaps_per_hour)
        downs.add_metric(labels, float(link.downs))
        recoveries.add_metric(labels, float(link.recoveries))
        repeat_days.add_metric(labels, float(link.repeat_days))
        if link.status is not Status.OK:
            for place, text in enumerate(link.reasons, 1):
                reason.add_metric([*labels, finding_kind(text), text], float(place))
    window = GaugeMetricFamily(
        "ibfab_health_window_seconds",
        "Counter history the link health assessment covered, in seconds",
        value=report.summary.seconds,
    )
    return (score, status, ber, ber_upper, bits, flaps, downs, recoveries, repeat_days, reason, window)


def link_labels(a_guid: str, a_port: int, b_guid: str, b_port: int, names: Mapping[str, str]) -> list[str]:
    """The LINK_LABELS values of one cable (``a`` the lower end, as topology.model.Link has it)."""
    return [
        a_guid,
        str(a_port),
        names.get(a_guid, a_guid),
        b_guid,
        str(b_port),
        names.get(b_guid, b_guid),
    ]


def switch_families(cls: Classification, names: Mapping[str, str]) -> tuple[Metric, ...]:
    """Uplinks of every switch with a tier, and the count most switches of its tier have."""
    from prometheus_client.core import GaugeMetricFamily

    from topology.classify import Role
    from topology.wiring import usual_uplinks

    uplinks = GaugeMetricFamily(
        "ibfab_switch_uplinks", "Cables from the switch to switches of a higher tier", labels=SWITCH_LABELS
    )
    usual_family = GaugeMetricFamily(
        "ibfab_switch_uplinks_usual",
        "Uplinks most switches of the same group and tier have (absent when they are fewer than 3)",
        labels=SWITCH_LABELS,
    )
    usual = usual_uplinks(cls)
    for guid, node in cls.nodes.items():
        if node.role is not Role.SWITCH or node.tier is None:
            continue
        labels = [guid, names.get(guid, guid), str(node.tier)]
        uplinks.add_metric(labels, float(cls.uplinks.get(guid, 0)))
        key = cls.peer_key(guid)  # a service leaf's (a board's) usual count is its own kind's
        if key in usual:
            usual_family.add_metric(labels, float(usual[key]))
    return (uplinks, usual_family)


@dataclass(frozen=True, slots=True)
class SweepSuspects:
    """The latest finished probe sweep and its suspect links (probes.localize.rank's order)."""

    sweep_id: int
    finished: float
    suspects: tuple[Suspect, ...]


def sweep_families(sweep: SweepSuspects, names: Mapping[str, str]) -> tuple[Metric, ...]:
    """When the latest sweep ran, and a score and slow-pair count per suspect link."""
    from prometheus_client.core import GaugeMetricFamily

    score = GaugeMetricFamily(
        "ibfab_sweep_suspect_score",
        "Share of the latest sweep's pairs crossing the link that were slow or failed (ibfab sweep show)",
        labels=LINK_LABELS,
    )
    slow = GaugeMetricFamily(
        "ibfab_sweep_suspect_slow_pairs",
        "Slow or failed pairs of the latest sweep that crossed the link",
        labels=LINK_LABELS,
    )
    for s in sweep.suspects:
        labels = link_labels(s.link.a.guid, s.link.a.port, s.link.b.guid, s.link.b.port, names)
        score.add_metric(labels, s.score)
        slow.add_metric(labels, float(len(s.slow_pairs)))
    return (
        GaugeMetricFamily(
            "ibfab_sweep_last_id", "Id of the latest finished probe sweep", value=sweep.sweep_id
        ),
        GaugeMetricFamily(
            "ibfab_sweep_last_timestamp_seconds",
            "When the latest probe sweep finished (seconds since the epoch)",
            value=sweep.finished,
        ),
        score,
        slow,
    )


@dataclass(frozen=True, slots=True)
class ScheduleRun:
    """How the last finished run of one enabled schedule ended."""

    schedule: str
    kind: str  # "counters" or "sweep"
    finished: float
    ok: bool
    error: str  # the one-line error ("" when ok)


def collection_interval(taken_at: Sequence[float]) -> float | None:
    """Median gap between the last INTERVAL_SNAPSHOTS snapshot times (None with fewer than 2).

    >>> collection_interval([0.0, 300.0, 600.0, 960.0, 1260.0])
    300.0
    """
    times = sorted(taken_at)[-INTERVAL_SNAPSHOTS:]
    gaps = sorted(b - a for a, b in itertools.pairwise(times))
    if not gaps:
        return None
    mid = len(gaps) // 2
    return gaps[mid] if len(gaps) % 2 else (gaps[mid - 1] + gaps[mid]) / 2


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
    schedules: tuple[ScheduleRun, ...] = ()  # read on every refresh: runs end without new data
    collection_interval: float | None = None


def exporter_families(status: ExporterStatus, scrape_seconds: float) -> tuple[Metric, ...]:
    """The exporter's own families (always served, whatever the store holds)."""
    from prometheus_client.core import GaugeMetricFamily

    out: list[Metric] = [
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
    if status.collection_interval is not None:
        out.append(
            GaugeMetricFamily(
                "ibfab_counters_interval_seconds",
                "Median time between the latest counter snapshots (the collection interval)",
                value=status.collection_interval,
            )
        )
    out += schedule_families(status.schedules)
    return tuple(out)


def schedule_families(runs: Iterable[ScheduleRun]) -> tuple[Metric, ...]:
    """Success, end time and error of each schedule's last finished run."""
    from prometheus_client.core import GaugeMetricFamily

    success = GaugeMetricFamily(
        "ibfab_schedule_last_run_success",
        "1 when the schedule's last finished run succeeded, 0 when it failed",
        labels=SCHEDULE_LABELS,
    )
    finished = GaugeMetricFamily(
        "ibfab_schedule_last_run_timestamp_seconds",
        "When the schedule's last finished run ended (seconds since the epoch)",
        labels=SCHEDULE_LABELS,
    )
    error = GaugeMetricFamily(
        "ibfab_schedule_last_run_error",
        "1 while the schedule's last run failed, with its one-line error",
        labels=(*SCHEDULE_LABELS, "error"),
    )
    for run in runs:
        labels = [run.schedule, run.kind]
        success.add_metric(labels, 1.0 if run.ok else 0.0)
        finished.add_metric(labels, run.finished)
        if not run.ok:
            error.add_metric([*labels, run.error], 1.0)
    return (success, finished, error)


def render(families: Iterable[Metric]) -> bytes:
    """Families in the Prometheus text format (prometheus-client's own writer)."""
    from prometheus_client import CollectorRegistry, generate_latest

    class _Families:
        def collect(self) -> Iterator[Metric]:
            yield from families

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families())
    return bytes(generate_latest(registry))
