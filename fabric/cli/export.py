"""``ibfab export slurm-topology|k8s-labels|kueue|hostfile|json``: the fabric as schedulers read it.

Data goes to stdout; what was left out (aggregation nodes, unnamed HCAs, ...) goes to stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from fabric.cli.options import discover_from, source_options

if TYPE_CHECKING:
    from fabric.app.discover import Discovery
    from fabric.exports import Export
    from fabric.placement import PlacementHealth

# source_options and discover_from live in fabric.cli.options; re-exported for older imports.
__all__ = ["discover_from", "emit", "export_group", "health_from_store", "source_options"]


def health_from_store(d: Discovery, db: str | None, hours: float) -> PlacementHealth:
    from fabric.app.place import placement_health

    return placement_health(d, db, hours)


def emit(result: Export) -> None:
    click.echo(result.text, nl=False)
    for item in result.left_out:
        click.echo(f"left out: {item}", err=True)


def _tree(d: Discovery) -> Any:
    from fabric.exports.tree import build_tree

    return build_tree(d.fabric, d.classification)


@click.group("export")
def export_group() -> None:
    """Write the fabric for schedulers: Slurm, Kubernetes, Kueue, MPI hostfiles, JSON."""


@export_group.command("slurm-topology")
@source_options
@click.option("--plugin", type=click.Choice(["tree", "block"]), default="tree", show_default=True)
def slurm_cmd(plugin: str, **opts: Any) -> None:
    """A topology.conf: units (or leaves) as the nodes' switches, spines and cores above."""
    from fabric.exports.slurm import topology_conf

    emit(topology_conf(_tree(discover_from(opts)), plugin))


@export_group.command("k8s-labels")
@source_options
@click.option("--format", "fmt", type=click.Choice(["kubectl", "json"]), default="kubectl", show_default=True)
@click.option(
    "--legacy", "style", flag_value="legacy", help="network.topology.nvidia.com/leaf|spine|core only."
)
@click.option(
    "--tier-n", "style", flag_value="tier-n", default=True, help="fabric.topograph.run/tier-N (default)."
)
@click.option("--both", "style", flag_value="both", help="Both key sets.")
@click.option("--health", "with_health", is_flag=True, help="Add ibfab.io/health from the store's counters.")
@click.option("--health-hours", type=float, default=24.0, show_default=True, help="Health window.")
def k8s_cmd(
    fmt: str, style: str, with_health: bool, health_hours: float, db: str | None, **opts: Any
) -> None:
    """kubectl label lines (or JSON) with topograph's tier keys."""
    from fabric.exports.k8s import k8s_labels

    d = discover_from(opts, db)
    health = health_from_store(d, db, health_hours) if with_health else None
    emit(k8s_labels(_tree(d), style, fmt, health))


@export_group.command("kueue")
@source_options
@click.option("--name", default="ibfab-fabric", show_default=True, help="metadata.name of the Topology.")
@click.option("--legacy", is_flag=True, help="Levels in the network.topology.nvidia.com keys.")
def kueue_cmd(name: str, legacy: bool, **opts: Any) -> None:
    """A Kueue Topology resource whose levels are the k8s-labels keys."""
    from fabric.exports.kueue import kueue_topology

    emit(kueue_topology(_tree(discover_from(opts)), name, legacy))


@export_group.command("hostfile")
@source_options
@click.option("--style", type=click.Choice(["openmpi", "mpich"]), default="openmpi", show_default=True)
@click.option("--slots", type=int, default=1, show_default=True, help="Slots (ranks) per host.")
def hostfile_cmd(style: str, slots: int, **opts: Any) -> None:
    """Every compute host in ring order (unit, leaf, name)."""
    from fabric.exports import Export
    from fabric.exports.hostfile import hostfile
    from fabric.placement import ring_order

    tree = _tree(discover_from(opts))
    emit(Export(hostfile(ring_order(tree.sites, tree.sites.hosts), style, slots), tree.left_out()))


@export_group.command("json")
@source_options
@click.option("--health", "with_health", is_flag=True, help="Add each host's health from the store.")
@click.option("--health-hours", type=float, default=24.0, show_default=True)
def json_cmd(with_health: bool, health_hours: float, db: str | None, **opts: Any) -> None:
    """One document for scheduler plugins: hosts with unit, leaf per rail, spines, health."""
    from fabric.exports.json import scheduler_json

    d = discover_from(opts, db)
    health = health_from_store(d, db, health_hours) if with_health else None
    emit(scheduler_json(d.fabric, d.classification, _tree(d), health))


@export_group.command("prometheus-rules")
@click.option("--thresholds", metavar="FILE.toml", help="Health thresholds, as ibfab health takes them.")
@click.option("--job", default="ibfab", show_default=True, help="Prometheus job that scrapes ibfab exporter.")
@click.option(
    "--window",
    default="130m",
    show_default=True,
    metavar="DURATION",
    help="The exporter's --window (used in the commands that confirm an alert).",
)
def prometheus_rules_cmd(thresholds: str | None, job: str, window: str) -> None:
    """Alerting and recording rules for `ibfab exporter` (load with rule_files: in prometheus.yml)."""
    from fabric.app.health import load_thresholds
    from fabric.core.units import parse_duration
    from fabric.exports.alert_rules import alert_rules, rules_header
    from fabric.health import HealthThresholds

    t = load_thresholds(thresholds) if thresholds else HealthThresholds()
    window_s = parse_duration(window, "--window")
    click.echo(
        alert_rules(t, job=job, window_s=window_s).to_yaml(rules_header(thresholds, job, window_s)), nl=False
    )


@export_group.command("grafana-dashboard")
@click.option(
    "--datasource-uid",
    default="${datasource}",
    show_default=True,
    help="Prometheus data source uid (default: the dashboard's data source variable).",
)
def grafana_dashboard_cmd(datasource_uid: str) -> None:
    """A Grafana dashboard (JSON) for `ibfab exporter`: import it, or provision it from a file."""
    from fabric.exports.grafana import dashboard_json

    click.echo(dashboard_json(datasource_uid), nl=False)
