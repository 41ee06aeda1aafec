"""The route families ``ibfab exporter`` serves when the newest topology snapshot has forwarding
tables stored with it (``ibfab routes --save``): pure functions of a RouteReport.

::

    ibfab_route_link_routes{guid, port, switch, remote_guid, remote_port, remote_name, direction}
        routes of the hosts' all-to-all (within each rail on a rail fabric) that leave the switch
        by that port, for every switch-to-switch cable in each direction (``direction``:
        ``leaf -> spine``, ...)
    ibfab_route_credit_loop_channels     channels on credit-loop cycles (0: none); (channel, VL)
                                         nodes where the lanes are stored with the tables
    ibfab_route_credit_loop_lanes_known  1: credit loops judged per VL, 0: in one lane (why, and
                                         where the lanes came from: ``ibfab routes check``; not a
                                         label, whose text names a snapshot: a new series each time)
    ibfab_route_findings{kind, severity} findings of ``ibfab routes check`` by kind (present kinds only)
    ibfab_route_errors                   error-level findings (0: none)

The report is computed once per stored snapshot, without health flags or isolations (the link
health families say those).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

from topology.anomaly import Severity
from topology.route_checks import RouteReport

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

ROUTE_LINK_LABELS = ("guid", "port", "switch", "remote_guid", "remote_port", "remote_name", "direction")


def route_families(report: RouteReport, names: Mapping[str, str]) -> tuple[Metric, ...]:
    from prometheus_client.core import GaugeMetricFamily

    links = GaugeMetricFamily(
        "ibfab_route_link_routes",
        "Routes of the hosts' all-to-all leaving the switch by this port (forwarding tables stored with the topology)",
        labels=ROUTE_LINK_LABELS,
    )
    b = report.balance
    w = b.walk.bound
    routes = b.routes
    for i in range(len(b.src)):
        s, p, t = int(b.src[i]), int(b.port[i]), int(b.dst[i])
        g, far = w.switches[s], w.switches[t]
        links.add_metric(
            [
                g,
                str(p),
                names.get(g, g),
                far,
                str(int(w.far_port[s, p])),
                names.get(far, far),
                b.direction_names[int(b.direction[i])],
            ],
            float(routes[i]),
        )
    loops = GaugeMetricFamily(
        "ibfab_route_credit_loop_channels",
        "Channels on credit-loop cycles of the hosts' routes (0: no credit loop)",
    )
    loops.add_metric([], float(report.credit.in_cycles if report.credit.found else 0))
    lanes = GaugeMetricFamily(
        "ibfab_route_credit_loop_lanes_known",
        "1: credit loops judged per virtual lane (SL2VL tables and route SLs stored with the tables); "
        "0: in one lane (ibfab routes check says why)",
    )
    lanes.add_metric([], 1.0 if report.credit.lanes_known else 0.0)
    findings = GaugeMetricFamily(
        "ibfab_route_findings", "Findings of 'ibfab routes check' by kind", labels=("kind", "severity")
    )
    for (kind, severity), n in sorted(Counter((f.kind, f.severity.value) for f in report.findings).items()):
        findings.add_metric([kind, severity], float(n))
    errors = GaugeMetricFamily("ibfab_route_errors", "Error-level findings of 'ibfab routes check'")
    errors.add_metric(
        [], float(sum(1 for f in report.findings if f.severity in (Severity.ERROR, Severity.CRITICAL)))
    )
    return (links, loops, lanes, findings, errors)
