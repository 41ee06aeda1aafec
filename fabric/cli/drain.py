"""``ibfab drain recommended|nodes|list|undo``: Slurm drains and resumes, dry run first, audited."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from fabric.cli.advise import _check_options, _confirm, _policy, _policy_options, _routing_verdict
from fabric.cli.jsonout import write_json
from fabric.cli.options import build_session, discover_in, source_options, source_session
from topology.errors import UsageError

if TYPE_CHECKING:
    from fabric.app.session import Session

F = TypeVar("F", bound=Callable[..., Any])


@click.group("drain")
def drain_group() -> None:
    """Drain nodes in Slurm (scontrol ... State=DRAIN Reason="ibfab: ...") and resume them, audited."""


def _apply_options(fn: F) -> F:
    for opt in reversed(
        (
            click.option(
                "--node-map",
                metavar="FILE",
                help="Fabric host -> Slurm node, one pair a line, where names differ.",
            ),
            click.option(
                "--apply", "do_apply", is_flag=True, help="Make the change (default: print the plan only)."
            ),
            click.option("--yes", is_flag=True, help="Do not ask for confirmation (scripts)."),
            click.option(
                "--jobs", "list_jobs", is_flag=True, help="Name the running Slurm jobs on the nodes to drain."
            ),
            click.option(
                "--avoid-running-jobs",
                is_flag=True,
                help="Hold the drains while any job runs on those nodes (exit 9 with the list); implies --jobs.",
            ),
            click.option("--json", "as_json", is_flag=True, help="Print the plan / result as JSON."),
        )
    ):
        fn = opt(fn)
    return fn


def _drain(
    requests: Any,
    session: Session,
    do_apply: bool,
    yes: bool,
    as_json: bool,
    jobs: tuple[bool, bool] = (False, False),
    check: Any = None,
    names: Any = None,
) -> None:
    from fabric.app.drains import changes
    from fabric.app.drains import drain as drains
    from fabric.app.slurm import connect
    from fabric.present.slurm import render_drain_plan

    if not requests:
        click.echo("no drain to make", err=True)
        return
    slurm = connect()
    plan = drains.plan_drains(requests, slurm, session.node_map)
    touched = None
    if any(jobs):
        from fabric.app import twin

        touched = twin.touched_jobs(None, session, hosts=[r.host for r in requests])
    extra = _routing_and_jobs_lines(check, touched, names or {})
    if as_json and not do_apply:
        out = plan.to_dict()
        if check is not None:
            out["routing_check"] = check.to_dict()
        if touched is not None:
            out["jobs"] = touched.to_dict()
        write_json(out)
    else:
        click.echo(render_drain_plan(plan))
        for line in extra:
            click.echo(line)
    if check is not None:
        _routing_verdict(check, do_apply, True)  # a drain changes no route: a warning is shown, not asked
    if touched is not None and jobs[1]:
        from fabric.app.twin import hold_for_jobs

        hold_for_jobs(touched)
    if as_json and not do_apply:
        return
    if not do_apply:
        click.echo("dry run: nothing changed (add --apply)")
        return
    if not plan.to_apply:
        click.echo("nothing to drain")
        return
    _confirm(yes, f"drain {len(plan.to_apply)} node(s) in Slurm?")
    done = changes.drain(session, plan, slurm)
    for d in done:
        click.echo(f"audit {d.audit_id}: {d.command}: {d.result} (undo: ibfab drain undo {d.audit_id})")


def _routing_and_jobs_lines(check: Any, touched: Any, names: Any) -> list[str]:
    from fabric.present.twin import jobs_lines, routing_check_lines

    lines = routing_check_lines(check, names) if check is not None else []
    return lines + (jobs_lines(touched) if touched is not None else [])


@drain_group.command("recommended")
@source_options
@click.option("--health", "health_file", metavar="FILE", help="Saved 'ibfab health --json' output.")
@click.option(
    "--thresholds",
    metavar="FILE.toml",
    help="Health thresholds, as ibfab health takes them (the stored findings and what counts as flapping).",
)
@click.option(
    "--min-status",
    type=click.Choice(["watch", "warn", "critical"]),
    default="warn",
    show_default=True,
    help="Act on links at this health status or worse.",
)
@_policy_options
@_apply_options
@_check_options
def recommended_cmd(
    health_file: str | None,
    thresholds: str | None,
    min_status: str,
    min_uplink_share: float,
    max_isolations: int | None,
    allow_switch_to_host: bool,
    node_map: str | None,
    do_apply: bool,
    yes: bool,
    as_json: bool,
    list_jobs: bool,
    avoid_running_jobs: bool,
    check_routing: bool,
    engine: str | None,
    sm_log: str | None,
    sm_conf: str | None,
    **opts: Any,
) -> None:
    """Drain the nodes 'ibfab recommend' says to drain (hosts whose only cable is bad).

    The store (--db) gives the health findings and keeps the audit log; with no source its newest
    topology snapshot is the fabric."""
    from fabric.app.advice.recommend import health_findings, recommend_fabric
    from fabric.app.drains.drain import requests_from_actions

    session = source_session(opts, thresholds=thresholds, node_map=node_map)
    d = discover_in(session)
    findings = health_findings(health_file, session)
    if findings is None:
        raise UsageError("no health data: run 'ibfab counters collect' or give --health FILE")
    # the same recommendations as 'ibfab recommend' (anomalies, limits, one action per target);
    # drains rest on health findings, never on the subnet manager, so none is asked
    recs = recommend_fabric(
        d,
        None,
        findings,
        _policy(min_uplink_share, max_isolations, allow_switch_to_host),
        session.store,
        min_status=min_status,
        thresholds=session.thresholds,
    )
    requests = requests_from_actions(recs.actions)
    check = None
    if check_routing and requests:
        from fabric.app import twin

        choice = twin.engine_for_check(
            d, engine=engine, sm_log=sm_log, sm_conf=sm_conf, driver=session.driver
        )
        check = twin.check_drain(d, [r.host for r in requests], choice)
    names = {g: c.name for g, c in d.classification.nodes.items()}
    _drain(requests, session, do_apply, yes, as_json, (list_jobs, avoid_running_jobs), check, names)


@drain_group.command("nodes")
@click.argument("hosts", nargs=-1, required=True)
@click.option("--reason", required=True, help="The finding behind the drain (Slurm shows 'ibfab: REASON').")
@_apply_options
@click.option("--db", metavar="PATH", help="Store path for the audit log.")
def nodes_cmd(
    hosts: tuple[str, ...],
    reason: str,
    node_map: str | None,
    do_apply: bool,
    yes: bool,
    db: str | None,
    as_json: bool,
    list_jobs: bool,
    avoid_running_jobs: bool,
) -> None:
    """Drain HOST... (fabric host names or host ranges) for REASON."""
    from fabric.app.drains.drain import requests_for_hosts

    _drain(
        requests_for_hosts(hosts, reason),
        build_session(db=db, node_map=node_map),
        do_apply,
        yes,
        as_json,
        (list_jobs, avoid_running_jobs),
    )


@drain_group.command("list")
@click.option("--db", metavar="PATH", help="Store path of the audit log.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cmd(db: str | None, as_json: bool) -> None:
    """Drains ibfab made that are not resumed yet, beside what Slurm reports (sinfo -R)."""
    from fabric.app.drains.drain import open_drains
    from fabric.app.slurm import connect
    from fabric.present.slurm import render_drains

    session = build_session(db=db)
    slurm = connect()
    with session.store.write() as store:
        audited = open_drains(store)
    now = slurm.drains()
    if as_json:
        doc = {
            "audited": [
                {"audit_id": e.id, "target": e.target, "time": e.time, "user": e.user, "command": e.command}
                for e in audited
            ],
            "slurm": [
                {"node": d.node, "state": d.state, "user": d.user, "time": d.when, "reason": d.reason}
                for d in now
            ],
        }
        write_json(doc)
        return
    click.echo(render_drains(audited, now))


@drain_group.command("undo")
@click.argument("audit_id", type=int)
@click.option("--apply", "do_apply", is_flag=True, help="Resume the node (default: print the plan only).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (scripts).")
@click.option("--force", is_flag=True, help="Resume inside the re-test window or after a failed re-test.")
@click.option(
    "--retest-window",
    type=click.FloatRange(0),
    default=126.0,
    show_default=True,
    help="Minutes a drained node must re-test clean before it is resumed.",
)
@click.option("--db", metavar="PATH", help="Store path of the audit log.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def undo_cmd(
    audit_id: int, do_apply: bool, yes: bool, force: bool, retest_window: float, db: str | None, as_json: bool
) -> None:
    """Resume the node drained by audit entry AUDIT_ID, after a clean re-test window."""
    from fabric.app.drains import changes
    from fabric.app.drains.drain import check_resume
    from fabric.app.slurm import connect
    from fabric.present.slurm import render_resume_plan

    session = build_session(db=db)
    slurm = connect()
    plan = changes.resume_plan(session, audit_id, slurm, window_seconds=retest_window * 60)
    if as_json and not do_apply:
        write_json(plan.to_dict())
        return
    click.echo(render_resume_plan(plan))
    if not do_apply:
        click.echo("dry run: nothing changed (add --apply)")
        return
    if not force:
        check_resume(plan)
    _confirm(yes, f"resume {plan.node} in Slurm?")
    change = changes.resume(session, plan, slurm, force=force)
    click.echo(f"audit {change.audit_id}: {change.command}: {change.result}")
