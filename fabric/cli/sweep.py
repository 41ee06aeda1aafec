"""``ibfab sweep plan|run|show``: probe sweeps (ib_write_bw pairs), re-tests and suspect links."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import build_session, discover_in, source_options, source_session, ssh_options
from fabric.cli.slurm import slurm_sweep_options
from topology.errors import UsageError

if TYPE_CHECKING:
    from fabric.app.discovery.discover import Discovery
    from fabric.app.session import Session
    from fabric.app.sweeps.sweep import SweepContext
    from fabric.app.sweeps.sweep_slurm import SlurmChoice, SlurmSweepReport
    from probes.sweep import SweepOutcome, SweepStep


@click.group("sweep")
def sweep_group() -> None:
    """Plan and run ib_write_bw pair sweeps; rank the links most likely at fault."""


def _plan_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(
        (
            click.option(
                "--pattern",
                type=click.Choice(["rail-pairs", "pairwise", "leaf-pairs", "custom"]),
                default="rail-pairs",
                show_default=True,
            ),
            click.option("--pairs", "pairs_path", metavar="FILE", help="Pair file for --pattern custom."),
            click.option(
                "--routes", "routes_path", metavar="DUMP", help="LFT dump (ibroute/dump_fts/opensm)."
            ),
            click.option("--per-host", is_flag=True, help="No host in two probes at once."),
            click.option(
                "--include-service",
                is_flag=True,
                help="Probe service hosts too (login, storage, UFM: another shape than the compute hosts).",
            ),
            click.option("--json", "as_json", is_flag=True, help="Print JSON."),
        )
    ):
        fn = opt(fn)
    return fn


def _lab_and_input(fn: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(
        (
            click.option("--lab", metavar="NAME", help="A lab fabric (its routes are used)."),
            click.option("--input", "input_path", metavar="TOPO", help="A saved ibnetdiscover file."),
        )
    ):
        fn = opt(fn)
    return fn


def _context(
    session: Session,
    pattern: str,
    pairs_path: str | None,
    routes_path: str | None,
    per_host: bool,
    discovery: Discovery | None = None,
    include_service: bool = False,
) -> SweepContext:
    from fabric.app.sweeps import sweep as sweeps

    if pattern == "custom" and not pairs_path:
        raise UsageError("--pattern custom needs --pairs FILE")
    return sweeps.prepare(
        session,
        pattern,
        routes_path=routes_path,
        pairs_path=pairs_path,
        per_host=per_host,
        discovery=discovery,
        include_service=include_service,
    )


def _say_left_out(ctx: SweepContext) -> None:
    """What the plan has no probe ends for, in one line on stderr (after any status line)."""
    from fabric.present.placement import left_out_line

    line = left_out_line(ctx.left_out)
    if line:
        click.echo(line, err=True)


class ProgressLine:
    """Sweep progress on stderr: a bar redrawn in place on a terminal, one line per round otherwise."""

    WIDTH = 30

    def __init__(self, interactive: bool, quiet: bool = False) -> None:
        self.interactive, self.quiet, self.drawn = interactive, quiet, False

    def __call__(self, step: SweepStep) -> None:
        if self.interactive:
            filled = self.WIDTH * step.pairs_done // max(1, step.pairs)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            click.echo(
                f"\r[{bar}] round {step.round}/{step.rounds}  {step.pairs_done}/{step.pairs} pairs  "
                f"{step.slow_pairs} failed  {step.note if not step.note.startswith('round') else ''}"[:200]
                + "\x1b[K",
                err=True,
                nl=False,
            )
            self.drawn = True
        elif not self.quiet:
            click.echo(f"sweep: {step.note}", err=True)

    def done(self) -> None:
        if self.drawn:
            click.echo("", err=True)
            self.drawn = False


@sweep_group.command("plan")
@_plan_options
@source_options
@click.option("--all", "show_all", is_flag=True, help="Every round and cable, not the first ones.")
def plan_cmd(
    pattern: str,
    pairs_path: str | None,
    routes_path: str | None,
    per_host: bool,
    include_service: bool,
    as_json: bool,
    show_all: bool,
    **opts: Any,
) -> None:
    """Plan a sweep: rounds used against the lower bound, and the cables and rails covered.

    A lab's routes come from its OpenSM; elsewhere give --routes DUMP."""
    from fabric.app.sweeps.sweep import names_of
    from fabric.cli.progress import status

    with status(f"planning a {pattern} sweep"):  # a second or more on a large fabric
        session = source_session(opts)
        discovery = discover_in(session)
        ctx = _context(session, pattern, pairs_path, routes_path, per_host, discovery, include_service)
    _say_left_out(ctx)
    names = names_of(ctx.discovery)
    if as_json:
        write_json(ctx.plan.to_dict(names))
    else:
        from fabric.present.sweep import render_plan

        click.echo(render_plan(ctx.plan, names, show_all=show_all))


@sweep_group.command("run")
@_plan_options
@_lab_and_input
@ssh_options
@click.option("--no-retest", is_flag=True, help="Do not re-test outliers.")
@click.option(
    "--timeout", default=120.0, show_default=True, type=click.FloatRange(min=1), help="Per pair, seconds."
)
@click.option("--db", metavar="PATH", help="Store file (default: the data directory).")
@click.option(
    "--host-wait",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0, 86400),
    metavar="SECONDS",
    help="Wait this long for hosts another ibfab process (the daemon, another sweep) is probing.",
)
@slurm_sweep_options
def run_cmd(
    pattern: str,
    pairs_path: str | None,
    lab: str | None,
    input_path: str | None,
    routes_path: str | None,
    per_host: bool,
    include_service: bool,
    as_json: bool,
    inventory: str | None,
    known_hosts: str | None,
    accept_new_host_key: bool,
    identity: str | None,
    no_retest: bool,
    timeout: float,
    db: str | None,
    host_wait: float,
    slurm: SlurmChoice | None,
) -> None:
    """Run a sweep (lab: simulated traffic; --inventory: ib_write_bw over SSH on its hosts;
    --launcher slurm: as job steps of one Slurm allocation), store it, rank suspects.

    The plan's hosts are held for the whole sweep (lock files next to the store): a host another
    ibfab process is probing stops the sweep with that process named, or is waited for
    (--host-wait)."""
    from fabric.app.hostlocks import host_locks, lock_keys, plan_hosts
    from fabric.app.sweeps import sweep as sweeps

    if slurm is not None and inventory is not None:
        raise UsageError("--launcher slurm reaches the hosts through Slurm: drop --inventory")
    if slurm is None and inventory is None and lab is None:
        raise UsageError("give --lab NAME (simulated traffic) or --inventory FILE (ib_write_bw over SSH)")
    session = build_session(
        db=db,
        source=sweeps.sweep_source(lab, input_path),
        inventory=inventory,
        known_hosts=known_hosts,
        accept_new_host_key=accept_new_host_key,
        identity=identity,
    )
    ctx = _context(session, pattern, pairs_path, routes_path, per_host, None, include_service)
    _say_left_out(ctx)
    names = sweeps.names_of(ctx.discovery)
    progress = ProgressLine(sys.stderr.isatty(), quiet=as_json)

    keys = lock_keys(plan_hosts(ctx.plan), session.driver, slurm.node_map if slurm is not None else None)
    with host_locks(session.store).hold(keys, host_wait, "sweep run"):
        outcome, slurm_report = _run_sweep(ctx, session, no_retest, timeout, slurm, progress)
    progress.done()
    source = ctx.source
    if slurm_report is not None:
        from fabric.app.sweeps.sweep_slurm import stored_source

        source = stored_source(ctx.source, slurm_report)
    sweep_id = sweeps.save(outcome, source, names, session.store)
    if as_json:
        doc = {
            "sweep_id": sweep_id,
            "backend": outcome.backend,
            "plan": ctx.plan.to_dict(names),
            "retest_passes": outcome.retest_passes,
            "followup_probes": outcome.followup_probes,
            "efficiency": outcome.efficiency,
            "tie": sweeps.suspects_to_dict(outcome.tie, names),
            "unexplained": sweeps.results_to_dict(outcome.unexplained),
            "results": sweeps.results_to_dict(outcome.results),
            "suspects": sweeps.suspects_to_dict(outcome.suspects, names),
        }
        if slurm_report is not None:
            from fabric.app.sweeps.sweep_slurm import report_to_dict

            doc["slurm"] = report_to_dict(slurm_report)
        write_json(doc)
        return
    from fabric.present.sweep import render_suspects, render_verdict

    click.echo(
        f"sweep {sweep_id} ({outcome.backend}): {len(outcome.results)} results in {ctx.plan.rounds} rounds"
    )
    click.echo(
        render_verdict(
            outcome.results,
            retest_passes=outcome.retest_passes,
            followup_probes=outcome.followup_probes,
            efficiency=outcome.efficiency,
            tie=outcome.tie,
            unexplained=outcome.unexplained,
            names=names,
        )
    )
    if slurm_report is not None:
        from fabric.present.slurm import render_slurm_sweep

        click.echo(render_slurm_sweep(slurm_report))
    click.echo(render_suspects(outcome.suspects, names))


def _run_sweep(
    ctx: SweepContext,
    session: Session,
    no_retest: bool,
    timeout: float,
    slurm: SlurmChoice | None,
    progress: ProgressLine,
) -> tuple[SweepOutcome, SlurmSweepReport | None]:
    """(the sweep's outcome, the Slurm report or None) by the launcher asked for: Slurm, SSH
    (``--inventory``), else the lab's simulated traffic."""
    from fabric.app.sweeps import sweep as sweeps

    slurm_report: SlurmSweepReport | None = None
    ssh = session.ssh
    if slurm is not None:
        from fabric.app.sweeps.sweep_slurm import run_slurm

        slurm_report = run_slurm(
            ctx, slurm, session, retest=not no_retest, timeout=timeout, progress=progress
        )
        outcome = slurm_report.outcome
    elif ssh.inventory is not None:
        outcome = sweeps.run_ssh(
            ctx,
            ssh.inventory,
            known_hosts=ssh.known_hosts,
            accept_new=ssh.accept_new_host_key,
            identity=ssh.identity,
            retest=not no_retest,
            timeout=timeout,
            progress=progress,
        )
    else:
        outcome = sweeps.run_lab(ctx, session, retest=not no_retest, progress=progress)
    return outcome, slurm_report


@sweep_group.command("show")
@click.argument("sweep_id", required=False, type=int)
@click.option("--db", metavar="PATH", help="Store file (default: the data directory).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_cmd(sweep_id: int | None, db: str | None, as_json: bool) -> None:
    """A stored sweep (the newest by default) with its suspect links."""
    from fabric.app.sweeps import sweep as sweeps

    shown = sweeps.show(sweep_id, build_session(db=db).store)
    if as_json:
        doc = {
            "sweep_id": shown.id,
            "pattern": shown.pattern,
            "source": shown.source,
            "started": shown.started,
            "finished": shown.finished,
            "retest_passes": shown.retest_passes,
            "followup_probes": shown.followup_probes,
            "efficiency": shown.efficiency,
            "tie": sweeps.suspects_to_dict(shown.tie, shown.names),
            "unexplained": sweeps.results_to_dict(shown.unexplained),
            "results": sweeps.results_to_dict(shown.results),
            "suspects": sweeps.suspects_to_dict(shown.suspects, shown.names),
        }
        write_json(doc)
        return
    from fabric.present.sweep import render_suspects, shown_verdict

    click.echo(f"sweep {shown.id}: {shown.pattern}, {shown.source}: {len(shown.results)} results")
    click.echo(shown_verdict(shown))
    click.echo(render_suspects(shown.suspects, shown.names))
