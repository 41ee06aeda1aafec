"""``ibfab routes`` (read, show, store the forwarding tables) and ``ibfab routes check`` (judge them)."""

from __future__ import annotations

from typing import Any

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import discover_in, source_options, source_session

EXIT_FINDINGS = 10  # routes check: an error-level finding


def _tables_option(fn: Any) -> Any:
    return click.option(
        "--tables",
        metavar="FILE",
        help="Saved forwarding tables (dump_lfts, dump_fts, ibroute, opensm-lfts.dump, opensm.fdbs, "
        "ibdiagnet2.fdbs); '-' for stdin. Without it: dump_fts where tools run, an ibdiagnet run's "
        "ibdiagnet2.fdbs, a snapshot's stored tables.",
    )(fn)


def _lanes_options(fn: Any) -> Any:
    for option in reversed(
        (
            click.option(
                "--sl2vl",
                metavar="FILE",
                help="SL-to-VL tables (smpquery sl2vl output, OpenSM's opensm-sl2vl.dump): credit loops per VL.",
            ),
            click.option(
                "--path-records",
                metavar="FILE",
                help="The SM's path records (saquery -p output): the SL of each route, for credit loops per VL.",
            ),
            click.option(
                "--lanes",
                "live_lanes",
                is_flag=True,
                help="Read the SL2VL tables (smpquery sl2vl) and path records (saquery -p) where tools run.",
            ),
        )
    ):
        fn = option(fn)
    return fn


def _read(opts: dict[str, Any], tables: str | None) -> tuple[Any, Any, Any]:
    """(session, discovery, tables read) from the source options: with none given, the store's
    newest snapshot (its stored tables), else this machine."""
    from fabric.app.routes import read_tables

    session = source_session(opts)
    d = discover_in(session)
    return session, d, read_tables(session, d, tables=tables)


@click.group("routes", invoke_without_command=True)
@source_options
@_tables_option
@click.option("--save", is_flag=True, help="Store the tables beside their topology snapshot (same id).")
@click.option("--label", help="A name for the topology snapshot stored with --save.")
@_lanes_options
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON form.")
@click.option("--all", "show_all", is_flag=True, help="List every switch, not the first 40.")
@click.pass_context
def routes_group(
    ctx: click.Context,
    /,
    tables: str | None,
    save: bool,
    label: str | None,
    sl2vl: str | None,
    path_records: str | None,
    live_lanes: bool,
    as_json: bool,
    show_all: bool,
    **opts: Any,
) -> None:
    """Read the fabric's unicast forwarding tables: show them, or store them with --save (with
    their lanes where given: --sl2vl and --path-records, or --lanes read live).

    \b
    ibfab routes --lab demo --save          # dump_fts on the lab, stored with a topology snapshot
    ibfab routes --lab demo --lanes --save  # ... with the SL2VL tables and path records
    ibfab routes --input a.topo --tables a.lfts
    ibfab routes check --snapshot latest    # judge the stored tables (per VL where lanes are stored)
    """
    lane_opts = (sl2vl, path_records, live_lanes)
    if ctx.invoked_subcommand is not None:
        if tables or save or label or as_json or show_all or any(lane_opts) or any(v for v in opts.values()):
            raise click.UsageError("give the options after the subcommand: ibfab routes check --lab NAME ...")
        return
    from fabric.app.routes import lanes_summary, read_lanes, save_routes, tables_summary
    from fabric.present.routes import render_tables, stored_line

    session, d, read = _read(opts, tables)
    lanes = None
    if any(lane_opts):
        lanes = read_lanes(session, d, sl2vl=sl2vl, path_records=path_records, live=live_lanes)
    summary = tables_summary(d, read.lfts)
    summary["lanes"] = lanes_summary(lanes)
    if save:
        sid = save_routes(d, read, session.store, label, lanes)
        summary["snapshot_id"] = sid
        click.echo(stored_line(sid, with_lanes=lanes is not None), err=True)
    if as_json:
        write_json(summary)
        return
    click.echo(render_tables(summary, limit=None if show_all else 40))


@routes_group.command("check")
@source_options
@_tables_option
@click.option(
    "--sm-log", metavar="FILE", help="The SM's log (OpenSM's opensm.log): the engine it ran, any that failed."
)
@click.option("--sm-conf", metavar="FILE", help="opensm.conf: the routing_engine the SM is set to run.")
@_lanes_options
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON form.")
@click.option("--no-links", is_flag=True, help="Leave the per-link route counts out of --json.")
@click.option("--all", "show_all", is_flag=True, help="List every finding, not the first 40.")
def check_cmd(
    tables: str | None,
    sm_log: str | None,
    sm_conf: str | None,
    sl2vl: str | None,
    path_records: str | None,
    live_lanes: bool,
    as_json: bool,
    no_links: bool,
    show_all: bool,
    **opts: Any,
) -> None:
    """Judge the forwarding tables: routes that never arrive, loops, credit loops, up/down turns,
    balance, routes over flagged or isolated cables, the engine against what the SM says.

    Credit loops are judged per virtual lane where the SL2VL tables and the SL of every host
    route are given (--sl2vl and --path-records, or --lanes), else as one lane, and said so.

    \b
    Exit status:
      0   no error-level finding (warnings may be listed)
      10  at least one error-level finding
      2, 3, ...  usage error, unreadable tables or topology (one line on stderr)
    """
    from fabric.app.routes import check_routes_of, read_lanes

    session, d, read = _read(opts, tables)
    lanes = read_lanes(session, d, sl2vl=sl2vl, path_records=path_records, live=live_lanes, read=read)
    result = check_routes_of(session, d, read, sm_log=sm_log, sm_conf=sm_conf, lanes=lanes)
    if as_json:
        write_json(result.to_dict(with_links=not no_links))
    else:
        from fabric.present.routes import render_check

        click.echo(render_check(result, limit=None if show_all else 40))
    if result.report.errors:
        click.get_current_context().exit(EXIT_FINDINGS)
