"""``ibfab store check|repair``: the store's own health."""

from __future__ import annotations

import dataclasses
import json

import click

_DB = click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")


@click.group("store")
def store_group() -> None:
    """The store itself: check every stored blob, set damaged snapshots aside."""


@store_group.command("check")
@_DB
@click.option("--quick", is_flag=True, help="Skip SQLite's check of every page (the blobs are still read).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def check_cmd(db: str | None, quick: bool, as_json: bool) -> None:
    """Read every page, counter snapshot, topology and capture once; exit 1 if any is damaged."""
    from fabric.app.storecare import check_store
    from fabric.present.store import check_report

    check = check_store(db, pages=not quick)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "path": str(check.path),
                    "ok": check.ok,
                    "damage": [dataclasses.asdict(d) for d in check.damage],
                    "quarantine": [dataclasses.asdict(q) for q in check.quarantine],
                },
                indent=1,
            )
        )
    else:
        click.echo(check_report(check))
    if not check.ok:
        raise SystemExit(1)


@store_group.command("repair")
@_DB
@click.option("--dry-run", is_flag=True, help="Only say what would be set aside.")
def repair_cmd(db: str | None, dry_run: bool) -> None:
    """Set damaged snapshots, topologies and captures aside in the store's quarantine (their
    blobs are kept as they were); readers then stop warning about them."""
    from fabric.app.storecare import repair_store
    from fabric.present.store import repair_report

    repair = repair_store(db, dry_run=dry_run)
    click.echo(repair_report(repair))
    if repair.file_damage:
        raise SystemExit(1)
