"""``ibfab schedule add|list|remove`` and ``ibfab daemon``: recurring collections and sweeps."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import click

from fabric.cli.options import ssh_options
from topology.errors import UsageError

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


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
    """
    from fabric.core.timing import Timing
    from fabric.store import Store

    if not _NAME_RE.fullmatch(name):
        raise UsageError(f"schedule name {name!r}: use letters, digits, '.', '_' and '-'")
    timing = Timing.parse(every, cron)
    if lab and ssh:
        raise UsageError("choose one of --lab and --ssh")
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
        if ssh:
            raise UsageError("a sweep runs against --lab NAME or over SSH with --inventory FILE, not --ssh")
        args.update(_sweep_args(extra))
        if not lab and not inventory:
            raise UsageError("a sweep schedule needs --lab NAME or --inventory FILE (with -- --input TOPO)")
        if inventory and "input" not in args:
            raise UsageError("an SSH sweep schedule needs the fabric: add -- --input TOPO")
    elif extra:
        raise UsageError(f"a counters schedule takes no job arguments, got {' '.join(extra)!r}")
    with Store.open(db) as store:
        schedule_id = store.add_schedule(
            name,
            kind,
            interval_seconds=timing.interval_seconds,
            cron=None if timing.cron is None else timing.cron.text,
            args=args,
            enabled=not disabled,
            next_run=timing.first_run(time.time()),
        )
        added = store.schedule(schedule_id)
    click.echo(f"schedule {added.name} ({added.kind}, {timing.text}) added; next run {_when(added.next_run)}")


def _when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _source(args: Any) -> str:
    if args.get("lab"):
        return f"lab {args['lab']}"
    if args.get("ssh"):
        return f"ssh {args['ssh']}"
    if args.get("inventory"):
        return f"ssh {args['inventory']}"
    return "local"


@schedule_group.command("list")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cmd(db: str | None, as_json: bool) -> None:
    """Every schedule with its last run, next run and last result."""
    from fabric.core.units import duration_spec
    from fabric.present.table import table
    from fabric.store import Store

    with Store.open(db) as store:
        rows = [(s, next(iter(store.list_runs(s.id, limit=1)), None)) for s in store.list_schedules()]
    if as_json:
        doc = [
            {
                "name": s.name,
                "kind": s.kind,
                "interval_seconds": s.interval_seconds,
                "cron": s.cron,
                "args": dict(s.args),
                "enabled": s.enabled,
                "last_run": s.last_run,
                "next_run": s.next_run,
                "last_result": None
                if r is None
                else {
                    "run_id": r.id,
                    "started": r.started,
                    "finished": r.finished,
                    "ok": r.ok,
                    "error": r.error,
                },
            }
            for s, r in rows
        ]
        click.echo(json.dumps(doc, indent=1))
        return
    if not rows:
        click.echo("no schedules (add one with 'ibfab schedule add')")
        return
    out = []
    for s, r in rows:
        when = f"every {duration_spec(s.interval_seconds)}" if s.interval_seconds else f"cron {s.cron}"
        if r is None:
            result = "-"
        elif r.ok is None:
            result = "running"
        else:
            result = "ok" if r.ok else f"FAILED: {r.error}"
        enabled = "" if s.enabled else " (disabled)"
        out.append(
            (s.name + enabled, s.kind, when, _source(s.args), _when(s.last_run), _when(s.next_run), result)
        )
    click.echo(table(("NAME", "KIND", "WHEN", "SOURCE", "LAST RUN", "NEXT RUN", "LAST RESULT"), out))


@schedule_group.command("remove")
@click.argument("name")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
def remove_cmd(name: str, db: str | None) -> None:
    """Remove schedule NAME (its past runs stay in the store)."""
    from fabric.store import Store

    with Store.open(db) as store:
        store.delete_schedule(name)
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
    from pathlib import Path

    from fabric.serve.daemon import Daemon, RunReport
    from fabric.store import default_db_path

    def report(r: RunReport) -> None:
        click.echo(r.line())

    daemon = Daemon(
        Path(db) if db else default_db_path(),
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
