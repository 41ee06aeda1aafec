"""``ibfab export ...``: the fabric as schedulers and monitoring read it. Each use case returns an
:class:`fabric.exports.Export` (the text, and what was left out for stderr)."""

from __future__ import annotations

from fabric.app.discovery.discover import Discovery
from fabric.app.placement.place import placement_health
from fabric.app.session import Session, StoreAccess
from fabric.core.units import parse_duration
from fabric.exports import Export
from fabric.exports.alert_rules import alert_rules, rules_header
from fabric.exports.fitnames import fitting_tree
from fabric.exports.grafana import dashboard_json
from fabric.exports.hostfile import Slots, fabric_slots, hostfile
from fabric.exports.json import scheduler_json
from fabric.exports.k8s import k8s_labels
from fabric.exports.kueue import kueue_topology
from fabric.exports.slurm import topology_conf
from fabric.exports.tree import SchedulerTree, build_tree
from fabric.health import HealthThresholds
from fabric.placement import PlacementHealth, host_sites, ring_order
from topology.errors import UsageError
from topology.nameformats import HOSTFILE


def _tree(d: Discovery, include_service: bool = False) -> SchedulerTree:
    """The scheduler's tree of the compute hosts (and the service hosts with ``include_service``)."""
    return build_tree(d.fabric, d.classification, host_sites(d.fabric, d.classification, include_service))


def _health(d: Discovery, stored: StoreAccess | None, hours: float | None) -> PlacementHealth | None:
    """Each host's health from the store over the last ``hours`` (None: no health asked for)."""
    return None if hours is None else placement_health(d, stored or StoreAccess.at(), hours)


def slurm_topology(d: Discovery, plugin: str = "tree", include_service: bool = False) -> Export:
    return topology_conf(_tree(d, include_service), plugin)


def k8s(
    d: Discovery,
    style: str,
    fmt: str,
    stored: StoreAccess | None = None,
    health_hours: float | None = None,
    include_service: bool = False,
) -> Export:
    return k8s_labels(_tree(d, include_service), style, fmt, _health(d, stored, health_hours))


def kueue(d: Discovery, name: str, legacy: bool, include_service: bool = False) -> Export:
    return kueue_topology(_tree(d, include_service), name, legacy)


def mpi_hostfile(
    d: Discovery, style: str, slots: int | None, include_service: bool = False
) -> tuple[Export, Slots]:
    """Every compute host (and service host, with ``include_service``) in ring order (unit, leaf,
    name), each with its slots (``slots``, else as the fabric tells: fabric.exports.hostfile)."""
    tree, unfit = fitting_tree(_tree(d, include_service), HOSTFILE)
    hosts = ring_order(tree.sites, tree.sites.hosts)
    per_host = fabric_slots(d.classification, slots)
    return Export(
        hostfile(hosts, style, per_host),
        skipped=tree.sites.left_out,
        unfit=unfit,
    ), per_host


def scheduler_document(
    d: Discovery,
    stored: StoreAccess | None = None,
    health_hours: float | None = None,
    include_service: bool = False,
) -> Export:
    return scheduler_json(
        d.fabric, d.classification, _tree(d, include_service), _health(d, stored, health_hours)
    )


def prometheus_rules(session: Session, job: str, window: str) -> Export:
    """Alerting and recording rules for the exporter, from the thresholds ``ibfab health`` uses
    (the session's, read from ``--thresholds``)."""
    t = session.thresholds or HealthThresholds()
    source = str(session.thresholds_file) if session.thresholds_file is not None else None
    window_s = parse_duration(window, "--window")
    return Export(alert_rules(t, job=job, window_s=window_s).to_yaml(rules_header(source, job, window_s)), ())


def grafana_dashboard(datasource_uid: str) -> Export:
    return Export(dashboard_json(datasource_uid), ())


def systemd_units(
    ibfab: str | None = None,
    user: str = "ibfab",
    db: str | None = None,
    listen: str = "127.0.0.1:9315",
    grace_s: float = 60.0,
) -> dict[str, str]:
    """The daemon's and the exporter's units and the sysusers file, by file name; ``ibfab`` the
    command's absolute path (default: the ibfab beside this Python, the venv's)."""
    import shutil
    import sys
    from pathlib import Path

    from fabric.exports import systemd

    if ibfab is None:
        here = Path(sys.executable).parent / "ibfab"
        ibfab = str(here) if here.is_file() else shutil.which("ibfab") or "/usr/local/bin/ibfab"
    if not ibfab.startswith("/"):
        raise UsageError(f"--ibfab {ibfab!r}: systemd needs an absolute path")
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--listen {listen!r}: expected HOST:PORT, e.g. 127.0.0.1:9315")
    s = systemd.UnitSettings(str(Path(ibfab)), user, db or f"{systemd.STATE_DIR}/ibfab.db", listen, grace_s)
    return {
        systemd.DAEMON_UNIT: systemd.daemon_unit(s),
        systemd.EXPORTER_UNIT: systemd.exporter_unit(s),
        systemd.SYSUSERS: systemd.sysusers(s),
    }
