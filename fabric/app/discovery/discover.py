"""Discovery use case: get ibnetdiscover text from a source, parse, classify, find anomalies.

Sources: a saved file or stdin (its text read when the session was built), an ibdiagnet output
directory, a stored topology snapshot (in the session's store), this machine (runs the real
``ibnetdiscover``), a management host over SSH, or a lab fabric (``ibfab lab``): the session's
driver runs the tool. The CLI and the TUI both call :func:`discover`; neither parses nor connects.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabric.app.source import SourceKind
from topology.anomaly import Anomaly
from topology.chassis import Chassis, board_chassis, find_chassis
from topology.classify import Classification, Role, classify
from topology.errors import CommandFailed, UsageError
from topology.ibnetdiscover import parse_ibnetdiscover_text
from topology.model import Fabric
from topology.wiring import find_anomalies

if TYPE_CHECKING:
    from fabric.app.session import Session, StoreAccess
    from fabric.store import TopologySummary

IBNETDISCOVER_TIMEOUT = 300.0
_ROLE = attrgetter("role")
TIER_NAMES = {0: "hca", 1: "leaf", 2: "spine", 3: "core"}


@dataclass(frozen=True)
class Discovery:
    fabric: Fabric
    classification: Classification
    anomalies: tuple[Anomaly, ...]
    raw_text: str
    source: str
    tool_warnings: tuple[str, ...] = field(default=())
    # The stored snapshot this was read from (``--snapshot``, or the newest when none was given).
    stored: TopologySummary | None = None
    # Director chassis: switches sharing a system image GUID (topology.chassis).
    chassis: tuple[Chassis, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return discovery_to_dict(self)


def analyse(
    fabric: Fabric, raw_text: str = "", source: str = "", tool_warnings: tuple[str, ...] = ()
) -> Discovery:
    cls = classify(fabric)
    return Discovery(
        fabric,
        cls,
        tuple(find_anomalies(fabric, cls)),
        raw_text,
        source or fabric.source,
        tool_warnings,
        chassis=find_chassis(fabric, cls),
    )


def discover_text(text: str, source: str) -> Discovery:
    return analyse(parse_ibnetdiscover_text(text, source), text, source)


def fetch_ibnetdiscover(session: Session) -> tuple[str, tuple[str, ...]]:
    """Raw ibnetdiscover text and the tool's warning lines for the session's source."""
    src = session.source
    if not src.runs_tools:
        if src.text is None:
            raise UsageError(f"no text given for {src.label}")
        return src.text, ()
    res = session.driver.run_tool(["ibnetdiscover"], IBNETDISCOVER_TIMEOUT)
    return res.stdout, _warnings(res.stderr)


def discover(session: Session) -> Discovery:
    """The fabric of the session's source, classified, with its anomalies."""
    src = session.source
    if src.kind is SourceKind.SNAPSHOT:
        return discover_stored(src.target, session.store)
    if src.kind is SourceKind.IBDIAGNET:
        return discover_ibdiagnet(src.target)
    raw, warnings = fetch_ibnetdiscover(session)
    if src.runs_tools and not raw.strip():
        raise CommandFailed(["ibnetdiscover"], 0, "\n".join(warnings) or "no output", src.label)
    fabric = parse_ibnetdiscover_text(raw, src.label)
    return analyse(fabric, raw, src.label, warnings)


def discover_stored(ref: str, stored: StoreAccess) -> Discovery:
    """A stored topology snapshot (an id, ``latest`` or a label) as a Discovery: nothing runs.

    The fabric is the one stored with the snapshot; the raw text is the capture it was read from."""
    with stored.require() as store:
        st = store.load_topology(ref)
        raw = store.load_capture(st.summary.capture_id).text if st.summary.capture_id is not None else ""
    return replace(analyse(st.fabric, raw, f"snapshot {st.id}"), stored=st.summary)


# stderr lines that say nothing about the fabric (the lab's umad2sim greeting).
_NOISE = ("sim_connect: attached as client",)


def _warnings(stderr: str) -> tuple[str, ...]:
    lines = (line.strip() for line in stderr.splitlines())
    return tuple(line for line in lines if line and not any(n in line for n in _NOISE))


# -- the JSON form (stable schema: nodes, links, anomalies, chassis, pods, summary) ------------------
def discovery_to_dict(d: Discovery) -> dict[str, Any]:
    fabric, cls = d.fabric, d.classification
    in_chassis = board_chassis(d.chassis)
    leaf_pod = {leaf: p.index for p in cls.pods for leaf in p.leaves}
    nodes = []
    for guid, node in fabric.nodes.items():
        c = cls.nodes[guid]
        box = in_chassis.get(guid)
        board = box.kind_of(guid) if box is not None else None
        nodes.append(
            {
                "guid": guid,
                "kind": "switch" if node.kind.value == "switch" else "hca",
                "name": c.name,
                "description": node.description,
                "role": c.role.value,
                "tier": c.tier,
                "tier_name": c.tier_name,
                "section": c.section,
                "host": c.host,
                "adapter": c.adapter,
                "hca_index": c.hca_index,
                "rail": c.rail,
                "group": c.group,
                "pod": leaf_pod.get(c.leaf if c.leaf is not None else guid),
                "chassis": box.guid if box is not None else None,
                "board": board.value if board is not None else None,
                "lid": node.lid,
                "ports": node.nports,
                "uplinks": cls.uplinks.get(guid),
            }
        )
    links = [
        {
            "a": {"guid": lk.a.guid, "port": lk.a.port, "name": cls.nodes[lk.a.guid].name},
            "b": {"guid": lk.b.guid, "port": lk.b.port, "name": cls.nodes[lk.b.guid].name},
            "width": lk.width,
            "speed": lk.speed,
            "gbps": lk.gbps,
        }
        for lk in fabric.links
    ]
    anomalies = [
        {
            "kind": a.kind,
            "severity": a.severity.value,
            "nodes": list(a.nodes),
            "ports": [{"guid": p.guid, "port": p.port} for p in a.ports],
            "message": a.message,
        }
        for a in d.anomalies
    ]
    # Every host with its role and the rule it rests on (topology.hostroles).
    hosts = [{**r.to_dict(), "hcas": len(cls.hosts.get(host, ()))} for host, r in cls.host_roles.items()]
    chassis = [
        {
            "guid": box.guid,
            "name": box.name,
            "line_boards": list(box.line_boards),
            "fabric_boards": list(box.fabric_boards),
            "unsure_boards": list(box.unsure_boards),
        }
        for box in d.chassis
    ]
    pods = [
        {
            "index": p.index,
            "leaves": list(p.leaves),
            "uppers": list(p.uppers),
            "hosts": len(p.hosts),
        }
        for p in cls.pods
    ]
    return {
        "nodes": nodes,
        "links": links,
        "hosts": hosts,
        "anomalies": anomalies,
        "chassis": chassis,
        "pods": pods,
        "summary": summary(d),
    }


def summary(d: Discovery) -> dict[str, Any]:
    cls = d.classification
    # Roles compared and counted as members (a member's .value is a Python-level property: this
    # runs over every node of the fabric, and each command that shows the summary pays it).
    switch = Role.SWITCH  # read once: an enum member's lookup costs over 100 ns
    tiers = Counter(
        (c.section, c.tier if c.tier is not None else 99, c.tier_name)
        for c in cls.nodes.values()
        if c.role is switch
    )
    roles = {role.value: n for role, n in Counter(map(_ROLE, cls.nodes.values())).items()}
    return {
        "source": d.source,
        "switches": len(d.fabric.switches()),
        "hcas": len(d.fabric.hcas()),
        "hosts": len(cls.hosts),
        "links": len(d.fabric.links),
        "rails": len(cls.rail_indexes),
        "rail_optimized": cls.rail_optimized,
        "rail_hca_indexes": list(cls.rail_indexes),
        "groups": len(cls.groups),
        "group_kind": cls.group_kind.value,
        "pods": len(cls.pods),
        "chassis": len(d.chassis),
        "chassis_boards": {
            "line": sum(len(c.line_boards) for c in d.chassis),
            "fabric": sum(len(c.fabric_boards) for c in d.chassis),
            "unsure": sum(len(c.unsure_boards) for c in d.chassis),
        },
        "tiers": _by_name(tiers),
        # The compute fabric and its side groups (management, storage: topology.sections).
        "sections": [
            {
                "name": sec.name,
                "kind": sec.kind,
                "switches": len(sec.switches),
                "leaves": sec.leaves,
                "hosts": sec.hosts,
                "hcas": sec.hcas,
                "tiers": sec.depth,
            }
            for sec in cls.sections
        ],
        "parse_warnings": list(d.fabric.warnings),
        "roles": dict(sorted(roles.items())),
        # Hosts by role (topology.hostroles; each host with its rule under "hosts").
        "host_roles": dict(sorted(Counter(r.role for r in cls.host_roles.values()).items())),
        "service_leaves": sorted(cls.nodes[g].name for g in cls.service_leaves),
        "anomalies": dict(sorted(Counter(a.kind for a in d.anomalies).items())),
        "tool_warnings": len(d.tool_warnings),
    }


def _by_name(tiers: Counter[tuple[int, int, str]]) -> dict[str, int]:
    """Switches per tier name, compute tiers first, then each side group's, hostless last."""
    out: dict[str, int] = {}
    for (_, _, name), n in sorted(tiers.items(), key=lambda kv: (kv[0][1] == 99, kv[0])):
        out[name] = out.get(name, 0) + n
    return out


def discover_ibdiagnet(path: str | Path) -> Discovery:
    """Discovery (classification, anomalies) of the fabric an ibdiagnet run saw."""
    # Imported here: ``discover --input FILE`` (a capture) reads no ibdiagnet run.
    from fabric.app.discovery.ibdiag_files import ibdiagnet_files
    from topology.ibdiag_csv import parse_db_csv_fabric, read_db_csv

    files = ibdiagnet_files(path)
    text = read_db_csv(files.db_csv)
    source = str(files.db_csv)
    return analyse(parse_db_csv_fabric(text, source), text, source)
