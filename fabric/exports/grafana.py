"""A Grafana dashboard for what ``ibfab exporter`` serves, built with grafana-foundation-sdk. Pure.

DECISION: grafana-foundation-sdk (Grafana Labs' own generated builders, typed, one release per
Grafana version) rather than hand-written JSON or grafanalib: its models are generated from
Grafana's schema, so a misspelt option is a type error under mypy, and the tests read the output
back through the same models (``Dashboard.from_json``) to check that nothing falls outside it.

Variables: ``datasource``, ``fabric`` (the exporter's ``instance``: one exporter per fabric),
``tier`` and ``switch`` (from ``ibfab_switch_uplinks``). Link panels keep a link when either end
is one of the chosen switches.

>>> board = grafana_dashboard()
>>> board["title"], [v["name"] for v in board["templating"]["list"]]
('InfiniBand fabric (ibfab)', ['datasource', 'fabric', 'tier', 'switch'])
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from fabric.exports.prometheus import SATURATED_METRIC, counter_metric_name

UID = "ibfab-fabric"
F = 'instance=~"$fabric"'
LINK_LEGEND = "{{a_name}}:{{a_port}} <-> {{b_name}}:{{b_port}}"
# Error counters shown per port: the ones health judges links by.
PORT_COUNTERS = ("symbol_errors", "link_error_recovery", "link_downed", "rcv_errors", "xmit_discards")
# Values the dashboard's variables and Grafana's own macros take when a query is checked outside
# Grafana (tests run each query against a real Prometheus with these in place).
SAMPLE_VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$__range": "1h",
    "$fabric": ".*",
    "$tier": ".*",
    "$switch": ".*",
}


def _on_switch(expr: str) -> str:
    """``expr`` (a link family with ``{F}``) for links with an end on one of the chosen switches."""
    a_end = expr.replace("{F}", "{" + F + ',a_name=~"$switch"}')
    b_end = expr.replace("{F}", "{" + F + ',b_name=~"$switch"}')
    return f"{a_end} or {b_end}"


def _leaf_spine(metric: str) -> str:
    """The worst value of ``metric`` per (leaf, spine) pair: each link end's tier is looked up in
    ibfab_switch_uplinks (tier 1 leaf, 2 spine), whichever end of the link is the leaf."""

    def one(leaf: str, spine: str) -> str:
        tier = 'label_replace(ibfab_switch_uplinks{%s,tier="%s"}, "%s_guid", "$1", "guid", "(.*)")'
        return (
            f"min by (instance, leaf, spine) (label_replace(label_replace({metric}{{{F}}}, "
            f'"leaf", "$1", "{leaf}_name", "(.*)"), "spine", "$1", "{spine}_name", "(.*)") '
            f"and on (instance, {leaf}_guid) {tier % (F, '1', leaf)} "
            f"and on (instance, {spine}_guid) {tier % (F, '2', spine)})"
        )

    return f"{one('a', 'b')} or {one('b', 'a')}"


def grafana_dashboard(datasource_uid: str = "${datasource}") -> dict[str, Any]:
    """The dashboard as Grafana's JSON model (what the HTTP API and file provisioning take)."""
    from grafana_foundation_sdk.builders import dashboard as db
    from grafana_foundation_sdk.builders import prometheus as prom
    from grafana_foundation_sdk.builders import stat, table, timeseries
    from grafana_foundation_sdk.builders.common import ReduceDataOptions, ScaleDistributionConfig
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models import common
    from grafana_foundation_sdk.models.dashboard import (
        DataSourceRef,
        DataTransformerConfig,
        DynamicConfigValue,
        Threshold,
        ThresholdsMode,
        VariableRefresh,
        VariableSort,
    )

    ds = DataSourceRef(type_val="prometheus", uid=datasource_uid)

    def query(expr: str, legend: str = "", *, instant: bool = False, ref: str = "A") -> prom.Dataquery:
        q = prom.Dataquery().expr(expr).ref_id(ref).datasource(ds)
        if legend:
            q = q.legend_format(legend)
        return q.instant().format(_table()) if instant else q.range()

    def _table() -> Any:
        from grafana_foundation_sdk.models.prometheus import PromQueryFormat

        return PromQueryFormat.TABLE

    def steps(*pairs: tuple[float | None, str]) -> db.ThresholdsConfig:
        return db.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps([Threshold(v, c) for v, c in pairs])

    score_colors = steps((None, "red"), (40, "orange"), (70, "yellow"), (90, "green"))

    def variable(name: str, label: str, expr: str) -> db.QueryVariable:
        return (
            db.QueryVariable(name)
            .label(label)
            .datasource(ds)
            .query({"query": expr, "refId": "PrometheusVariableQueryEditor-VariableQuery"})
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(VariableSort.ALPHABETICAL_ASC)
        )

    board = (
        db.Dashboard("InfiniBand fabric (ibfab)")
        .uid(UID)
        .tags(["infiniband", "ibfab"])
        .description("Link health, BER, flaps and port counters from `ibfab exporter`.")
        .time("now-6h", "now")
        .refresh("1m")
        .with_variable(db.DatasourceVariable("datasource").label("Data source").type("prometheus"))
        .with_variable(variable("fabric", "Fabric", "label_values(ibfab_exporter_up, instance)"))
        .with_variable(
            variable("tier", "Tier", f"label_values(ibfab_switch_uplinks{{{F}}}, tier)")
            .multi(True)
            .include_all(True)
        )
        .with_variable(
            variable("switch", "Switch", f'label_values(ibfab_switch_uplinks{{{F},tier=~"$tier"}}, switch)')
            .multi(True)
            .include_all(True)
        )
        # -- overview
        .with_row(db.Row("Fabric overview"))
        .with_panel(
            stat.Panel()
            .title("Links by status")
            .description("Links per health status over the exporter's window (ibfab health).")
            .with_target(query(f"sum by (status) (ibfab_link_status{{{F}}})", "{{status}}"))
            .reduce_options(ReduceDataOptions().calcs(["lastNotNull"]))
            .color_mode(common.BigValueColorMode.BACKGROUND)
            .span(8)
            .height(5)
        )
        .with_panel(
            stat.Panel()
            .title("Last counter collection")
            .description("Age of the counter snapshot the exporter serves.")
            .with_target(
                query(f"time() - ibfab_exporter_last_snapshot_timestamp_seconds{{{F}}}", "collection")
            )
            .with_target(query(f"time() - ibfab_sweep_last_timestamp_seconds{{{F}}}", "sweep", ref="B"))
            .unit("s")
            .color_mode(common.BigValueColorMode.NONE)
            .span(8)
            .height(5)
        )
        .with_panel(
            stat.Panel()
            .title("Exporter and store")
            .description("1: the exporter read topology, counters and health from its store.")
            .with_target(query(f"ibfab_exporter_up{{{F}}}", "store read"))
            .with_target(query(f"ibfab_exporter_ports_unreachable{{{F}}}", "ports unreachable", ref="B"))
            .span(8)
            .height(5)
        )
        .with_panel(
            table.Panel()
            .title("Worst links")
            .description(
                "The 20 lowest health scores, both ends named; the first reason is in the next table."
            )
            .with_target(query(f"bottomk(20, {_on_switch('ibfab_link_health_score{F}')})", instant=True))
            .with_transformation(_organize(["a_name", "a_port", "b_name", "b_port", "Value"]))
            .thresholds(score_colors)
            .cell_options(common.TableColorTextCellOptions())
            .span(12)
            .height(9)
        )
        .with_panel(
            table.Panel()
            .title("Why links are not ok")
            .description("Each reason ibfab health gives, in its order (1 first).")
            .with_target(query(_on_switch("ibfab_link_reason{F}"), instant=True))
            .with_transformation(
                _organize(["a_name", "a_port", "b_name", "b_port", "kind", "reason", "Value"])
            )
            .span(12)
            .height(9)
        )
        # -- BER and flaps
        .with_row(db.Row("BER and flaps per link"))
        .with_panel(
            timeseries.Panel()
            .title("BER per link (upper bound dashed)")
            .description("Symbol errors / bits over the health window, and its upper confidence bound.")
            .with_target(query(_on_switch("ibfab_link_ber{F} > 0"), LINK_LEGEND))
            .with_target(query(_on_switch("ibfab_link_ber_upper{F}"), "upper " + LINK_LEGEND, ref="B"))
            .scale_distribution(ScaleDistributionConfig().type(common.ScaleDistribution.LOG).log(10))
            .override_by_query(
                "B", [DynamicConfigValue("custom.lineStyle", {"fill": "dash", "dash": [10, 10]})]
            )
            .unit("sci")
            .span(12)
            .height(8)
        )
        .with_panel(
            timeseries.Panel()
            .title("Link-downs and retrains per link")
            .description("Over the health window; both ends of a cable within the merge time count once.")
            .with_target(query(_on_switch("ibfab_link_downs{F} > 0"), "downs " + LINK_LEGEND))
            .with_target(
                query(_on_switch("ibfab_link_recoveries{F} > 0"), "retrains " + LINK_LEGEND, ref="B")
            )
            .span(12)
            .height(8)
        )
        # -- leaf x spine
        .with_row(db.Row("Leaf x spine"))
        .with_panel(
            table.Panel()
            .title("Leaf x spine health (worst link score per pair)")
            .description("Rows are leaves, columns spines; each cell the lowest score of their cables.")
            .with_target(query(_leaf_spine("ibfab_link_health_score"), instant=True))
            .with_transformation(
                DataTransformerConfig(
                    id_val="groupingToMatrix",
                    options={"columnField": "spine", "rowField": "leaf", "valueField": "Value"},
                )
            )
            .thresholds(score_colors)
            .cell_options(common.TableColoredBackgroundCellOptions())
            .span(24)
            .height(10)
        )
        # -- counters per port
        .with_row(db.Row("Counters per port"))
        .with_panel(
            timeseries.Panel()
            .title("Symbol errors per switch port")
            .description("Increase per interval of the raw counter (sticky: see the saturated table).")
            .with_target(
                query(
                    f"increase({counter_metric_name('switch', 'symbol_errors')}"
                    f'{{{F},switch=~"$switch"}}[$__rate_interval]) > 0',
                    "{{switch}}:{{port}} -> {{remote_name}}",
                )
            )
            .span(12)
            .height(8)
        )
        .with_panel(
            timeseries.Panel()
            .title("Data per switch port")
            .with_target(
                query(
                    f"rate({counter_metric_name('switch', 'xmit_data')}"
                    f'{{{F},switch=~"$switch"}}[$__rate_interval])',
                    "{{switch}}:{{port}} -> {{remote_name}}",
                )
            )
            .unit("Bps")
            .fill_opacity(10)
            .span(12)
            .height(8)
        )
        .with_panel(
            table.Panel()
            .title("Error counters per switch port, with the saturated flag")
            .description(
                "Raw readings of the latest snapshot. 'saturated' counts the port's sticky counters at "
                "their maximum: their true counts are higher and their rates read 0."
            )
            .targets(_port_counter_queries(query))
            .with_transformation(DataTransformerConfig(id_val="merge", options={}))
            .filterable(True)
            .span(24)
            .height(10)
        )
    )
    built = board.build()
    out: dict[str, Any] = json.loads(json.dumps(built, cls=JSONEncoder))
    return out


def _organize(columns: list[str]) -> Any:
    """Keep ``columns`` of a table query, in that order."""
    from grafana_foundation_sdk.models.dashboard import DataTransformerConfig

    return DataTransformerConfig(
        id_val="organize",
        options={
            "excludeByName": {"Time": True, "__name__": True, "job": True},
            "indexByName": {c: i for i, c in enumerate(columns)},
        },
    )


def _port_counter_queries(query: Any) -> list[Any]:
    labels = "instance, guid, port, switch, remote_name, remote_port"
    out = [
        query(
            f"sum by ({labels}) ({counter_metric_name('switch', name)}" + '{%s,switch=~"$switch"})' % F,  # noqa: UP031
            instant=True,
            ref=chr(ord("A") + i),
        )
        for i, name in enumerate(PORT_COUNTERS)
    ]
    saturated = (
        f"count by ({labels}) (label_replace({SATURATED_METRIC}"
        + '{%s,kind="switch",name=~"$switch"}, "switch", "$1", "name", "(.*)"))' % F  # noqa: UP031
    )
    out.append(query(saturated, instant=True, ref=chr(ord("A") + len(PORT_COUNTERS))))
    return out


def dashboard_queries(board: dict[str, Any]) -> Iterator[str]:
    """Every PromQL expression of the dashboard: panel targets and variable queries."""
    for var in board["templating"]["list"]:
        q = var.get("query")
        if isinstance(q, dict):
            yield _label_values(q["query"])
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            yield target["expr"]


def _label_values(text: str) -> str:
    """The series selector inside Grafana's ``label_values(SELECTOR, label)``."""
    m = re.fullmatch(r"label_values\((.*),\s*\w+\)", text)
    return m.group(1) if m else text


def with_sample_variables(expr: str) -> str:
    """``expr`` with the dashboard's variables and Grafana's macros as Grafana would fill them in."""
    for name in sorted(SAMPLE_VARIABLES, key=len, reverse=True):
        expr = expr.replace(name, SAMPLE_VARIABLES[name])
    return expr


def dashboard_json(datasource_uid: str = "${datasource}") -> str:
    return json.dumps(grafana_dashboard(datasource_uid), indent=2) + "\n"
