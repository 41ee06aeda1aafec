"""``ibfab probe read FILE...``: saved nccl-tests (text or -J JSON) and ib_write_bw outputs judged
as a live run is (exit 0 healthy, 4 a failed run, 3 unreadable)."""

from __future__ import annotations

import click

from fabric.cli.jsonout import write_json


@click.command("read")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--input", "input_path", metavar="FILE", help="The fabric: a saved ibnetdiscover output.")
@click.option("--lab", metavar="NAME", help="The fabric: a lab fabric.")
@click.option("--snapshot", metavar="latest|ID|LABEL", help="The fabric: a stored topology snapshot.")
@click.option("--db", metavar="PATH", help="Store path (default: the user's data directory).")
@click.option(
    "--hcas", type=click.IntRange(1, 64), metavar="N", help="HCAs per node, with --rate (no fabric)."
)
@click.option("--rate", type=click.FloatRange(min=1), metavar="GBPS", help="Their rate in Gb/s, with --hcas.")
@click.option(
    "--expect-ib/--no-expect-ib",
    default=None,
    help="Whether InfiniBand was meant (default: where the fabric gives the hosts HCAs).",
)
@click.option("--collective", metavar="BINARY", help="The collective, where the output does not say it.")
@click.option(
    "--hosts", "hosts_range", metavar="RANGE", help="The run's hosts, where the output does not list them."
)
@click.option(
    "--nranks", type=click.IntRange(min=1), help="The run's ranks, where the output does not list them."
)
@click.option(
    "--line-rate", type=click.FloatRange(min=1), metavar="GBPS", help="ib_write_bw: the link's rate."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def read_cmd(
    files: tuple[str, ...],
    input_path: str | None,
    lab: str | None,
    snapshot: str | None,
    db: str | None,
    hcas: int | None,
    rate: float | None,
    expect_ib: bool | None,
    collective: str | None,
    hosts_range: str | None,
    nranks: int | None,
    line_rate: float | None,
    as_json: bool,
) -> None:
    """Judge saved runs: nccl-tests text or its -J JSON report (NCCL's log read for the network it
    used; busbw against what the fabric's HCAs carry) and ib_write_bw outputs.

    The fabric comes from --input/--lab/--snapshot, else the newest stored topology; --hcas and
    --rate give it by hand. Exits 0 when every run is healthy, 4 when one failed (nccl-tests said
    so, sockets or too few HCAs, low busbw), 3 when a file is no output ibfab reads."""
    from fabric.app.triage.facts import read_facts
    from fabric.app.triage.hosts import expand_range
    from fabric.app.triage.read import read_probes
    from fabric.app.triage.records import read_report_to_dict
    from fabric.cli.options import build_session, chosen_source
    from fabric.present.triage import render_read
    from topology.errors import UsageError

    if hcas is not None and rate is not None and any((input_path, lab, snapshot)):
        raise UsageError("give either --hcas/--rate or a fabric (--input, --lab, --snapshot), not both")
    # No fabric named: the newest stored topology; none there: this machine, which read_facts
    # does not run anything on (the runs are judged without fabric facts).
    source = chosen_source(db, input_path, None, lab, snapshot=snapshot, stored_default=hcas is None)
    facts = read_facts(build_session(db=db, source=source), hcas=hcas, rate_gbps=rate)
    report = read_probes(
        files,
        facts,
        expect_ib=expect_ib,
        collective=collective,
        hosts=expand_range(hosts_range) if hosts_range else None,
        nranks=nranks,
        line_rate_gbps=line_rate,
    )
    if as_json:
        write_json(read_report_to_dict(report))
    else:
        click.echo(render_read(report))
    failure = report.outcome
    if failure is not None:
        raise failure
