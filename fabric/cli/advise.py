"""``ibfab recommend``, ``ibfab isolate`` and ``ibfab whatif``: advice, isolation with audit, what-if."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from fabric.cli.options import discover_from, source_options
from topology.errors import SafetyError, UsageError

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


def _discover(input_path: str | None, lab: str | None, ssh: str | None = None) -> Any:
    """The same discovery sources as ``ibfab discover`` (file or ``-``, lab, SSH, this machine)."""
    from fabric.app.discover import discover
    from fabric.app.source import read_source

    src, text = read_source(input_path, ssh, lab)
    return discover(src, text)


def _policy(min_uplink_share: float, max_isolations: int | None, allow_switch_to_host: bool) -> Any:
    from fabric.app.recommend import safety_policy

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
    from fabric.app.health import load_thresholds
    from fabric.app.recommend import live_source, recommend_fabric
    from fabric.app.status.gather import advice_inputs

    t = load_thresholds(thresholds) if thresholds else None
    db = opts.get("db")
    lab, ssh, ibdiagnet_dir = opts.get("lab"), opts.get("ssh"), opts.get("ibdiagnet_dir")
    saved = any(opts.get(k) for k in ("input_path", "ibdiagnet_dir", "snapshot"))
    d = discover_from(opts)
    inputs = advice_inputs(d, db, thresholds=t, health_file=health_file, plans=plans)
    findings = inputs.findings
    if findings is None:
        findings = []
        click.echo(
            "ibfab: no health data (run 'ibfab counters collect', or give --health FILE): routing advice only",
            err=True,
        )
    recs = recommend_fabric(
        d,
        live_source(lab, ssh, d, saved),
        findings,
        _policy(min_uplink_share, max_isolations, allow_switch_to_host),
        db=db,
        min_status=min_status,
        opensm_log=opensm_log,
        opensm_conf=opensm_conf,
        ibdiagnet=ibdiagnet_dir,
        thresholds=t,
        evidence=inputs.evidence,
    )
    if as_json:
        click.echo(json.dumps(recs.to_dict(), indent=1))
        return
    from fabric.present.advice import render_recommendations

    click.echo(render_recommendations(recs))


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
) -> None:
    """Isolate PORT... (NODE:PORT, e.g. leaf-su01-r0:5): plan, safety check, then --apply with audit.

    In a lab, undo also unplugs and replugs the cable through the simulator console because ibsim
    never retrains a re-enabled port; a real fabric needs only 'ibportstate ... enable'.
    """
    from fabric.app import isolate as isolation
    from fabric.app.isolate import audit_store, unsafe_summary

    if undo_id is not None:
        if ports:
            raise UsageError("give either PORT... or --undo ID, not both")
        with audit_store(db) as store:
            plan = isolation.plan_undo(store, undo_id, lab=lab, window_seconds=retest_window * 60)
            if as_json and not do_apply:
                click.echo(json.dumps(plan.to_dict(), indent=1))
            else:
                from fabric.present.advice import undo_plan_text

                click.echo(undo_plan_text(plan))
            if not plan.window_passed and not force:
                raise SafetyError(
                    f"the re-test window of {retest_window:g} min has not passed; re-test the link "
                    "or give --force"
                )
            if not do_apply:
                click.echo("dry run: nothing changed (add --apply)")
                return
            _confirm(yes, f"return {plan.entry.target} to service?")
            change = isolation.apply_undo(plan, store, lab=lab, force=force)
        click.echo(f"audit {change.audit_id}: {change.command}: {change.result}")
        return
    if not ports:
        raise UsageError("give PORT... to isolate, or --undo ID")
    from fabric.app.isolate import resolve_ports
    from fabric.app.isolation_limits import IsolationRun, isolate_ports
    from fabric.present.advice import isolation_plan_text

    d = _discover(input_path, lab)
    refs = resolve_ports(d, ports)

    def show(run: IsolationRun) -> None:
        if as_json and not do_apply:
            click.echo(json.dumps({**run.plan.to_dict(), "limits": run.limits.to_dict()}, indent=1))
        else:
            click.echo(isolation_plan_text(run.plan, run.limits))
        if not run.plan.safe:
            # A STOP verdict fails the command, dry run or not: scripts must not read it as done.
            verb = "was" if do_apply else "would be"
            raise SafetyError(f"{unsafe_summary(run.plan)}; nothing {verb} changed")
        if do_apply:
            _confirm(yes, f"disable {len(run.plan.steps)} port(s)?")

    with audit_store(db) as store:
        run = isolate_ports(
            store,
            d,
            refs,
            _policy(min_uplink_share, max_isolations, allow_switch_to_host),
            reason,
            lab=lab,
            rediscover=None if input_path else lambda: _discover(None, lab),
            apply=do_apply,
            before_apply=show,
        )
        if not do_apply:
            show(run)
            click.echo("dry run: nothing changed (add --apply)")
            return
    for ch in run.changes:
        click.echo(
            f"audit {ch.audit_id}: {ch.command}: {ch.result} (undo: ibfab isolate --undo {ch.audit_id})"
        )


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
    from fabric.app.whatif import run_whatif
    from fabric.present.advice import render_whatif

    lab = opts.get("lab")
    result = run_whatif(discover_from(opts), build, hosts, lab, lft)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=1))
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
    from fabric.app.whatif import isolate_scenario

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
    from fabric.app.whatif import degrade_scenario

    _run_whatif(opts, hosts, lft, as_json, degrade_scenario(links))


@whatif_group.command("ar")
@click.argument("state", type=click.Choice(["on", "off"]))
@_whatif_options
def whatif_ar(state: str, hosts: str | None, lft: str | None, as_json: bool, **opts: Any) -> None:
    """AR on or off on the fabric as it is."""
    from fabric.app.whatif import ar_scenario

    _run_whatif(opts, hosts, lft, as_json, ar_scenario(state == "on"))
