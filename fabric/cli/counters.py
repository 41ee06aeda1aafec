"""``ibfab counters collect``: read every port's counters into the store, once or on an interval."""

from __future__ import annotations

import click

from fabric.cli.jsonout import write_json_line
from fabric.cli.options import build_session, chosen_source, ssh_options


def _every(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    from fabric.core.units import parse_duration
    from topology.errors import UsageError

    if value is None:
        return None
    try:
        return parse_duration(value)
    except UsageError as exc:
        raise click.BadParameter(str(exc)) from None


@click.group("counters")
def counters_group() -> None:
    """Port counters: collect them into the store (see also `ibfab health`)."""


@counters_group.command("collect")
@click.option("--lab", metavar="NAME", help="Read a lab fabric with the real tools.")
@click.option("--ssh", metavar="HOST", help="Run the tools on a management host over SSH.")
@click.option(
    "--ibdiagnet",
    "ibdiagnet_dir",
    metavar="DIR",
    help="Store the port counters of an ibdiagnet run (PM_INFO, else ibdiagnet2.pm) instead; once.",
)
@ssh_options
@click.option(
    "--every",
    metavar="DURATION",
    callback=_every,
    help="Time between collections: 30s, 5m, 1h (default 60s).",
)
@click.option("--count", type=click.IntRange(min=1), help="Stop after N collections (default: until Ctrl-C).")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per snapshot instead of a line.")
def collect_cmd(
    lab: str | None,
    ssh: str | None,
    ibdiagnet_dir: str | None,
    inventory: str | None,
    known_hosts: str | None,
    accept_new_host_key: bool,
    identity: str | None,
    every: float | None,
    count: int | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Discover the fabric and store every port's counters (unreachable ports included).

    Runs until Ctrl-C (exit 130) unless --count is given; a failed collection prints one line,
    is recorded as a failed run, and the loop goes on. With --ibdiagnet DIR the counters that
    ibdiagnet run read are stored once, as a snapshot taken at the run's time.
    """
    if ibdiagnet_dir:
        _store_ibdiagnet(ibdiagnet_dir, lab, ssh, every, count, db, as_json)
        return
    from fabric.app.health.collect import SnapshotOutcome, collect_loop
    from fabric.present.counters import snapshot_line
    from topology.errors import IbfabError

    session = build_session(
        db=db,
        source=chosen_source(db, None, ssh, lab),
        inventory=inventory,
        known_hosts=known_hosts,
        accept_new_host_key=accept_new_host_key,
        identity=identity,
    )
    last_error: list[IbfabError] = []

    def stored(outcome: SnapshotOutcome) -> None:
        write_json_line(outcome.to_dict()) if as_json else click.echo(snapshot_line(outcome))

    def failed(exc: IbfabError) -> None:
        last_error.append(exc)
        click.echo(f"ibfab: collection failed: {exc.one_line()}", err=True)

    try:
        done, n_failed = collect_loop(session, every if every is not None else 60.0, count, stored, failed)
    except KeyboardInterrupt:
        click.echo("ibfab: interrupted; every stored snapshot is complete", err=True)
        raise click.exceptions.Exit(130) from None
    if n_failed and not done:
        raise last_error[-1]


def _store_ibdiagnet(
    path: str,
    lab: str | None,
    ssh: str | None,
    every: float | None,
    count: int | None,
    db: str | None,
    as_json: bool,
) -> None:
    from fabric.app.discovery.ibdiagnet import import_ibdiagnet_run
    from fabric.present.counters import stored_run_line
    from topology.errors import UsageError

    if lab or ssh:
        raise UsageError("choose one of --lab, --ssh, --ibdiagnet")
    if every is not None or count is not None:
        raise UsageError("--every and --count do not apply to --ibdiagnet (a run is stored once)")
    run = import_ibdiagnet_run(build_session(db=db).store, path)
    write_json_line(run.to_dict()) if as_json else click.echo(stored_run_line(run))
