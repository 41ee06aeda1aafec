"""``ibfab recommend``, ``ibfab isolate`` and ``ibfab whatif``: advice, isolation with audit, what-if."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import build_session, chosen_source, discover_in, source_options, source_session
from topology.errors import SafetyError, UsageError

if TYPE_CHECKING:
    from fabric.app.session import Session

F = TypeVar("F", bound=Callable[..., Any])


def _fabric_options(fn: F) -> F:
    for opt in reversed(
        (
            click.option("--input", "input_path", metavar="TOPO", help="Saved ibnetdiscover output."),
            click.option("--lab", metavar="NAME", help="A lab fabric (ibfab lab up)."),
        )
    ):
        fn = opt(fn)
    return fn


def _policy_options(fn: F) -> F:
    for opt in reversed(
        (
            click.option(
                "--min-uplink-share",
                type=click.FloatRange(0, 1),
                default=0.75,
                show_default=True,
                help="A switch keeps at least this share of its uplinks.",
            ),
            click.option(
                "--max-isolations", type=click.IntRange(0), help="Cap (default max(10, 0.5% of ports))."
            ),
            click.option(
                "--allow-switch-to-host", is_flag=True, help="Allow isolating ports that face hosts."
            ),
        )
    ):
        fn = opt(fn)
    return fn


def _check_options(fn: F) -> F:
    for opt in reversed(
        (
            click.option(
                "--check-routing",
                is_flag=True,
                help="Run the change on the fabric's twin first (ibfab lab up --from): routes before and after.",
            ),
            click.option(
                "--engine", metavar="ENGINE", help="The site's routing engine(s), when no evidence says."
            ),
            click.option("--sm-log", metavar="FILE", help="The site SM's log (the engine it routes with)."),
            click.option("--sm-conf", metavar="FILE", help="The site SM's opensm.conf (its routing_engine)."),
        )
    ):
        fn = opt(fn)
    return fn


def _routing_check_options(fn: F) -> F:
    """``isolate``'s: the twin's check, the jobs it touches, and accepting the twin's warnings."""
    for opt in reversed(
        (
            click.option(
                "--jobs",
                "list_jobs",
                is_flag=True,
                help="Name the running Slurm jobs the change touches (squeue, and routes between their nodes).",
            ),
            click.option(
                "--avoid-running-jobs",
                is_flag=True,
                help="Hold the change while any job it touches runs (exit 9 with the list); implies --jobs.",
            ),
            click.option("--node-map", metavar="FILE", help="Fabric host -> Slurm node, where names differ."),
            click.option(
                "--accept-routing-warnings",
                is_flag=True,
                help="Apply although the twin warns (engine fallback, load rise); else asked, or refused without a terminal.",
            ),
        )
    ):
        fn = opt(fn)
    return _check_options(fn)


def _routing_check(d: Any, ports: list[Any], session: Session, opts: dict[str, Any]) -> Any:
    """The twin's check of taking ``ports`` out, printed; a STOP verdict fails the command (exit 8)."""
    from fabric.app import twin
    from fabric.present.twin import routing_check_lines

    choice = twin.engine_for_check(
        d,
        engine=opts.get("engine"),
        sm_log=opts.get("sm_log"),
        sm_conf=opts.get("sm_conf"),
        driver=session.driver,
    )
    check = twin.check_plan(d, ports, choice)
    names = {g: c.name for g, c in d.classification.nodes.items()}
    return check, routing_check_lines(check, names)


def _jobs(d: Any, cables: Any, hosts: Any, session: Session, check: Any, opts: dict[str, Any]) -> Any:
    """The running jobs the change touches (None unless asked for), printed unless JSON is."""
    if not (opts.get("list_jobs") or opts.get("avoid_running_jobs")):
        return None
    from fabric.app import twin

    return twin.touched_jobs(d, session, cables=cables, hosts=hosts, check=check)


def _routing_verdict(check: Any, do_apply: bool, accept: bool) -> None:
    """STOP: exit 8, nothing changed; CONFIRM on an apply: the operator accepts the warnings."""
    verdict = check.verdict.value
    if verdict == "stop":
        kinds = ", ".join(sorted({i.kind for i in check.issues if i.verdict.value == "stop"}))
        raise SafetyError(
            f"the routing check on twin {check.twin.name} stops the change ({kinds}); nothing was changed"
        )
    if verdict == "confirm" and do_apply and not accept:
        kinds = ", ".join(sorted({i.kind for i in check.issues}))
        if not sys.stdin.isatty():
            raise UsageError(
                f"the routing check on twin {check.twin.name} warns ({kinds}): accept it with --accept-routing-warnings"
            )
        if not click.confirm(
            f"the routing check warns ({kinds}); change the fabric all the same?", default=False
        ):
            raise UsageError("not confirmed; nothing changed")


def _session(
    input_path: str | None, lab: str | None, db: str | None = None, node_map: str | None = None
) -> Session:
    """The session on the fabric of ``--input`` (or ``-``), ``--lab``, else this machine."""
    return build_session(db=db, source=chosen_source(db, input_path, None, lab), node_map=node_map)


def _policy(min_uplink_share: float, max_isolations: int | None, allow_switch_to_host: bool) -> Any:
    from fabric.app.advice.recommend import safety_policy

    return safety_policy(min_uplink_share, max_isolations, allow_switch_to_host)


# -- recommend ------------------------------------------------------------------------------------
@click.command("recommend")
@source_options
@click.option("--opensm-log", metavar="FILE", help="The SM's log (what it runs: version, routing engine).")
@click.option("--opensm-conf", metavar="FILE", help="The SM's opensm.conf (the AR service levels).")
@click.option("--health", "health_file", metavar="FILE", help="Saved 'ibfab health --json' output.")
@click.option(
    "--plan", "plans", multiple=True, metavar="FILE", help="Cable plan(s): recable what differs from it."
)
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
    help="Isolate links at this health status or worse.",
)
@_policy_options
@click.option(
    "--check-routing",
    is_flag=True,
    help="Run the recommended isolations on the fabric's twin: routes before and after (exit 8 on STOP).",
)
@click.option(
    "--engine", metavar="ENGINE", help="With --check-routing: the site's engine, when no evidence says."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def recommend_cmd(
    opensm_log: str | None,
    opensm_conf: str | None,
    health_file: str | None,
    plans: tuple[str, ...],
    thresholds: str | None,
    min_status: str,
    min_uplink_share: float,
    max_isolations: int | None,
    allow_switch_to_host: bool,
    check_routing: bool,
    engine: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """Recommend isolations (safety-checked), drains, cable swaps, AR and NCCL settings.

    Routing advice rests only on what is known: sminfo and the SM's log/config where they can be
    read (this machine, the lab), --opensm-log/--opensm-conf, and an ibdiagnet run's AR_INFO (give
    --ibdiagnet DIR). What is unknown is said, with the commands that would tell; nothing is advised
    on a guess. The store (--db) gives the health findings, the newest reading's saturated or large
    counters, the newest sweep's suspect cables and the open isolations, which count toward the
    cap; with no source its newest topology snapshot is the fabric. The same evidence as 'ibfab
    status', which lists it per cable and host.
    """
    from fabric.app.advice.recommend import live_driver, recommend_fabric
    from fabric.app.status.gather import advice_inputs

    ibdiagnet_dir = opts.get("ibdiagnet_dir")
    session = source_session(opts, thresholds=thresholds)
    d = discover_in(session)
    inputs = advice_inputs(d, session, health_file=health_file, plans=plans)
    findings = inputs.findings
    if findings is None:
        findings = []
        click.echo(
            "ibfab: no health data (run 'ibfab counters collect', or give --health FILE): routing advice only",
            err=True,
        )
    recs = recommend_fabric(
        d,
        live_driver(session),
        findings,
        _policy(min_uplink_share, max_isolations, allow_switch_to_host),
        session.store,
        min_status=min_status,
        opensm_log=opensm_log,
        opensm_conf=opensm_conf,
        ibdiagnet=ibdiagnet_dir,
        thresholds=session.thresholds,
        evidence=inputs.evidence,
    )
    check, lines = None, []
    ports = [a.port for a in recs.actions if a.kind.value == "isolate_port" and a.port is not None]
    if check_routing and ports:
        check_opts = {"engine": engine, "sm_log": opensm_log, "sm_conf": opensm_conf}
        check, lines = _routing_check(d, ports, session, check_opts)
    if as_json:
        out = recs.to_dict()
        if check is not None:
            out["routing_check"] = check.to_dict()
        write_json(out)
    else:
        from fabric.present.advice import render_recommendations

        click.echo(render_recommendations(recs))
        for line in lines:
            click.echo(line)
    if check is not None:
        _routing_verdict(check, False, False)  # advice changes nothing: a STOP fails the command


# -- isolate --------------------------------------------------------------------------------------
@click.command("isolate")
@click.argument("ports", nargs=-1)
@_fabric_options
@click.option(
    "--undo", "undo_id", type=int, metavar="ID", help="Return the port of audit entry ID to service."
)
@click.option("--apply", "do_apply", is_flag=True, help="Make the change (default: print the plan only).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (scripts).")
@click.option("--force", is_flag=True, help="Undo inside the re-test window.")
@click.option(
    "--retest-window",
    type=click.FloatRange(0),
    default=126.0,
    show_default=True,
    help="Minutes an isolated port must re-test clean before it is returned.",
)
@_policy_options
@click.option("--reason", default="requested by the operator", help="Why (kept in the audit log).")
@click.option("--db", metavar="PATH", help="Store path for the audit log.")
@_routing_check_options
@click.option("--json", "as_json", is_flag=True, help="Print the plan / result as JSON.")
def isolate_cmd(
    ports: tuple[str, ...],
    input_path: str | None,
    lab: str | None,
    undo_id: int | None,
    do_apply: bool,
    yes: bool,
    force: bool,
    retest_window: float,
    min_uplink_share: float,
    max_isolations: int | None,
    allow_switch_to_host: bool,
    reason: str,
    db: str | None,
    as_json: bool,
    check_routing: bool,
    accept_routing_warnings: bool,
    **check_opts: Any,
) -> None:
    """Isolate PORT... (NODE:PORT, e.g. leaf-su01-r0:5): plan, safety check, then --apply with audit.

    In a lab, undo also unplugs and replugs the cable through the simulator console because ibsim
    never retrains a re-enabled port; a real fabric needs only 'ibportstate ... enable'.
    """
    from fabric.app.isolation import changes
    from fabric.app.isolation.isolate import check_undo, unsafe_summary

    # The fabric changes where the session's driver runs: the lab, else this machine; --input
    # only gives a saved topology of it to plan on.
    session = _session(None, lab, db, check_opts.get("node_map"))
    if undo_id is not None:
        if ports:
            raise UsageError("give either PORT... or --undo ID, not both")
        plan = changes.undo_plan(session, undo_id, window_seconds=retest_window * 60)
        if as_json and not do_apply:
            write_json(plan.to_dict())
        else:
            from fabric.present.advice import undo_plan_text

            click.echo(undo_plan_text(plan))
        if not force:
            check_undo(plan)
        if not do_apply:
            click.echo("dry run: nothing changed (add --apply)")
            return
        _confirm(yes, f"return {plan.entry.target} to service?")
        change = changes.undo(session, plan, force=force)
        click.echo(f"audit {change.audit_id}: {change.command}: {change.result}")
        return
    if not ports:
        raise UsageError("give PORT... to isolate, or --undo ID")
    from fabric.app.discovery.discover import discover
    from fabric.app.isolation.isolate import resolve_ports
    from fabric.app.isolation.limits import IsolationRun, isolate_ports
    from fabric.present.advice import isolation_plan_text

    saved = chosen_source(db, input_path, None, lab) if input_path else None
    d = discover(session.on(saved) if saved is not None else session)
    refs = resolve_ports(d, ports)
    run_d = [d]  # the fabric the check copies: as discovered (again, under the lock, on an apply)

    def show(run: IsolationRun) -> None:
        from fabric.present.twin import jobs_lines

        check, lines, touched = None, [], None
        if check_routing and run.plan.safe and run.plan.steps:
            check, lines = _routing_check(run_d[0], [s.port for s in run.plan.steps], session, check_opts)
        if run.plan.safe and run.plan.steps:
            cables = [v.candidate.link.key for v in run.plan.safety.accepted]
            touched = _jobs(run_d[0], cables, (), session, check, check_opts)
        if as_json and not do_apply:
            out = {**run.plan.to_dict(), "limits": run.limits.to_dict()}
            if check is not None:
                out["routing_check"] = check.to_dict()
            if touched is not None:
                out["jobs"] = touched.to_dict()
            write_json(out)
        else:
            click.echo(isolation_plan_text(run.plan, run.limits))
            for line in [*lines, *(jobs_lines(touched) if touched is not None else [])]:
                click.echo(line)
        if not run.plan.safe:
            # A STOP verdict fails the command, dry run or not: scripts must not read it as done.
            verb = "was" if do_apply else "would be"
            raise SafetyError(f"{unsafe_summary(run.plan)}; nothing {verb} changed")
        if check is not None:
            _routing_verdict(check, do_apply, accept_routing_warnings)
        if touched is not None and check_opts.get("avoid_running_jobs"):
            from fabric.app.twin import hold_for_jobs

            hold_for_jobs(touched)
        if do_apply:
            _confirm(yes, f"disable {len(run.plan.steps)} port(s)?")

    with session.store.write() as store:
        run = isolate_ports(
            store,
            d,
            refs,
            _policy(min_uplink_share, max_isolations, allow_switch_to_host),
            reason,
            session,
            rediscover=None if saved is not None else lambda: _rediscover(run_d, session),
            apply=do_apply,
            before_apply=show,
        )
        if not do_apply:
            show(run)
            click.echo("dry run: nothing changed (add --apply)", err=as_json)  # stdout stays JSON
            return
    for ch in run.changes:
        click.echo(
            f"audit {ch.audit_id}: {ch.command}: {ch.result} (undo: ibfab isolate --undo {ch.audit_id})"
        )


def _rediscover(run_d: list[Any], session: Session) -> Any:
    from fabric.app.discovery.discover import discover

    run_d[0] = discover(session)
    return run_d[0]


def _confirm(yes: bool, question: str) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError("refusing to change the fabric without confirmation: add --yes")
    if not click.confirm(question, default=False):
        raise UsageError("not confirmed; nothing changed")


# -- whatif ---------------------------------------------------------------------------------------
def _whatif_options(fn: F) -> F:
    # the same sources as every command that reads a fabric (with --db: its newest stored snapshot)
    fn = source_options(fn)
    for opt in reversed(
        (
            click.option(
                "--hosts", metavar="RANGE", help="The job's hosts, e.g. dgx-[0001-0004] (default all)."
            ),
            click.option(
                "--lft",
                metavar="FILE",
                help="Forwarding tables (ibroute / dump_fts / opensm-lfts.dump); a lab's own dump by default.",
            ),
            click.option("--json", "as_json", is_flag=True, help="Print JSON."),
        )
    ):
        fn = opt(fn)
    return fn


@click.group("whatif")
def whatif_group() -> None:
    """Estimate ring all-reduce and all-to-all bandwidth under a change, static vs adaptive routing."""


def _run_whatif(
    opts: dict[str, Any],
    hosts: str | None,
    lft: str | None,
    as_json: bool,
    build: Callable[[Any], Any],
) -> None:
    from fabric.app.advice.whatif import run_whatif
    from fabric.present.advice import render_whatif

    session = source_session(opts)
    result = run_whatif(discover_in(session), build, session.driver, hosts, lft)
    if as_json:
        write_json(result.to_dict())
        return
    click.echo(render_whatif(result))


@whatif_group.command("isolate")
@click.argument("ports", nargs=-1, required=True)
@_whatif_options
def whatif_isolate(
    ports: tuple[str, ...],
    hosts: str | None,
    lft: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """PORT... isolated (NODE:PORT)."""
    from fabric.app.advice.whatif import isolate_scenario

    _run_whatif(opts, hosts, lft, as_json, isolate_scenario(ports))


@whatif_group.command("degrade")
@click.argument("links", nargs=-1, required=True)
@_whatif_options
def whatif_degrade(
    links: tuple[str, ...],
    hosts: str | None,
    lft: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """LINK=SHARE... : the cable on NODE:PORT keeps SHARE of its rate (50% or 0.5)."""
    from fabric.app.advice.whatif import degrade_scenario

    _run_whatif(opts, hosts, lft, as_json, degrade_scenario(links))


@whatif_group.command("ar")
@click.argument("state", type=click.Choice(["on", "off"]))
@_whatif_options
def whatif_ar(state: str, hosts: str | None, lft: str | None, as_json: bool, **opts: Any) -> None:
    """AR on or off on the fabric as it is."""
    from fabric.app.advice.whatif import ar_scenario

    _run_whatif(opts, hosts, lft, as_json, ar_scenario(state == "on"))
