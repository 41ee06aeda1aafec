"""Sweep use cases: plan, run (lab-simulated or ssh ib_write_bw), store, show with localization.

The CLI and the TUI call these; neither plans nor connects itself. A stored sweep keeps one
capture (kind ``probe``) holding every pair's record as JSON: both ends (host, device, GUID, leaf,
rail), round, attempt, backend, result, what its route should have given (``expected_gbps``), the
route it took and, for ssh, both sides' raw perftest output; ``show`` re-ranks suspects from it.
A slow pair is stored with ``ok`` false and why in ``error`` (format ``ibfab-sweep/2``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from fabric.app.discovery.discover import Discovery, discover
from fabric.app.session import Session, StoreAccess
from fabric.app.source import Source
from fabric.placement import LeftOut, host_sites
from probes.localize import Suspect, rank, tied, unexplained
from probes.pairs import Endpoint, PairResult
from probes.plan import SweepPlan, endpoints, plan_sweep
from probes.sweep import Backend, LabTrafficBackend, Progress, SweepOutcome, run_sweep
from topology.errors import IbfabError, StoreError, TransportError, UsageError
from topology.lft import Lfts, read_lfts
from topology.model import Guid, Link, LinkKey, PortRef
from topology.textfile import read_input_text

FORMAT = "ibfab-sweep/2"


@dataclass(frozen=True)
class SweepContext:
    discovery: Discovery
    tables: Lfts | None
    plan: SweepPlan
    source: str
    include_service: bool = False  # service hosts are probe ends too (follow-up probes included)
    # Hosts and HCAs that are no probe ends (service hosts, aggregation nodes, unnamed HCAs...).
    left_out: tuple[LeftOut, ...] = ()

    def candidates(self) -> list[Endpoint]:
        """The probe ends follow-up probes may use: the plan's kind of hosts."""
        d = self.discovery
        return endpoints(d.fabric, d.classification, self.include_service)


def sweep_source(lab: str | None, input_path: str | None) -> Source:
    """Where a sweep's fabric comes from: a lab (its routes are OpenSM's) or a saved
    ibnetdiscover file; exactly one of them."""
    if (lab is None) == (input_path is None):
        raise UsageError("give one of --lab NAME or --input TOPO")
    if lab is not None:
        return Source.lab(lab)
    assert input_path is not None
    return Source.file(input_path, _read(input_path, "ibnetdiscover"))


def prepare(
    session: Session,
    pattern: str,
    *,
    routes_path: str | None = None,
    pairs_path: str | None = None,
    per_host: bool = False,
    discovery: Discovery | None = None,
    include_service: bool = False,
) -> SweepContext:
    """Discover the session's fabric (unless ``discovery`` is given), read routes when there are
    any (``routes_path``, else what the session's driver reads unasked: a lab's OpenSM tables), and
    plan (compute hosts, and service hosts with ``include_service``)."""
    if discovery is None:
        discovery = discover(session)
    tables = read_lfts(routes_path) if routes_path is not None else session.driver.forwarding_tables()
    pairs_text = _read(pairs_path, "pair file", strict=True) if pairs_path else None
    plan = plan_sweep(
        discovery.fabric,
        discovery.classification,
        pattern,
        tables,
        per_host=per_host,
        pairs_text=pairs_text,
        pairs_source=pairs_path or "<pairs>",
        include_service=include_service,
    )
    source = discovery.source
    if pattern == "custom":
        left: tuple[LeftOut, ...] = ()  # the pair file names its hosts
    else:
        left = host_sites(discovery.fabric, discovery.classification, include_service).left_out
    return SweepContext(discovery, tables, plan, source, include_service, left)


def _read(path: str, what: str, *, strict: bool = False) -> str:
    return read_input_text(path, what, strict=strict)


def names_of(d: Discovery) -> dict[Guid, str]:
    return {g: c.name for g, c in d.classification.nodes.items()}


def run_lab(
    ctx: SweepContext, session: Session, *, retest: bool = True, progress: Progress | None = None
) -> SweepOutcome:
    """Run the plan on the lab's simulated traffic (error rates read from the simulator; a real
    fabric's driver refuses)."""
    rates = session.driver.error_rates()
    backend = LabTrafficBackend(ctx.discovery.fabric, ctx.plan.paths, rates)
    return _run(ctx, backend, retest, progress)


def run_ssh(
    ctx: SweepContext,
    inventory_path: str,
    *,
    known_hosts: str | None = None,
    accept_new: bool = False,
    identity: str | None = None,
    retest: bool = True,
    timeout: float = 120.0,
    size: int = 8388608,
    iterations: int = 5000,
    base_port: int = 18515,
    concurrency: int = 16,
    progress: Progress | None = None,
) -> SweepOutcome:
    """Run the plan with real ib_write_bw over SSH; hosts missing or unreachable stop it before it starts."""
    from fabric.app.source import with_identity
    from probes.fanout import fan_out
    from probes.inventory import fold_names, read_inventory
    from probes.perftest import PerftestOptions
    from probes.ssh import ssh_transport_factory
    from probes.sweep import SshPerftestBackend

    inventory = read_inventory(inventory_path)
    wanted = sorted({e.host for p in ctx.plan.probes for e in (p.client, p.server)})
    if not wanted:
        raise UsageError("sweep cannot start: the plan has no hosts")
    known = {h.name: with_identity(h, identity) for h in inventory.hosts}
    missing = [h for h in wanted if h not in known]
    if missing:
        raise UsageError(f"sweep cannot start: not in {inventory.source}: {fold_names(missing)}")
    factory = ssh_transport_factory(known_hosts=known_hosts, accept_new=accept_new)
    checks = fan_out([known[h] for h in wanted], ["true"], factory, timeout=30.0)
    down = [r for r in checks if not r.ok]
    if down:
        first = down[0]
        raise TransportError(
            f"sweep cannot start: {fold_names([r.host for r in down])} unreachable ({first.message or 'exit ' + str(first.exit_code)})"
        )
    opts = PerftestOptions("ib_write_bw", size=size, iterations=iterations)
    line_rates: dict[Guid, float] = {}  # what a pair without a known route is judged against
    for p in ctx.plan.probes:
        links = ctx.discovery.fabric.links_of(p.client.guid)
        if links:
            line_rates[p.client.guid] = ctx.plan.design_gbps.get(links[0].key, links[0].gbps)
    backend = SshPerftestBackend(
        {h: known[h] for h in wanted},
        factory,
        opts,
        base_port=base_port,
        timeout=timeout,
        concurrency=concurrency,
        line_rates=line_rates,
    )
    outcome = _run(ctx, backend, retest, progress)
    raw = {
        k: (v.client.stdout + v.client.stderr, v.server.stdout + v.server.stderr)
        for k, v in backend.outputs.items()
    }
    return replace(outcome, raw_outputs=raw)


def _run(ctx: SweepContext, backend: Backend, retest: bool, progress: Progress | None) -> SweepOutcome:
    return run_sweep(
        ctx.plan,
        backend,
        retest=retest,
        progress=progress,
        fabric=ctx.discovery.fabric,
        tables=ctx.tables,
        candidates=ctx.candidates(),
        names=names_of(ctx.discovery),
    )


# -- the store ----------------------------------------------------------------------------------
def _ep(e: Endpoint) -> dict[str, Any]:
    return {"host": e.host, "device": e.device, "guid": e.guid, "leaf": e.leaf, "rail": e.rail}


def _link(lk: Link) -> list[Any]:
    return [lk.a.guid, lk.a.port, lk.b.guid, lk.b.port, lk.width, lk.speed]


def outcome_records(outcome: SweepOutcome) -> list[dict[str, Any]]:
    raw = outcome.raw_outputs
    out = []
    for r in outcome.results:
        rec: dict[str, Any] = {
            "client": _ep(r.client),
            "server": _ep(r.server),
            "round": r.round,
            "attempt": r.attempt,
            "backend": r.backend,
            "gbps": r.gbps,
            "line_rate_gbps": r.line_rate_gbps,
            "expected_gbps": r.expected_gbps,
            "ok": r.ok,
            "error": r.error,
            "path": [_link(lk) for lk in outcome.paths.get(r.key, ())],
        }
        if (r.client.guid, r.server.guid, r.attempt) in raw:
            rec["client_output"], rec["server_output"] = raw[(r.client.guid, r.server.guid, r.attempt)]
        out.append(rec)
    return out


def save(outcome: SweepOutcome, source: str, names: dict[Guid, str] | None, stored: StoreAccess) -> int:
    from fabric.store import ProbeResultRow, RawCapture

    records = outcome_records(outcome)
    seen = {g for rec in records for lk in rec["path"] for g in (lk[0], lk[2])}
    doc = {
        "format": FORMAT,
        "pattern": outcome.plan.pattern,
        "backend": outcome.backend,
        "names": {g: n for g, n in (names or {}).items() if g in seen},
        "efficiency": outcome.efficiency,
        # cables below their peers and the rate they should give: show judges fast pairs by them
        "design_gbps": [
            [a, pa, b, pb, gbps] for ((a, pa), (b, pb)), gbps in outcome.plan.design_gbps.items()
        ],
        "retest_passes": outcome.retest_passes,
        "followup_probes": outcome.followup_probes,
        "results": records,
    }
    now = time.time()
    with stored.write() as store:
        sweep_id = store.save_sweep(
            now - outcome.seconds, outcome.plan.pattern, f"{outcome.backend}: {source}"
        )
        cap = store.save_capture(
            RawCapture("probe", "ib_write_bw", json.dumps(doc), now, source, (), "sweep/1")
        )
        rows = [
            ProbeResultRow(
                r.client.host,
                r.client.device,
                r.server.host,
                r.server.device,
                r.gbps,
                r.line_rate_gbps,
                r.ok,
                r.error,
                cap,
            )
            for r in outcome.results
        ]
        store.add_probe_results(sweep_id, rows)
        store.finish_sweep(sweep_id, now)
    return sweep_id


@dataclass(frozen=True)
class ShownSweep:
    id: int
    pattern: str
    source: str
    started: float
    finished: float | None
    results: tuple[PairResult, ...]
    suspects: tuple[Suspect, ...]
    names: dict[Guid, str]
    retest_passes: int = 0
    followup_probes: int = 0
    efficiency: float | None = None
    tie: tuple[Suspect, ...] = ()  # the top suspects no follow-up told apart
    unexplained: tuple[PairResult, ...] = ()  # slow or failed pairs that cross no suspect


def show(sweep_id: int | None, stored: StoreAccess) -> ShownSweep:
    """A stored sweep (the newest when no id) with its suspects ranked again from the stored routes."""
    with stored.require() as store:
        if sweep_id is None:
            sweeps = store.list_sweeps()
            if not sweeps:
                raise StoreError("no sweeps stored yet (run 'ibfab sweep run')")
            sweep_id = sweeps[-1].id
        loaded = store.load_sweep(sweep_id)
        cap_ids = {r.capture_id for r in loaded.results if r.capture_id is not None}
        docs = [json.loads(store.load_capture(c).text) for c in sorted(cap_ids)]
    results: list[PairResult] = []
    paths: dict[tuple[Guid, Guid], list[Link]] = {}
    names: dict[Guid, str] = {}
    counts = {"retest_passes": 0, "followup_probes": 0}
    eff: float | None = None
    design: dict[LinkKey, float] = {}
    try:
        for doc in docs:
            names.update(doc.get("names", {}))
            for k in counts:
                counts[k] += int(doc.get(k) or 0)
            if doc.get("efficiency") is not None:
                eff = float(doc["efficiency"])
            for a, pa, b, pb, gbps in doc.get("design_gbps", ()):
                design[((str(a), int(pa)), (str(b), int(pb)))] = float(gbps)
            for rec in doc["results"]:
                c, s = (
                    Endpoint(e["host"], e["device"], Guid(e["guid"]), e["leaf"], int(e["rail"]))
                    for e in (rec["client"], rec["server"])
                )
                r = PairResult(
                    c,
                    s,
                    int(rec["round"]),
                    rec["gbps"],
                    rec["line_rate_gbps"],
                    bool(rec["ok"]),
                    rec["error"],
                    str(rec["backend"]),
                    int(rec["attempt"]),
                    rec.get("expected_gbps"),
                )
                results.append(r)
                if rec["path"]:
                    paths[r.key] = [
                        Link(PortRef(a, int(pa)), PortRef(b, int(pb)), int(w), str(sp))
                        for a, pa, b, pb, w, sp in rec["path"]
                    ]
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"sweep {sweep_id}: unreadable stored records ({exc})") from exc
    head = loaded.sweep
    suspects = rank(results, paths, names=names, design=design, efficiency=eff)
    return ShownSweep(
        head.id,
        head.pattern,
        head.source,
        head.started,
        head.finished,
        tuple(results),
        tuple(suspects),
        names,
        counts["retest_passes"],
        counts["followup_probes"],
        eff,
        tuple(tied(suspects)),
        tuple(unexplained(results, paths, suspects)),
    )


def suspects_to_dict(
    suspects: Sequence[Suspect], names: dict[Guid, str] | None = None, limit: int = 10
) -> list[dict[str, Any]]:
    names = names or {}

    def end(ref: PortRef) -> dict[str, Any]:
        return {"guid": ref.guid, "port": ref.port, "name": names.get(ref.guid, ref.guid)}

    return [
        {
            "a": end(s.link.a),
            "b": end(s.link.b),
            "score": s.score,
            "group": s.group,
            "tied": sum(1 for t in suspects if t.group == s.group) > 1,
            "direction_from": s.direction,
            "reason": s.reason,
            "slow_pairs": [f"{r.client.label} -> {r.server.label}" for r in s.slow_pairs],
            "fast_pairs": [f"{r.client.label} -> {r.server.label}" for r in s.fast_pairs],
        }
        for s in suspects[:limit]
    ]


def results_to_dict(results: Sequence[PairResult]) -> list[dict[str, Any]]:
    return [
        {
            "client": r.client.label,
            "server": r.server.label,
            "round": r.round,
            "attempt": r.attempt,
            "backend": r.backend,
            "gbps": r.gbps,
            "line_rate_gbps": r.line_rate_gbps,
            "expected_gbps": r.expected_gbps,
            "ok": r.ok,
            "error": r.error,
        }
        for r in results
    ]


__all__ = ["IbfabError", "SweepContext", "prepare", "run_lab", "run_ssh", "save", "show", "sweep_source"]
