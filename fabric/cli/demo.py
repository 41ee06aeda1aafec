"""``ibfab demo``: the main job on a simulated fabric with planted faults."""

from __future__ import annotations

import click


@click.command("demo")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option(
    "--keep/--no-keep", default=True, help="Leave the lab fabric running afterwards (default: keep)."
)
def demo_cmd(db: str | None, keep: bool) -> None:
    """Bring up a lab fabric with planted faults and show what ibfab finds."""
    from fabric.app.lab.demo import DEMO_LAB, demo_db_path, demo_source, run_demo, stop_demo_lab
    from fabric.cli.options import build_session
    from fabric.present.demo import render_step

    session = build_session(db=str(demo_db_path(db)), source=demo_source())
    failed = False
    try:
        for step in run_demo(session):
            click.echo(f"\n== {step.title}\n{render_step(step)}")
            failed |= not step.ok
    finally:
        if not keep:
            stop_demo_lab()
    if keep:
        click.echo(
            f"\nThe lab fabric {DEMO_LAB!r} is still running: try `ibfab discover --lab {DEMO_LAB}`; "
            f"stop it with `ibfab lab down --name {DEMO_LAB}`."
        )
    if failed:
        raise click.exceptions.Exit(1)
