"""Upgrading older stores, each step run once by its schema migration, inside its transaction
(killed, or an error: the store stays as it was).

* version 2: the ``port_counters`` rows become counter blocks; values at or above 2**63 were
  stored two's-complement (negative) and come back as they were read;
* version 7: the typed fields of audit entries and findings, read from the text older versions
  kept (the only place that text is read back).
"""

from __future__ import annotations

import json
import re
import shlex
import sqlite3

from fabric.core.fields import COUNTER_NAMES, PORT_COUNTER_FIELDS
from fabric.store import blocks
from fabric.store.codec import BlockCodec
from topology.model import normalise_guid

_TWO_64 = 1 << 64
_FIRST_COUNTER = PORT_COUNTER_FIELDS.index(COUNTER_NAMES[0])


def blocks_from_rows(db: sqlite3.Connection) -> None:
    """Convert every snapshot's rows to a block, oldest first (each a change against the one
    before, as new snapshots are), then drop the rows."""
    where = str(db.execute("PRAGMA database_list").fetchone()[2] or "store")
    codec = BlockCodec(where)
    select = f"SELECT {', '.join(PORT_COUNTER_FIELDS)} FROM port_counters WHERE snapshot_id = ?"
    ids = [r[0] for r in db.execute("SELECT id FROM counter_snapshots ORDER BY id").fetchall()]
    for sid in ids:
        rows = [
            (
                *r[:_FIRST_COUNTER],
                *(v + _TWO_64 if type(v) is int and v < 0 else v for v in r[_FIRST_COUNTER:]),
            )
            for r in db.execute(select, (sid,))
        ]
        ports, values = blocks.from_rows(rows, f"{where}: counter snapshot {sid}")
        codec.append(db, sid, ports, values)
        db.execute("UPDATE counter_snapshots SET ports = ? WHERE id = ?", (len(ports), sid))
    db.execute("DROP TABLE port_counters")


# -- version 7: typed audit entries and finding subjects -------------------------------------------
_LINK_SUBJECT = re.compile(r"^(?P<ag>0x[0-9a-f]+)/(?P<ap>\d+)-(?P<bg>0x[0-9a-f]+)/(?P<bp>\d+)$")
_PORT_TARGET = re.compile(r"^(?P<guid>0x[0-9a-fA-F]+)/(?P<port>\d+)(?: |$)")
_LAB = re.compile(r" \[lab (?P<name>[^\]]+)\]")


def typed_records(db: sqlite3.Connection) -> None:
    """Fill the typed columns of every older audit entry and finding from its text, as the code
    that wrote them spelled it: an isolation's target ``GUID/PORT name <-> far`` and command
    ``ibportstate ... [lab NAME] + console: ...``; a drain's target ``node`` or ``node (fabric
    host H)``; a finding's subject ``GUID/PORT-GUID/PORT`` or a node GUID. What the text does not
    say stays empty (an old entry never said whether it ran here or over SSH)."""
    for row_id, action, target, command in db.execute(
        "SELECT id, action, target, command FROM audit_log"
    ).fetchall():
        db.execute(
            "UPDATE audit_log SET argv = ?, ports = ?, nodes = ?, hosts = ?, source_kind = ?,"
            " source_target = ? WHERE id = ?",
            (*_audit_fields(str(action), str(target), str(command)), row_id),
        )
    for day, subject, kind in db.execute("SELECT day, subject, kind FROM findings_history").fetchall():
        m = _LINK_SUBJECT.match(str(subject))
        ends = (
            (m["ag"], int(m["ap"]), m["bg"], int(m["bp"]), None) if m else (None, None, None, None, subject)
        )
        db.execute(
            "UPDATE findings_history SET a_guid = ?, a_port = ?, b_guid = ?, b_port = ?, node = ?"
            " WHERE day = ? AND subject = ? AND kind = ?",
            (*ends, day, subject, kind),
        )


def _audit_fields(action: str, target: str, command: str) -> tuple[str, str, str, str, str, str]:
    ports: list[list[object]] = []
    nodes: list[str] = []
    hosts: list[str] = []
    lab = _LAB.search(command)
    ran = command[: lab.start()] if lab else command.split(" + console:", 1)[0]
    if action in ("isolate", "deisolate"):
        m = _PORT_TARGET.match(target)
        try:
            if m:
                ports.append([normalise_guid(m["guid"]), int(m["port"])])
        except ValueError:  # not a 64-bit GUID: no port ibfab wrote
            pass
    elif action in ("drain", "resume"):
        head, _, rest = target.partition(" (fabric host ")
        nodes.append(target.split(" ", 1)[0])
        hosts.append(rest.rstrip(")") if rest else head)
        ran = ran.removesuffix(" [forced]")
    try:
        argv = shlex.split(ran)
    except ValueError:  # a command ibfab did not write: kept as text only
        argv = []
    return (
        json.dumps(argv),
        json.dumps(ports),
        json.dumps(nodes),
        json.dumps(hosts),
        "lab" if lab else "",
        lab["name"] if lab else "",
    )
