"""``ibfab export slurm-topology|k8s-labels|kueue|hostfile|json|prometheus-rules|grafana-dashboard|systemd``:
the fabric as schedulers and monitoring read it (use cases in :mod:`fabric.app.exports.export`).

Data goes to stdout; what was left out (aggregation nodes, unnamed HCAs, ...) goes to stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from fabric.cli.options import build_session, discover_from, discover_in, source_options, source_session

if TYPE_CHECKING:
    from fabric.exports import Export

# source_options and discover_from live in fabric.cli.options; re-exported for older imports.
__all__ = ["discover_from", "emit", "export_group", "source_options"]


def emit(result: Export) -> None:
    from fabric.present.placement import left_out_line

    click.echo(result.text, nl=False)
    line = left_out_line(result.skipped)
    if line:
        click.echo(line, err=True)
    for item in result.left_out:
        click.echo(f"left out: {item}", err=True)
    for unfit in result.unfit:
        click.echo(f"left out: {unfit}", err=True)


include_service = click.option(
    "--include-service",
    is_flag=True,
    help="Take service hosts too (login, storage, UFM: hosts of another shape than the compute hosts).",
)


@click.group("export")
def export_group() -> None:
    """Write the fabric for schedulers: Slurm, Kubernetes, Kueue, MPI hostfiles, JSON."""


@export_group.command("slurm-topology")
@source_options
@click.option("--plugin", type=click.Choice(["tree", "block"]), default="tree", show_default=True)
@include_service
def slurm_cmd(plugin: str, include_service: bool, **opts: Any) -> None:
    """A topology.conf: units (or leaves) as the nodes' switches, spines and cores above."""
    from fabric.app.exports.export import slurm_topology

    emit(slurm_topology(discover_from(opts), plugin, include_service))


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
@include_service
def k8s_cmd(
    fmt: str,
    style: str,
    with_health: bool,
    health_hours: float,
    include_service: bool,
    db: str | None,
    **opts: Any,
) -> None:
    """kubectl label lines (or JSON) with topograph's tier keys."""
    from fabric.app.exports.export import k8s

    session = source_session(opts, db)
    emit(
        k8s(
            discover_in(session),
            style,
            fmt,
            session.store,
            health_hours if with_health else None,
            include_service,
        )
    )


@export_group.command("kueue")
@source_options
@click.option("--name", default="ibfab-fabric", show_default=True, help="metadata.name of the Topology.")
@click.option("--legacy", is_flag=True, help="Levels in the network.topology.nvidia.com keys.")
@include_service
def kueue_cmd(name: str, legacy: bool, include_service: bool, **opts: Any) -> None:
    """A Kueue Topology resource whose levels are the k8s-labels keys."""
    from fabric.app.exports.export import kueue

    emit(kueue(discover_from(opts), name, legacy, include_service))


@export_group.command("hostfile")
@source_options
@click.option("--style", type=click.Choice(["openmpi", "mpich"]), default="openmpi", show_default=True)
@click.option(
    "--slots",
    type=click.IntRange(1),
    help="Slots (ranks) per host (default: one per GPU where the fabric tells: the HCAs of a "
    "compute host on a rail-optimized fabric; else 1).",
)
@include_service
def hostfile_cmd(style: str, slots: int | None, include_service: bool, **opts: Any) -> None:
    """Every compute host in ring order (unit, leaf, name), with its slots (the rule on stderr)."""
    from fabric.app.exports.export import mpi_hostfile
    from fabric.present.placement import slots_line

    doc, per_host = mpi_hostfile(discover_from(opts), style, slots, include_service)
    emit(doc)
    click.echo(slots_line(per_host), err=True)


@export_group.command("json")
@source_options
@click.option("--health", "with_health", is_flag=True, help="Add each host's health from the store.")
@click.option("--health-hours", type=float, default=24.0, show_default=True)
@include_service
def json_cmd(
    with_health: bool, health_hours: float, include_service: bool, db: str | None, **opts: Any
) -> None:
    """One document for scheduler plugins: hosts with unit, leaf per rail, spines, health."""
    from fabric.app.exports.export import scheduler_document

    session = source_session(opts, db)
    emit(
        scheduler_document(
            discover_in(session), session.store, health_hours if with_health else None, include_service
        )
    )


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
    from fabric.app.exports.export import prometheus_rules

    emit(prometheus_rules(build_session(thresholds=thresholds), job, window))


@export_group.command("grafana-dashboard")
@click.option(
    "--datasource-uid",
    default="${datasource}",
    show_default=True,
    help="Prometheus data source uid (default: the dashboard's data source variable).",
)
def grafana_dashboard_cmd(datasource_uid: str) -> None:
    """A Grafana dashboard (JSON) for `ibfab exporter`: import it, or provision it from a file."""
    from fabric.app.exports.export import grafana_dashboard

    emit(grafana_dashboard(datasource_uid))


@export_group.command("systemd")
@click.option(
    "--ibfab",
    "ibfab_path",
    metavar="PATH",
    help="The ibfab command the units run (default: this installation's, e.g. /opt/ibfab/.venv/bin/ibfab).",
)
@click.option("--user", default="ibfab", show_default=True, help="The system user both units run as.")
@click.option(
    "--db", metavar="PATH", help="The store (default: /var/lib/ibfab/ibfab.db, the StateDirectory)."
)
@click.option(
    "--listen",
    default="127.0.0.1:9315",
    show_default=True,
    metavar="HOST:PORT",
    help="The exporter's address.",
)
@click.option(
    "--grace", default=60.0, show_default=True, type=click.FloatRange(min=0), help="The daemon's --grace."
)
@click.option(
    "-o",
    "--output-dir",
    metavar="DIR",
    help="Write ibfab-daemon.service, ibfab-exporter.service and ibfab.conf (sysusers) there.",
)
def systemd_cmd(
    ibfab_path: str | None, user: str, db: str | None, listen: str, grace: float, output_dir: str | None
) -> None:
    """systemd units for 'ibfab daemon' and 'ibfab exporter', and the sysusers file of their user.

    Both run as a dedicated system user with the store in /var/lib/ibfab (StateDirectory, also the
    user's home: SSH keys for sweeps), Restart=on-failure and sandboxing; the daemon may open the
    HCA's MAD devices only, the exporter no device. Install: copy the units to /etc/systemd/system,
    ibfab.conf to /usr/lib/sysusers.d, then systemd-sysusers; systemctl daemon-reload; systemctl
    enable --now ibfab-daemon ibfab-exporter.
    """
    from fabric.app.exports.export import systemd_units
    from topology.errors import UsageError

    files = systemd_units(ibfab_path, user, db, listen, grace)
    if output_dir is None:
        for name, text in files.items():
            click.echo(f"# ---- {name} ----")
            click.echo(text, nl=not text.endswith("\n"))
        return
    from pathlib import Path

    out = Path(output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (out / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{output_dir}: {exc.strerror or exc}") from exc
    click.echo(f"wrote {', '.join(files)} to {out}", err=True)
