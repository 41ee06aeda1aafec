"""The read side that the TUI and ``ibfab tui``'s report share: store state, fabric, health, details.

Nothing here parses, connects or scores: it opens the store (one :class:`Store` per call, so any
thread may call it), and hands what it reads to the services that own the logic
(:func:`fabric.discovery.analyse`, :func:`fabric.health.assess`, and, when they exist,
``fabric.healthsvc``, ``fabric.sweeps``, ``fabric.advise`` / ``fabric.isolation``). A service that
is not there yet is reported as :class:`Unavailable`, never replaced by made-up data.

Cheap calls (:meth:`FabricService.state`, :meth:`FabricService.latest_snapshot_id`) are a few
indexed SELECTs, so a UI can paint and poll with them; :meth:`FabricService.load_view` (topology +
classification) and :meth:`FabricService.health` (counter window + scoring) take seconds on a
16,384-HCA fabric and belong in a worker thread.
"""

from __future__ import annotations

import importlib
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING

from fabric.discovery import TIER_NAMES, Discovery, analyse, summary
from fabric.store import CounterSnapshotInfo, ProbeSweep, Store, StoredSweep, TopologySummary
from topology.classify import Role
from topology.errors import UsageError
from topology.model import Guid, Link

if TYPE_CHECKING:
    from fabric.advise.actions import Action
    from fabric.health import HealthReport, LinkHealth
    from fabric.isolation import AppliedChange, IsolationPlan

LinkKey = tuple[tuple[str, int], tuple[str, int]]
# How far back health looks from the newest counter snapshot when fabric.healthsvc is absent.
HEALTH_WINDOW_S = 3600.0
SNAPSHOT_SPREAD_S = 5.0
NO_DATA = "no data"
STATUS_ORDER: Mapping[str, int] = MappingProxyType(
    {"critical": 0, "warn": 1, "watch": 2, "ok": 3, NO_DATA: 4}
)


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A feature whose service has not landed (or failed to import): say so, show nothing made up."""

    feature: str
    reason: str

    def __str__(self) -> str:
        return f"{self.feature}: not available yet ({self.reason})"


def optional_service(module: str, feature: str, *needed: str) -> ModuleType | Unavailable:
    """Import ``module`` if it exists and has the attributes ``needed``; else an :class:`Unavailable`."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        return Unavailable(feature, f"{module} is not installed: {exc}")
    missing = [name for name in needed if not hasattr(mod, name)]
    if missing:
        return Unavailable(feature, f"{module} has no {', '.join(missing)} yet")
    return mod


@dataclass(frozen=True, slots=True)
class StoreState:
    """What is in the store, from a few cheap queries (safe to poll)."""

    db: str
    topology: TopologySummary | None
    topologies: int
    latest_snapshot: CounterSnapshotInfo | None
    snapshots: int
    last_sweep: ProbeSweep | None
    sweeps: int


@dataclass(frozen=True, slots=True)
class LinkRow:
    """One cable as the links table shows it (health fields filled in by :func:`with_health`)."""

    index: int
    key: LinkKey
    a_name: str
    a_port: int
    b_name: str
    b_port: int
    tiers: str  # "hca-leaf", "leaf-spine", "spine-core"
    rail: int | None
    group: int | None
    width: int
    speed: str
    status: str = NO_DATA
    score: int | None = None
    ber: float | None = None
    flaps_per_hour: float = 0.0
    reasons: tuple[str, ...] = ()
    search: str = ""  # lower-case names, tiers, rail and group: what the filter box matches


@dataclass(frozen=True)
class FabricView:
    """The latest stored topology, classified, with one :class:`LinkRow` per cable."""

    topology: TopologySummary
    discovery: Discovery
    links: tuple[LinkRow, ...]
    row_of: Mapping[LinkKey, int] = field(default_factory=dict)

    def name(self, guid: str) -> str:
        c = self.discovery.classification.nodes.get(Guid(guid))
        return c.name if c is not None else guid

    def tier(self, guid: str) -> int | None:
        c = self.discovery.classification.nodes.get(Guid(guid))
        return c.tier if c is not None else None


@dataclass(frozen=True)
class HealthView:
    """A health report over the counter window ending at the newest snapshot."""

    report: HealthReport
    snapshot_id: int
    since: float
    now: float
    by_key: Mapping[LinkKey, LinkHealth]


@dataclass(frozen=True, slots=True)
class Overview:
    """The overview screen and the no-terminal report, as data."""

    state: StoreState
    fabric: Mapping[str, object]  # discovery summary (switch tiers, hosts, rails, groups ...)
    links_by_status: Mapping[str, int]
    worst: tuple[LinkRow, ...]
    alerts: tuple[str, ...]
    health_note: str


@dataclass(frozen=True, slots=True)
class PortLine:
    port: int
    peer_name: str
    peer_port: int
    link: LinkRow


@dataclass(frozen=True, slots=True)
class CounterSeries:
    """Per-sample deltas of one counter on one port, oldest first (for a sparkline)."""

    port: int
    counter: str
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class NodeDetail:
    guid: str
    name: str
    kind: str
    description: str
    tier_name: str | None
    rail: int | None
    group: int | None
    ports: tuple[PortLine, ...]
    anomalies: tuple[str, ...]
    hcas: tuple[str, ...]  # for a host: its HCA GUIDs


class FabricService:
    """Read-side use cases over one store. ``lab`` names the lab fabric sweeps run against."""

    def __init__(self, db: str | Path | None = None, lab: str | None = None) -> None:
        self.db = Path(db) if db is not None else None
        self.lab = lab

    def open(self) -> Store:
        return Store.open(self.db)

    # -- cheap --------------------------------------------------------------------------------
    def latest_snapshot_id(self) -> tuple[int | None, int | None]:
        """(newest topology id, newest complete counter snapshot id): what a poller compares."""
        with self.open() as store:
            tops = store.list_topologies()
            snaps = store.list_counter_snapshots()
        return (tops[-1].id if tops else None, snaps[-1].id if snaps else None)

    def state(self) -> StoreState:
        with self.open() as store:
            tops = store.list_topologies()
            snaps = store.list_counter_snapshots()
            sweeps = store.list_sweeps()
        return StoreState(
            str(store.path),
            tops[-1] if tops else None,
            len(tops),
            snaps[-1] if snaps else None,
            len(snaps),
            sweeps[-1] if sweeps else None,
            len(sweeps),
        )

    # -- topology -----------------------------------------------------------------------------
    def load_view(self) -> FabricView | None:
        """The latest topology, classified (None when the store has none)."""
        with self.open() as store:
            if not store.list_topologies():
                return None
            stored = store.load_topology("latest")
        d = analyse(stored.fabric, source=stored.summary.source)
        rows = tuple(_link_row(i, lk, d) for i, lk in enumerate(stored.fabric.links))
        return FabricView(stored.summary, d, rows, MappingProxyType({r.key: r.index for r in rows}))

    # -- health -------------------------------------------------------------------------------
    def health(self, window_s: float = HEALTH_WINDOW_S) -> HealthView | None:
        """Health (fabric.healthsvc, nothing recorded) over the window ending at the newest counter
        snapshot; None when there are no snapshots or no topology."""
        from fabric.healthsvc import assess_store

        with self.open() as store:
            snaps = store.list_counter_snapshots()
            if not snaps or not store.list_topologies():
                return None
            # ports of a snapshot are read in the seconds after it starts; keep them in the window
            now = snaps[-1].taken_at + SNAPSHOT_SPREAD_S
            hv = assess_store(store, since_s=window_s, now=now, record=False)
        report = hv.report
        return HealthView(
            report, snaps[-1].id, now - window_s, now, MappingProxyType({lh.key: lh for lh in report.links})
        )

    def rows_with_health(self, view: FabricView, health: HealthView | None) -> tuple[LinkRow, ...]:
        return with_health(view.links, health)

    def overview(self, view: FabricView | None, health: HealthView | None, state: StoreState) -> Overview:
        rows = with_health(view.links, health) if view is not None else ()
        by_status = Counter(r.status for r in rows)
        worst = tuple(sorted((r for r in rows if r.status not in ("ok", NO_DATA)), key=_worst_first)[:10])
        alerts: list[str] = []
        if view is not None:
            alerts += [
                f"CRITICAL link {_link_text(r)}: {'; '.join(r.reasons) or 'score ' + str(r.score)}"
                for r in worst
                if r.status == "critical"
            ]
            alerts += [
                f"{a.severity.value.upper()} {a.kind}: {a.message}"
                for a in view.discovery.anomalies
                if a.severity.value in ("error", "critical")
            ]
        note = (
            "no topology stored yet (run: ibfab discover --save)"
            if view is None
            else "no counter snapshots yet (run: ibfab counters collect)"
            if health is None
            else f"health over {_duration(health.now - health.since)} ending at snapshot {health.snapshot_id}"
        )
        return Overview(
            state,
            summary(view.discovery) if view is not None else {},
            {s: by_status.get(s, 0) for s in STATUS_ORDER},
            worst,
            tuple(alerts),
            note,
        )

    # -- details ------------------------------------------------------------------------------
    def node_detail(self, view: FabricView, guid: str, health: HealthView | None) -> NodeDetail:
        d, g = view.discovery, Guid(guid)
        node, c = d.fabric.nodes[g], d.classification.nodes[g]
        rows = with_health(view.links, health)
        ports = tuple(
            PortLine(port, view.name(peer.guid), peer.port, rows[view.row_of[lk.key]])
            for port, peer, lk in sorted(d.fabric.neighbours(g), key=lambda t: t[0])
        )
        hcas = d.classification.hosts.get(c.host or "", ()) if c.host else ()
        return NodeDetail(
            guid,
            c.name,
            node.kind.value,
            node.description,
            TIER_NAMES.get(c.tier) if c.tier is not None else None,
            c.rail,
            c.group,
            ports,
            tuple(a.message for a in d.anomalies if g in a.nodes),
            tuple(hcas),
        )

    def find_node(self, view: FabricView, text: str) -> str | None:
        """A node GUID by GUID, operator name or host name (its first HCA), else None."""
        cls = view.discovery.classification
        if Guid(text) in cls.nodes:
            return text
        for g, c in cls.nodes.items():
            if c.name == text:
                return g
        hcas = cls.hosts.get(text)
        return hcas[0] if hcas else None

    def counter_history(
        self,
        guid: str,
        counters: Sequence[str] = ("symbol_errors", "link_downed", "xmit_data"),
        since: float | None = None,
    ) -> list[CounterSeries]:
        """Per-port deltas of ``counters`` on node ``guid`` (xmit_data as Gb/s), oldest first."""
        from fabric.counters.deltas import compute_deltas

        with self.open() as store:
            frame = store.load_counters(since=since, guids=[guid])
        if frame.empty:
            return []
        deltas = compute_deltas(frame).sort_values(["port", "time"])
        out: list[CounterSeries] = []
        for port, part in deltas.groupby("port", sort=True):
            for name in counters:
                values = part[name].astype("float64").fillna(0.0)
                if name == "xmit_data":  # 4-byte words -> Gb/s over each interval
                    values = values * 32.0 / part["elapsed"].clip(lower=1e-9) / 1e9
                out.append(CounterSeries(int(str(port)), name, tuple(float(v) for v in values)))
        return out

    def sweeps_of(self, host: str | None = None, limit: int = 20) -> list[StoredSweep]:
        """The newest ``limit`` sweeps (only their pairs involving ``host`` if given)."""
        with self.open() as store:
            heads = store.list_sweeps()[-limit:]
            loaded = [store.load_sweep(s.id) for s in reversed(heads)]
        if host is None:
            return loaded
        return [
            StoredSweep(s.sweep, tuple(r for r in s.results if host in (r.client_host, r.server_host)))
            for s in loaded
        ]

    # -- sweeps, advice, isolation (fabric.sweeps, fabric.advise, fabric.isolation) ---------------
    # Each checks first that its service is importable (optional_service) and otherwise says so;
    # the TUI shows that sentence instead of an empty or invented list.
    def sweep_service(self) -> ModuleType | Unavailable:
        svc = optional_service("fabric.sweeps", "probe sweeps", "prepare", "run_lab", "save", "show")
        if not isinstance(svc, Unavailable) and self.lab is None:
            return Unavailable(
                "starting a sweep", "open the TUI with --lab NAME (ssh sweeps: ibfab sweep run)"
            )
        return svc

    def run_sweep(self, progress: Callable[[SweepStep], None], pattern: str = "rail-pairs") -> int:
        """Plan and run a sweep on the lab (what ``ibfab sweep run --lab``) does; returns its id."""
        from fabric import sweeps

        if self.lab is None:
            raise UsageError("a sweep from the TUI needs --lab NAME")
        ctx = sweeps.prepare(pattern, lab=self.lab)
        total = len(ctx.plan.probes)
        done = [0, 0]

        def step(text: str) -> None:
            m = _ROUND.match(text)
            if m:
                done[0] += int(m["pairs"])
                done[1] += int(m["failed"])
                progress(SweepStep(int(m["round"]), int(m["rounds"]), done[0], total, done[1], text))
            else:
                progress(SweepStep(ctx.plan.rounds, ctx.plan.rounds, done[0], total, done[1], text))

        outcome = sweeps.run_lab(ctx, self.lab, progress=step)
        return sweeps.save(outcome, ctx.source, sweeps.names_of(ctx.discovery), self._db_arg())

    def sweep_report(self, sweep_id: int) -> str:
        """Slow and failed pairs and the ranked suspect links of a stored sweep (``ibfab sweep show``)."""
        from fabric import sweeps
        from fabric.cli.sweep import render_suspects

        shown = sweeps.show(sweep_id, self._db_arg())
        bad = [r for r in shown.results if not r.ok]
        head = f"{len(shown.results)} pair results, {len(bad)} slow or failed"
        return f"{head}\nsuspect links (localization):\n{render_suspects(shown.suspects, shown.names)}"

    def recommendations(self, view: FabricView, health: HealthView | None) -> list[Advice] | Unavailable:
        """``ibfab recommend`` over the stored topology and the current health report."""
        mod = optional_service("fabric.advise.recommend", "recommendations", "recommend")
        if isinstance(mod, Unavailable):
            return mod
        if health is None:
            return Unavailable("recommendations", "no health report yet (ibfab counters collect)")
        from fabric.advise.candidates import findings_from_report
        from fabric.advise.routing_advice import SubnetManager, probe_subnet_manager
        from fabric.advise.safety import SafetyPolicy
        from fabric.isolation import open_isolations

        sm = probe_subnet_manager(lab=self.lab) if self.lab else SubnetManager()
        with self.open() as store:
            already = len(open_isolations(store))
        d = view.discovery
        recs = mod.recommend(
            d.fabric,
            d.classification,
            findings_from_report(health.report),
            SafetyPolicy(),
            sm,
            already_isolated=already,
        )
        return [
            Advice(
                a.kind.value,
                a.target,
                a.reason,
                (*a.evidence, *([f"cost: {a.impact}"] if a.impact else [])),
                a,
            )
            for a in recs.actions
        ]

    def isolation_plan(self, view: FabricView, advice: Advice) -> IsolationPlan:
        from fabric.advise.safety import SafetyPolicy
        from fabric.isolation import open_isolations, plan_isolation

        port = advice.action.port
        if port is None or advice.kind != "isolate_port":
            raise UsageError(f"{advice.kind} {advice.target}: advice only, nothing to apply here")
        with self.open() as store:
            already = len(open_isolations(store))
        d = view.discovery
        return plan_isolation(d.fabric, d.classification, [port], SafetyPolicy(), advice.reason, already)

    def apply_isolation(self, plan: IsolationPlan) -> list[AppliedChange]:
        """What ``ibfab isolate --apply --yes`` does after its plan (every port audited)."""
        from fabric.isolation import apply_plan

        if not plan.safe:
            from topology.errors import SafetyError

            raise SafetyError("the plan breaks safety rules; nothing was changed")
        with self.open() as store:
            return apply_plan(plan, store, lab=self.lab)

    def _db_arg(self) -> str | None:
        return str(self.db) if self.db is not None else None


_ROUND = re.compile(r"^round (?P<round>\d+)/(?P<rounds>\d+): (?P<pairs>\d+) pairs, (?P<failed>\d+) failed")


@dataclass(frozen=True, slots=True)
class SweepStep:
    """Progress of a running sweep: cumulative pairs and failures after ``round`` of ``rounds``."""

    round: int
    rounds: int
    pairs_done: int
    pairs: int
    slow_pairs: int
    note: str = ""


@dataclass(frozen=True, slots=True)
class Advice:
    """One recommendation as the TUI lists it; ``action`` is fabric.advise's own record."""

    kind: str
    target: str
    reason: str
    evidence: tuple[str, ...]
    action: Action

    @property
    def can_apply(self) -> bool:
        return self.kind == "isolate_port" and self.action.port is not None


def plan_text(plan: IsolationPlan) -> str:
    """The plan as ``ibfab isolate`` prints it before asking (verdicts, costs, ports, commands)."""
    lines = []
    for v in plan.safety.verdicts:
        mark = "ok  " if v.accepted else "STOP"
        lines.append(f"{mark} {v.reason}" + (f" [{v.rule.value}]" if v.rule else ""))
        lines += [f"     cost: {cost.describe()}" for cost in v.costs]
    for s in plan.steps:
        lines.append(f"  {s.name} <-> {s.far}")
        lines += [f"    [{cmd.manager} {cmd.purpose}] {cmd.text}" for cmd in s.action.commands]
    return "\n".join(lines)


def with_health(rows: Sequence[LinkRow], health: HealthView | None) -> tuple[LinkRow, ...]:
    """``rows`` with each cable's status, score, BER, flaps and reasons from ``health``."""
    if health is None:
        return tuple(rows)
    out = []
    for r in rows:
        lh = health.by_key.get(r.key)
        if lh is None:
            out.append(r)
            continue
        out.append(
            LinkRow(
                r.index,
                r.key,
                r.a_name,
                r.a_port,
                r.b_name,
                r.b_port,
                r.tiers,
                r.rail,
                r.group,
                r.width,
                r.speed,
                lh.status.value,
                lh.score,
                lh.ber.value,
                lh.flaps_per_hour,
                lh.reasons,
                r.search,
            )
        )
    return tuple(out)


def overview_report(ov: Overview) -> str:
    """The overview as plain text (``ibfab tui`` without a terminal prints this)."""
    return "\n\n".join(f"{title}\n{body}" for title, body in overview_sections(ov))


def overview_sections(ov: Overview) -> list[tuple[str, str]]:
    """(title, text) blocks shared by the TUI's overview panels and the plain report."""
    s, f = ov.state, ov.fabric
    if f:
        tiers = ", ".join(f"{n} {t}" for t, n in dict(f.get("tiers", {})).items())  # type: ignore[call-overload]
        fabric = (
            f"source {f.get('source')}\nswitches {f.get('switches')} ({tiers})\n"
            f"hosts {f.get('hosts')}  HCAs {f.get('hcas')}  links {f.get('links')}\n"
            f"rails {f.get('rails')} ({'rail-optimized' if f.get('rail_optimized') else 'not rail-optimized'})"
            f"  groups {f.get('groups')}"
        )
    else:
        fabric = "no topology stored yet (run: ibfab discover --save)"
    health = "  ".join(f"{k}: {v}" for k, v in ov.links_by_status.items()) + f"\n{ov.health_note}"
    worst = (
        "\n".join(
            f"{r.status.upper():8} {r.score if r.score is not None else '-':>3}  {_link_text(r)}  {'; '.join(r.reasons)[:80]}"
            for r in ov.worst
        )
        or "no link at watch or worse"
    )
    times = (
        f"topology   {_when(s.topology.taken_at) if s.topology else 'never'}"
        f"{f' (#{s.topology.id}, {s.topologies} stored)' if s.topology else ''}\n"
        f"collection {_when(s.latest_snapshot.taken_at) if s.latest_snapshot else 'never'}"
        f"{f' (snapshot #{s.latest_snapshot.id}, {s.snapshots} stored)' if s.latest_snapshot else ''}\n"
        f"sweep      {_when(s.last_sweep.started) + ' ' + s.last_sweep.pattern if s.last_sweep else 'never'}"
    )
    alerts = "\n".join(ov.alerts) or "none"
    return [
        ("FABRIC", fabric),
        ("HEALTH (links by status)", health),
        ("WORST LINKS", worst),
        ("LAST RUNS", times),
        (f"ALERTS ({len(ov.alerts)})", alerts),
    ]


# -- helpers ------------------------------------------------------------------------------------
def _link_row(index: int, lk: Link, d: Discovery) -> LinkRow:
    cls = d.classification.nodes
    ca, cb = cls[lk.a.guid], cls[lk.b.guid]
    # The lower tier first: an operator reads a cable from the host up.
    lo, hi, lo_port, hi_port = (
        (ca, cb, lk.a.port, lk.b.port) if (ca.tier or 0) <= (cb.tier or 0) else (cb, ca, lk.b.port, lk.a.port)
    )
    tiers = f"{_tier(lo.tier, lo.role)}-{_tier(hi.tier, hi.role)}"
    rail = lo.rail if lo.rail is not None else hi.rail
    group = lo.group if lo.group is not None else hi.group
    search = " ".join(
        x
        for x in (
            lo.name,
            hi.name,
            tiers,
            lo.host or "",
            f"rail{rail}" if rail is not None else "",
            f"group{group}" if group is not None else "",
        )
        if x
    ).lower()
    return LinkRow(
        index,
        lk.key,
        lo.name,
        lo_port,
        hi.name,
        hi_port,
        tiers,
        rail,
        group,
        lk.width,
        lk.speed,
        search=search,
    )


def _tier(tier: int | None, role: Role) -> str:
    if tier is None:
        return "switch" if role is Role.SWITCH else "hca"
    return TIER_NAMES.get(tier, f"tier{tier}")


def _worst_first(r: LinkRow) -> tuple[int, int]:
    return (STATUS_ORDER[r.status], r.score if r.score is not None else 101)


def _link_text(r: LinkRow) -> str:
    return f"{r.a_name}/{r.a_port} - {r.b_name}/{r.b_port}"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"
