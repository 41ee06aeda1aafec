"""A twin of a discovered fabric: built from a capture, an ibdiagnet run or a stored snapshot, proved
equal to it, and kept up between checks.

:func:`build_twin` writes the fabric as an ibsim net file (:func:`topology.twin_net.twin_net`,
with OpenSM's LID cache so the twin keeps the source's LIDs), brings it up as a lab
(:func:`fabric.lab.driver.up_sim`: ibsim and the real OpenSM running the site's engine), runs the
real ``ibnetdiscover`` on it through its lab driver and compares what it reads with the source
(:func:`topology.twin_compare.compare_twin`). A twin whose discovery differs from the source in a
way the simulator does not explain is not used for any check.

One twin per fabric: its lab is named after the fabric's lowest switch GUID (as the fabric's
change lock is, :func:`fabric.app.isolation.limits.fabric_key`), and ``twin.json`` in its
directory records what it copies: the topology's content key (:func:`topology.twin_net.topology_key`),
the engine and the evidence for it. :func:`ensure_twin` reuses a running twin whose key and
engine match and rebuilds it otherwise (the topology changed, or the engine).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabric.advise.twin_engine import EngineChoice
from fabric.app.discovery.discover import Discovery, analyse, discover
from fabric.app.session import Session, StoreAccess, choose_source
from fabric.app.source import Source
from fabric.lab import driver as lab
from fabric.lab.driver import TWIN_FILE, LabState, SimFabric
from topology.errors import IbfabError, LabError, UsageError
from topology.ibnetdiscover import parse_ibnetdiscover_text
from topology.model import Fabric, NodeKind
from topology.twin_compare import TwinComparison, compare_twin
from topology.twin_net import TwinNet, topology_key, twin_net

PREFIX = "twin-"
DISCOVERED = "twin-discovery.txt"  # the twin's own ibnetdiscover output, read at build
DEFAULT_ROUTING = "minhop"  # OpenSM's own default: what a twin runs when the site's is unknown
DISCOVER_TIMEOUT = 600.0
AUDIT = "twin-audit.db"  # the twin's own audit log: what checks did to it and undid


@dataclass(frozen=True)
class Twin:
    """A running twin and what it copies."""

    name: str  # the lab's name
    key: str  # the topology's content key
    source: str  # what it copies, in words
    engine: EngineChoice  # the site's engine, as far as it is known
    routing: str  # what the twin's OpenSM runs (-R)
    comparison: TwinComparison  # the source against the twin's own discovery
    notes: tuple[str, ...]  # what the simulator runs otherwise than the source
    state: LabState
    built: bool  # brought up by this call (False: a running twin kept)
    seconds: float  # how long bringing it up (or finding it) took
    lfts_file: str | None = None  # the tables OpenSM's file engine loads
    stats: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "key": self.key,
            "source": self.source,
            "engine": self.engine.to_dict(),
            "routing": self.routing,
            "comparison": self.comparison.to_dict(),
            "notes": list(self.notes),
            "built": self.built,
            "seconds": round(self.seconds, 3),
            "switches": self.state.switches,
            "hcas": self.state.hcas,
            "lab": self.state.to_dict(),
        }


def twin_name(fabric: Fabric) -> str:
    """The lab name of ``fabric``'s twin: its lowest switch GUID (its first node without one)."""
    switches = sorted(g for g, n in fabric.nodes.items() if n.kind is NodeKind.SWITCH)
    first = switches[0] if switches else min(fabric.nodes, default="0x0")
    return PREFIX + first[2:]


def twin_session(name: str) -> Session:
    """The session on twin ``name``: its lab's driver, as any lab is reached, and its own audit
    log in its directory (what a check does to the twin is never in the operator's store)."""
    return Session(Source.lab(name), StoreAccess(lab.lab_dir(name) / AUDIT))


def read_from(ref: str, session: Session) -> Discovery:
    """The fabric ``--from`` names: an ibdiagnet run's directory, a saved capture (ibnetdiscover
    output), else a stored snapshot (an id, ``latest`` or a label in the session's store)."""
    path = Path(ref)
    if path.is_dir():
        return discover(session.on(Source.ibdiagnet(ref)))
    if path.is_file() or ref == "-":
        return discover(session.on(choose_source(session.store, ref)))
    if "/" in ref or ref.endswith((".txt", ".topo", ".out")):
        raise UsageError(f"{ref}: no such file or directory (give a capture, an ibdiagnet run or a snapshot)")
    return discover(session.on(Source.snapshot(ref)))


@contextlib.contextmanager
def twin_lock(name: str) -> Iterator[None]:
    """One process at a time builds or changes twin ``name`` (a check changes it and puts it back)."""
    path = lab.labs_root() / f"{name}.twin.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _record_path(name: str) -> Path:
    return lab.lab_dir(name) / TWIN_FILE


def read_record(name: str) -> dict[str, Any] | None:
    """What twin ``name`` copies (its ``twin.json``), None when there is no such twin."""
    try:
        data: dict[str, Any] = json.loads(_record_path(name).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise LabError(f"{_record_path(name)}: unreadable twin record ({exc})") from exc
    return data


def recorded_engine(name: str) -> EngineChoice | None:
    """The engine choice twin ``name`` was built with (None: no twin of that name)."""
    data = read_record(name)
    if data is None:
        return None
    e = data.get("engine") or {}
    return EngineChoice(
        e.get("routing"),
        e.get("source") or "",
        tuple(e.get("evidence") or ()),
        e.get("unknown") or "",
        bool(e.get("operator")),
    )


def build_twin(
    d: Discovery,
    engine: EngineChoice,
    *,
    name: str | None = None,
    lfts_file: str | None = None,
    qos: bool = False,
) -> Twin:
    """Bring up the twin of ``d`` (stopping a lab of the same name first), discover it and compare;
    ``qos``: its OpenSM runs with QoS (``-Q``), setting the ports' SL2VL tables."""
    start = time.monotonic()
    name = name or twin_name(d.fabric)
    net = twin_net(d.fabric)
    if net.attach is None:
        raise UsageError(f"{d.source}: no cable, so nothing could attach to a twin of it")
    routing = engine.routing or DEFAULT_ROUTING
    if "file" in engine.engines and lfts_file is None:
        raise UsageError("the file engine loads the site's forwarding tables: give them with --lfts DUMP")
    key = topology_key(d.fabric)
    record = {
        "key": key,
        "source": d.source,
        "engine": engine.to_dict(),
        "routing": routing,
        "lfts_file": lfts_file,
        "qos": qos,
        "node_ids": dict(net.node_ids),
        "notes": list(net.notes),
        "built": time.time(),
    }
    sim = SimFabric(
        net.net,
        net.limits,
        f"twin of {d.source}",
        (),
        net.switches,
        net.hcas,
        {TWIN_FILE: json.dumps(record)},
        {"guid2lid": net.guid2lid},
    )
    with contextlib.suppress(LabError):
        lab.down(name)
    up_start = time.monotonic()
    lab.up_sim(sim, name, routing=routing, lfts_file=lfts_file, qos=qos)
    up_seconds = time.monotonic() - up_start
    t0 = time.monotonic()
    comparison = _discover_and_compare(name, d.fabric, net)
    stats = {"up": up_seconds, "discover_compare": time.monotonic() - t0}
    record["comparison"] = comparison.to_dict()
    _record_path(name).write_text(json.dumps(record))
    return Twin(
        name,
        key,
        d.source,
        engine,
        routing,
        comparison,
        net.notes,
        lab.status(name),
        True,
        time.monotonic() - start,
        str(lab.lab_dir(name) / "lfts.dump") if lfts_file else None,
        stats,
    )


def _discover_and_compare(name: str, source: Fabric, net: TwinNet) -> TwinComparison:
    res = twin_session(name).driver.run_tool(["ibnetdiscover"], DISCOVER_TIMEOUT)
    (lab.lab_dir(name) / DISCOVERED).write_text(res.stdout)
    twin_fabric = parse_ibnetdiscover_text(res.stdout, f"lab {name}")
    return compare_twin(source, twin_fabric, net)


def running_twin(name: str) -> Twin | None:
    """Twin ``name`` as recorded, when its lab is running (None otherwise)."""
    data = read_record(name)
    if data is None:
        return None
    try:
        state = lab.status(name)
    except LabError:
        return None
    if not state.running:
        return None
    cmp = data.get("comparison") or {}
    return Twin(
        name,
        str(data["key"]),
        str(data["source"]),
        recorded_engine(name) or EngineChoice(None, ""),
        str(data["routing"]),
        _comparison_of(cmp),
        tuple(data.get("notes") or ()),
        state,
        False,
        0.0,
        str(lab.lab_dir(name) / "lfts.dump") if data.get("lfts_file") else None,
    )


def _comparison_of(data: dict[str, Any]) -> TwinComparison:
    """A recorded comparison back as a record (its listed differences as they were kept)."""
    from topology.twin_compare import TwinDifference

    src, twin = data.get("source") or {}, data.get("twin") or {}
    return TwinComparison(
        int(src.get("nodes", 0)),
        int(src.get("links", 0)),
        int(src.get("lids", 0)),
        int(twin.get("nodes", 0)),
        int(twin.get("links", 0)),
        tuple(
            TwinDifference(x["kind"], x["what"], x["source"], x["twin"], x.get("explained") or "")
            for x in data.get("differences") or ()
        ),
        tuple((c["kind"], int(c["differences"]), int(c["explained"])) for c in data.get("counts") or ()),
    )


def ensure_twin(d: Discovery, engine: EngineChoice, *, lfts_file: str | None = None) -> Twin:
    """The running twin of ``d`` with ``engine``: kept when its topology key and engine match, else
    built (again). The caller holds :func:`twin_lock`."""
    start = time.monotonic()
    name = twin_name(d.fabric)
    routing = engine.routing or DEFAULT_ROUTING
    have = running_twin(name)
    same = have is not None and have.key == topology_key(d.fabric) and have.routing == routing
    if have is not None and same and lfts_file in (None, have.lfts_file):
        return Twin(
            have.name,
            have.key,
            have.source,
            engine,
            have.routing,
            have.comparison,
            have.notes,
            have.state,
            False,
            time.monotonic() - start,
            have.lfts_file,
        )
    if have is not None and have.lfts_file and lfts_file is None and "file" in engine.engines:
        lfts_file = have.lfts_file  # the same site tables again, for a twin rebuilt on a new topology
    return build_twin(d, engine, name=name, lfts_file=lfts_file)


def twin_discovery(twin: Twin) -> Discovery:
    """The twin's fabric as its own ibnetdiscover read it at build (classified, as a Discovery)."""
    path = lab.lab_dir(twin.name) / DISCOVERED
    try:
        text = path.read_text()
    except OSError as exc:
        raise LabError(
            f"{path}: the twin's discovery is missing ({exc.strerror or exc}); rebuild it"
        ) from exc
    return analyse(parse_ibnetdiscover_text(text, f"lab {twin.name}"), text, f"lab {twin.name}")


def require_equal(twin: Twin) -> None:
    """A LabError when the twin does not show the fabric it copies (no check may rest on it)."""
    if twin.comparison.equal:
        return
    first = next((x for x in twin.comparison.differences if not x.explained), None)
    counts = ", ".join(f"{n - e} {k}" for k, n, e in twin.comparison.counts if n > e)
    detail = f" (e.g. {first.what}: source {first.source}, twin {first.twin})" if first else ""
    raise LabError(
        f"twin {twin.name} does not show the fabric it copies: {counts}{detail}; no routing check rests on it"
    )


def mark_stale(name: str) -> None:
    """Twin ``name`` no longer shows its fabric (a port a check took out did not come back): the
    next check builds it again."""
    data = read_record(name)
    if data is not None:
        data["key"] = "stale"
        _record_path(name).write_text(json.dumps(data))


def stop_twin(name: str) -> None:
    with contextlib.suppress(IbfabError):
        lab.down(name)
