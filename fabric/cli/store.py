"""``ibfab store check|repair``: the store's own health."""

from __future__ import annotations

import dataclasses

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import build_session

_DB = click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    from fabric.core.units import parse_duration
    from topology.errors import UsageError

    if value is None:
        return None
    try:
        return parse_duration(value, f"--{param.name}")
    except UsageError as exc:
        raise click.BadParameter(str(exc)) from None


@click.group("store")
def store_group() -> None:
    """The store itself: its size and retention, check every stored blob, set damage aside."""


@store_group.command("check")
@_DB
@click.option("--quick", is_flag=True, help="Skip SQLite's check of every page (the blobs are still read).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def check_cmd(db: str | None, quick: bool, as_json: bool) -> None:
    """Read every page, counter snapshot, topology and capture once; exit 1 if any is damaged."""
    from fabric.app.storecare.check import check_store
    from fabric.cli.progress import status
    from fabric.present.store import check_report

    with status("reading every page and blob"):
        check = check_store(build_session(db=db).store, pages=not quick)
    if as_json:
        write_json(
            {
                "path": str(check.path),
                "ok": check.ok,
                "damage": [dataclasses.asdict(d) for d in check.damage],
                "quarantine": [dataclasses.asdict(q) for q in check.quarantine],
            }
        )
    else:
        click.echo(check_report(check))
    if not check.ok:
        raise SystemExit(1)


@store_group.command("repair")
@_DB
@click.option("--dry-run", is_flag=True, help="Only say what would be set aside.")
def repair_cmd(db: str | None, dry_run: bool) -> None:
    """Mend the store's header, schema and indexes; copy what reads out of damaged pages into a
    new file (the damaged one kept); set damaged snapshots, topologies, captures and values aside
    in the quarantine (their bytes kept as they were). Exit 1 if damage is left."""
    from fabric.app.storecare.check import repair_store
    from fabric.cli.progress import status
    from fabric.present.store import repair_report

    with status("checking the store"):
        repair = repair_store(build_session(db=db).store, dry_run=dry_run)
    click.echo(repair_report(repair))
    if repair.left:
        raise SystemExit(1)


@store_group.command("info")
@_DB
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def info_cmd(db: str | None, as_json: bool) -> None:
    """Size, spans of raw and hourly history, the collection rate and the size it projects to."""
    from fabric.app.storecare.retention import store_info
    from fabric.present.store import info_report

    info = store_info(build_session(db=db).store)
    if as_json:
        write_json(dataclasses.asdict(info))
    else:
        click.echo(info_report(info))


@store_group.command("compact")
@_DB
@click.option(
    "--raw", metavar="DURATION", callback=_duration, help="Keep every snapshot this long (default 7d)."
)
@click.option(
    "--hourly", metavar="DURATION", callback=_duration, help="Keep hourly points this long (default 90d)."
)
@click.option(
    "--findings",
    metavar="DURATION",
    callback=_duration,
    help="Keep findings history this long (default 365d).",
)
@click.option(
    "--captures", metavar="DURATION", callback=_duration, help="Keep raw tool output this long (default 1d)."
)
@click.option("--save", is_flag=True, help="Keep these spans as the store's policy (the daemon applies it).")
def compact_cmd(
    db: str | None,
    raw: float | None,
    hourly: float | None,
    findings: float | None,
    captures: float | None,
    save: bool,
) -> None:
    """Fold raw snapshots older than --raw into hourly points, drop what is past every span.

    Each hour is its own short transaction: collectors keep writing meanwhile, and a compaction
    stopped at any moment loses nothing."""
    from fabric.app.storecare.retention import compact_store
    from fabric.cli.progress import status
    from fabric.present.store import compact_report

    with status("compacting"):
        result, used = compact_store(
            build_session(db=db).store,
            raw_s=raw,
            hourly_s=hourly,
            findings_s=findings,
            captures_s=captures,
            save=save,
        )
    click.echo(compact_report(result, used))
