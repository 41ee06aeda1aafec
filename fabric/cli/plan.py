"""``ibfab topology check --plan FILE`` and ``ibfab export plan``: the fabric against its cable plan.

Registered under the ``topology`` and ``export`` groups by :mod:`fabric.cli.main`.
"""

from __future__ import annotations

from typing import Any

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import discover_from, discover_in, source_options, source_session

# Exit codes of `topology check` (errors keep theirs: 2 usage, 3 unreadable plan or capture, ...).
EXIT_DIFFERS = 10
EXIT_UNCHECKED = 11


@click.command("check")
@click.option(
    "--plan",
    "plans",
    metavar="FILE",
    multiple=True,
    required=True,
    help="A cable plan (UFM NDT CSV); repeat for a site's several plans.",
)
@source_options
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--all", "show_all", is_flag=True, help="List every item, not the first 40 of each kind.")
@click.option(
    "--save",
    is_flag=True,
    help="Keep the plan(s) in the store (--db): ibfab status then checks the fabric against them.",
)
def check_cmd(plans: tuple[str, ...], as_json: bool, show_all: bool, save: bool, **opts: Any) -> None:
    """Compare the fabric with its cable plan: miswired, missing, not in the plan, slower than planned.

    \b
    Exit status:
      0   the fabric matches the plan (every planned cable checked)
      10  the fabric differs from the plan
      11  no difference found, but some planned cables could not be checked
          (a name shared by several nodes, a port the plan cables twice)
      2, 3, ...  usage error, unreadable plan or capture (one line on stderr)
    """
    from fabric.app.discovery.cableplan import check_against_plans, plan_check_to_dict, save_plans

    session = source_session(opts)
    d = discover_in(session)
    check = check_against_plans(d, plans)
    if save:
        saved = save_plans(plans, session.store)
        click.echo(f"ibfab: kept {saved} plan file(s) in the store for ibfab status", err=True)
    if as_json:
        write_json(plan_check_to_dict(check, d))
    else:
        from fabric.present.plan import render_check

        click.echo(render_check(check, d.source, limit=None if show_all else 40))
    ctx = click.get_current_context()
    if check.differs:
        ctx.exit(EXIT_DIFFERS)
    if check.unchecked:
        ctx.exit(EXIT_UNCHECKED)


@click.command("plan")
@source_options
@click.option("--no-speed", is_flag=True, help="Only UFM's five columns (no Speed column to check against).")
@click.option("-o", "--output", metavar="FILE", help="Write the plan here instead of stdout.")
def export_plan_cmd(no_speed: bool, output: str | None, **opts: Any) -> None:
    """Today's fabric as a cable plan (UFM NDT, five-column form), to check tomorrow's against.

    Each cable's width and speed go in a sixth column, Speed (4xHDR), which UFM ignores and
    `ibfab topology check` compares. A director's backplane and aggregation-node links are
    not cables and are left out; nodes without a unique name are written by GUID.
    """
    from fabric.app.discovery.cableplan import fabric_as_plan

    written = fabric_as_plan(discover_from(opts), with_speed=not no_speed, output=output)
    for unfit in written.unfit:
        click.echo(f"left out: {unfit}", err=True)
    if output:
        click.echo(f"wrote {written.cables} cables to {output}", err=True)
        return
    click.echo(written.text, nl=False)
