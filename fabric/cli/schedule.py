"""``ibfab schedule add|list|remove`` and ``ibfab daemon``: recurring collections and sweeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import build_session, ssh_options
from fabric.cli.slurm import SLURM_OPTION_KEYS, slurm_choice, slurm_sweep_options
from topology.errors import UsageError


@click.group("schedule")
def schedule_group() -> None:
    """Recurring counter collections and sweeps, run by `ibfab daemon`."""


@click.command("sweep-job", add_help_option=False)
@click.option("--pattern", type=click.Choice(["rail-pairs", "pairwise", "leaf-pairs", "custom"]))
@click.option("--pairs", metavar="FILE")
@click.option("--input", "input_path", metavar="TOPO")
@click.option("--routes", metavar="DUMP")
@click.option("--per-host", is_flag=True, default=None)
@click.option("--no-retest", is_flag=True, default=None)
@click.option("--timeout", type=click.FloatRange(min=1))
@slurm_sweep_options
def _sweep_job(**_: Any) -> None:
    """The options a sweep job takes after '--' (those of `ibfab sweep run`)."""


def _sweep_args(extra: tuple[str, ...]) -> dict[str, Any]:
    try:
        ctx = _sweep_job.make_context("schedule add -- (sweep)", list(extra), resilient_parsing=False)
    except click.ClickException as exc:
        raise UsageError(f"sweep job arguments {' '.join(extra)!r}: {exc.format_message()}") from None
    p = ctx.params
    out: dict[str, Any] = {}
    for key, name in (
        ("pattern", "pattern"),
        ("pairs", "pairs"),
        ("input", "input_path"),
        ("routes", "routes"),
    ):
        if p.get(name) is not None:
            out[key] = p[name]
    if p.get("per_host"):
        out["per_host"] = True
    if p.get("no_retest"):
        out["retest"] = False
    if p.get("timeout") is not None:
        out["timeout"] = p["timeout"]
    slurm_choice(*(p[k] for k in SLURM_OPTION_KEYS))  # refuses Slurm options without --launcher slurm
    if p.get("launcher") == "slurm":
        out.update({k: p[k] for k in SLURM_OPTION_KEYS if p.get(k) not in (None, False)})
        if p.get("node_map") is not None:
            out["node_map"] = str(Path(p["node_map"]).resolve())  # the daemon may run elsewhere
    if out.get("pattern") == "custom" and "pairs" not in out:
        raise UsageError("sweep job: --pattern custom needs --pairs FILE")
    return out


@schedule_group.command("add", context_settings={"ignore_unknown_options": False})
@click.argument("name")
@click.option("--kind", type=click.Choice(["counters", "sweep"]), required=True, help="What to run.")
@click.option("--every", metavar="INTERVAL", help="30s, 5m, 1h, 1d.")
@click.option("--cron", metavar="'M H DOM MON DOW'", help="Five cron fields (*, N, A-B, */N, lists).")
@click.option("--lab", metavar="NAME", help="Against a lab fabric (a sweep uses its simulated traffic).")
@click.option("--ssh", metavar="HOST", help="Counters: run the tools on a management host over SSH.")
@ssh_options
@click.option("--disabled", is_flag=True, help="Add it switched off.")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.argument("extra", nargs=-1, metavar="[-- SWEEP OPTIONS]")
def add_cmd(
    name: str,
    kind: str,
    every: str | None,
    cron: str | None,
    lab: str | None,
    ssh: str | None,
    inventory: str | None,
    known_hosts: str | None,
    accept_new_host_key: bool,
    identity: str | None,
    disabled: bool,
    db: str | None,
    extra: tuple[str, ...],
) -> None:
    """Add schedule NAME: a counter collection or a sweep, every INTERVAL or by cron.

    \b
      ibfab schedule add counters-5m --kind counters --every 5m --lab demo
      ibfab schedule add nightly --kind sweep --cron "0 2 * * *" --lab demo -- --pattern pairwise
      ibfab schedule add weekly --kind sweep --cron "0 3 * * 0" -- --input fabric.topo --launcher slurm --partition gpu --idle
    """
    from fabric.app.daemon.schedules import add_schedule
    from fabric.core.timing import Timing
    from fabric.present.jobs import schedule_added_line

    timing = Timing.parse(every, cron)
    args: dict[str, Any] = {}
    for key, value in (
        ("lab", lab),
        ("ssh", ssh),
        ("inventory", inventory),
        ("known_hosts", known_hosts),
        ("identity", identity),
    ):
        if value is not None:
            args[key] = value
    if accept_new_host_key:
        args["accept_new_host_key"] = True
    if kind == "sweep":
        args.update(_sweep_args(extra))
    elif extra:
        raise UsageError(f"a counters schedule takes no job arguments, got {' '.join(extra)!r}")
    added = add_schedule(build_session(db=db).store, name, kind, timing, args, enabled=not disabled)
    click.echo(schedule_added_line(added))


@schedule_group.command("list")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cmd(db: str | None, as_json: bool) -> None:
    """Every schedule with its last run, next run and last result."""
    from fabric.app.daemon.schedules import schedule_statuses, schedule_to_dict
    from fabric.present.jobs import render_schedules

    statuses = schedule_statuses(build_session(db=db).store)
    if as_json:
        write_json([schedule_to_dict(st) for st in statuses])
        return
    click.echo(render_schedules(statuses))


@schedule_group.command("remove")
@click.argument("name")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
def remove_cmd(name: str, db: str | None) -> None:
    """Remove schedule NAME (its past runs stay in the store)."""
    from fabric.app.daemon.schedules import remove_schedule

    remove_schedule(build_session(db=db).store, name)
    click.echo(f"schedule {name} removed")


@click.command("daemon")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option("--once", is_flag=True, help="Run what is due now, wait for it, exit (for cron and tests).")
@click.option(
    "--max-runs", type=click.IntRange(min=1), help="Exit after starting N runs (and finishing them)."
)
@click.option("--workers", default=4, show_default=True, type=click.IntRange(1, 64), help="Jobs at once.")
@click.option(
    "--grace",
    default=60.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="On SIGTERM/SIGINT, seconds to wait for running jobs before ending their tools"
    " (a second signal ends them at once).",
)
def daemon_cmd(db: str | None, once: bool, max_runs: int | None, workers: int, grace: float) -> None:
    """Run due schedules until SIGTERM/SIGINT; one line per finished run; every run recorded."""
    import signal

    from fabric.serve.daemon import Daemon, RunReport

    def report(r: RunReport) -> None:
        click.echo(r.line())

    daemon = Daemon(
        build_session(db=db).store,  # each job builds its own session on this store
        workers=workers,
        grace_seconds=grace,
        on_report=report,
        on_note=lambda line: click.echo(f"ibfab daemon: {line}", err=True),
    )

    def on_signal(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        if not daemon.stopping:
            click.echo(f"ibfab daemon: {name}: finishing running jobs (again to end them now)", err=True)
        else:
            click.echo(f"ibfab daemon: {name} again: ending running jobs now", err=True)
        daemon.stop()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        reports = daemon.run(once=once, max_runs=max_runs)
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    failed = sum(1 for r in reports if not r.ok)
    click.echo(f"ibfab daemon: stopped after {len(reports)} runs, {failed} failed", err=True)
