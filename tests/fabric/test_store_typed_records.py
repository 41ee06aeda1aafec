"""Audit entries and finding subjects are typed records: what a change ran, on which ports or
nodes and where; what a finding is about. A store from before (schema 4, 5 or 6) gets them from
its text once, on upgrade; nothing reads the text back after."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fabric.app.isolation.isolate import plan_undo
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.store import FindingSubject, Store, schema
from topology.errors import UsageError
from topology.model import Guid, PortRef

LEAF = Guid("0x0c42a10300a00001")
OLD_ROWS = [
    # (action, target, command, result) as versions before the typed columns wrote them
    (
        "isolate",
        f"{LEAF}/5 leaf-su01-r0:5 <-> spine-01:1",
        "ibportstate -D 0,1 5 disable [lab rail]",
        "ok (exit 0)",
    ),
    (
        "isolate",
        "0x0C42A10300A00001/7 leaf-su01-r0:7 <-> spine-02:1",
        "ibportstate 12 7 disable",
        "ok (exit 0)",
    ),
    (
        "deisolate",
        f"{LEAF}/5 leaf-su01-r0:5 <-> spine-01:1",
        'ibportstate -D 0,1 5 enable [lab rail] + console: Unlink "leaf-su01-r0"[5]; ReLink "leaf-su01-r0"[5]',
        "ok (exit 0)",
    ),
    (
        "drain",
        "node1 (fabric host cn0001)",
        "scontrol update NodeName=node1 State=DRAIN 'Reason=ibfab: BER'",
        "ok",
    ),
    ("drain", "cn0002", "scontrol update NodeName=cn0002 State=DRAIN 'Reason=ibfab: BER'", "ok"),
    ("resume", "cn0002", "scontrol update NodeName=cn0002 State=RESUME [forced]", "ok"),
    ("isolate", "no port here", "ibportstate 'unclosed", "failed: x"),  # nothing typed to find
]
LINK = ((str(LEAF), 5), ("0x0c42a10300a00009", 1))


def _old_store(path: Path, monkeypatch: pytest.MonkeyPatch, version: int = 4) -> None:
    """A store of schema ``version`` (before the typed columns), holding rows as it wrote them."""
    with monkeypatch.context() as m:
        m.setattr(schema, "MIGRATIONS", tuple(x for x in schema.MIGRATIONS if x.to_version <= version))
        with Store.open(path) as store:
            assert store.schema_version == version
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO audit_log (time, user, action, target, command, result) VALUES (1.0, 'op', ?, ?, ?, ?)",
            OLD_ROWS,
        )
        db.executemany(
            "INSERT INTO findings_history (day, subject, kind, status) VALUES ('2025-01-01', ?, ?, 'warn')",
            [(f"{LINK[0][0]}/5-{LINK[1][0]}/1", "ber"), (str(LEAF), "flapping")],
        )


@pytest.mark.parametrize("version", [4, 5, 6])  # before routes (5) and run PIDs (6), and after
def test_an_old_store_gets_its_typed_fields_from_its_text_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    path = tmp_path / "old.db"
    _old_store(path, monkeypatch, version)
    with Store.open(path) as store:
        assert store.schema_version == schema.schema_version()
        log = store.audit_log()
        findings = store.load_findings_history()
    lab_isolate, local_isolate, undo, drain_mapped, drain_same, resume, odd = log
    assert lab_isolate.ports == (PortRef(LEAF, 5),) and (
        lab_isolate.source_kind,
        lab_isolate.source_target,
    ) == (
        "lab",
        "rail",
    )
    assert lab_isolate.argv == ("ibportstate", "-D", "0,1", "5", "disable")
    # this machine or SSH: the old text never said, so it stays unsaid
    assert local_isolate.ports == (PortRef(LEAF, 7),) and local_isolate.source_kind == ""
    assert undo.argv == ("ibportstate", "-D", "0,1", "5", "enable") and undo.source_target == "rail"
    assert (drain_mapped.nodes, drain_mapped.hosts) == (("node1",), ("cn0001",))
    assert drain_mapped.argv[-1] == "Reason=ibfab: BER"
    assert (drain_same.nodes, drain_same.hosts) == (("cn0002",), ("cn0002",))
    assert resume.argv == ("scontrol", "update", "NodeName=cn0002", "State=RESUME")
    assert (odd.argv, odd.ports, odd.nodes, odd.source_kind) == ((), (), (), "")
    # the text stays as it was
    assert [(e.action, e.target, e.command, e.result) for e in log] == OLD_ROWS
    assert [f.about for f in findings] == [FindingSubject.of_node(str(LEAF)), FindingSubject.of_link(LINK)]


def test_new_entries_keep_their_typed_fields_and_plain_ones_have_none(tmp_path: Path) -> None:
    with Store.open(tmp_path / "new.db") as store:
        store.audit(
            "op", "isolate", "shown to people", "ibportstate 3 5 disable", "ok",
            argv=["ibportstate", "3", "5", "disable"], ports=[PortRef(LEAF, 5)], source=("ssh", "mgmt01"),
        )  # fmt: skip
        store.audit("op", "dry-run", "x", "y", "ok")
        store.record_findings("2025-01-02", [(FindingSubject.of_link(LINK), "ber", "warn")])
        typed, plain = store.audit_log()
        (finding,) = store.load_findings_history()
    assert typed.argv == ("ibportstate", "3", "5", "disable") and typed.ports == (PortRef(LEAF, 5),)
    assert (typed.source_kind, typed.source_target) == ("ssh", "mgmt01")
    assert (plain.argv, plain.ports, plain.nodes, plain.hosts, plain.source_kind) == ((), (), (), (), "")
    assert finding.about == FindingSubject.of_link(LINK) and finding.subject == f"{LEAF}/5-{LINK[1][0]}/1"


def test_undo_reads_the_typed_port_and_command_never_the_text(tmp_path: Path) -> None:
    session = Session(Source.local())
    with Store.open(tmp_path / "s.db") as store:
        typed = store.audit(
            "op", "isolate", "whatever people were shown", "not the command", "ok (exit 0)",
            argv=["ibportstate", "-D", "0,1", "5", "disable"], ports=[PortRef(LEAF, 5)],
        )  # fmt: skip
        text_only = store.audit(
            "op", "isolate", f"{LEAF}/6 leaf:6 <-> spine:1", "ibportstate 1 6 disable", "ok"
        )
        plan = plan_undo(store, typed, session.driver)
        assert plan.port == PortRef(LEAF, 5) and plan.argv == ("ibportstate", "-D", "0,1", "5", "enable")
        with pytest.raises(UsageError, match=f"audit entry {text_only} names no port"):
            plan_undo(store, text_only, session.driver)
