"""`ibfab discover` and `ibfab topology diff` from the command line: output forms and every
bad-input case (one line naming what and where, a non-zero exit, nothing half-written)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from tests.conftest import REALDATA

SUPERPOD = REALDATA / "ibnetdiscover" / "topograph-dgx-ndr-superpod-622nodes.txt"
SMALL = REALDATA / "ibnetdiscover" / "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt"


def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args), input=stdin, env=env)
    return res.exit_code, res.stdout, res.stderr


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ibfab: error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_text_summary_names_the_miswire() -> None:
    code, out, _ = run("discover", "--input", str(SUPERPOD))
    assert code == 0
    assert "40 switches (31 leaf, 9 spine), 582 HCAs on 120 hosts, 1114 cables" in out
    assert "rail-optimized: 4 rails (HCA indexes 0, 1, 4, 5), 8 scalable units" in out
    assert "b08-p1-dgx-08-c01: HCA-5 (rail 2) is cabled to B09-P1-IBLEAF-04-08 port 1" in out


def test_stdin_and_file_give_the_same_json() -> None:
    _, from_file, _ = run("discover", "--input", str(SMALL), "--json")
    _, from_stdin, _ = run("discover", "--input", "-", "--json", stdin=SMALL.read_text())
    a, b = json.loads(from_file), json.loads(from_stdin)
    assert a["nodes"] == b["nodes"] and a["links"] == b["links"] and a["anomalies"] == b["anomalies"]
    assert b["summary"]["source"] == "<stdin>"


def test_terminal_log_reads_as_the_capture_with_one_note(tmp_path: Path) -> None:
    """A `script` log (banner, prompts, CR CR LF line ends) given as a file and on stdin."""
    body = SMALL.read_text().replace("\n", "\r\r\n")
    log = (
        "Script started on 2024-03-05 10:11:12+00:00\r\n[root@ufm ~]# ibnetdiscover\r\n"
        + body
        + "[root@ufm ~]# "
    )
    path = tmp_path / "session.log"
    path.write_bytes(log.encode())
    _, clean, _ = run("discover", "--input", str(SMALL), "--json")
    for args, stdin in ((("--input", str(path)), None), (("--input", "-"), log)):
        code, out, _ = run("discover", *args, "--json", stdin=stdin)
        assert code == 0
        a, b = json.loads(clean), json.loads(out)
        assert a["nodes"] == b["nodes"] and a["links"] == b["links"] and a["anomalies"] == b["anomalies"]
    code, out, _ = run("discover", "--input", str(path))
    n = len(log.split("\n"))
    assert "  note: skipped 3 lines that are not ibnetdiscover output" in out
    assert f"lines 1, 2, {n}" in out


def test_json_schema_keys() -> None:
    _, out, _ = run("discover", "--input", str(SUPERPOD), "--json")
    d = json.loads(out)
    assert set(d) == {"nodes", "links", "hosts", "anomalies", "chassis", "pods", "summary"}
    assert {"guid", "kind", "name", "tier", "host", "rail", "group", "pod", "chassis", "board"} <= set(
        d["nodes"][0]
    )
    assert {"a", "b", "width", "speed", "gbps"} <= set(d["links"][0])
    assert {"kind", "severity", "nodes", "ports", "message"} <= set(d["anomalies"][0])
    assert {"switches", "hcas", "hosts", "links", "rails", "groups"} <= set(d["summary"])
    tiers = {n["tier"] for n in d["nodes"] if n["kind"] == "switch"}
    assert tiers == {1, 2} and {n["tier"] for n in d["nodes"] if n["kind"] == "hca"} == {0}


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("", r"bad\.topo: ibnetdiscover output: no Switch or Ca records"),
        ("this is not ibnetdiscover output\n", r"bad\.topo:1: ibnetdiscover output: no Switch or Ca records"),
        (SUPERPOD.read_text()[:150_000], r"bad\.topo:1885: ibnetdiscover output: unrecognised line"),
        (SUPERPOD.read_text()[:150_000].rsplit("\n", 1)[0], r"bad\.topo:\d+: .*truncated or inconsistent"),
        (SUPERPOD.read_text().replace('"S-2c5eab0300b87b40"', '"S-2c5eab03zzb87b40"', 1), r"bad\.topo:10: "),
    ],
    ids=["empty", "not-ibnetdiscover", "cut-mid-line", "cut-in-a-record", "garbled"],
)
def test_bad_input_is_one_line_and_stores_nothing(tmp_path: Path, content: str, where: str) -> None:
    bad = tmp_path / "bad.topo"
    bad.write_text(content)
    db = tmp_path / "s.db"
    code, out, err = run("discover", "--input", str(bad), "--save", "--db", str(db))
    assert code == 3 and out == ""
    line = one_line_error(err)
    assert re.search(where, line), line
    if db.exists():
        with sqlite3.connect(db) as con:
            assert con.execute("select count(*) from topology_snapshots").fetchone() == (0,)


def test_missing_file(tmp_path: Path) -> None:
    code, _, err = run("discover", "--input", str(tmp_path / "nope.topo"))
    assert code == 3 and "nope.topo" in one_line_error(err) and "No such file" in err


def test_local_ibnetdiscover_without_an_hca_reports_its_stderr() -> None:
    """This machine has no HCA: the real ibnetdiscover fails and its own message comes back."""
    code, _, err = run("discover")
    line = one_line_error(err)
    assert code == 4 and "ibnetdiscover on local failed (exit 255)" in line and "MAD port" in line


def test_missing_ibnetdiscover_binary(tmp_path: Path) -> None:
    code, _, err = run("discover", env={"PATH": str(tmp_path)})
    assert code == 4 and "ibnetdiscover: command not found" in one_line_error(err)


def test_choose_one_source() -> None:
    code, _, err = run("discover", "--input", str(SMALL), "--lab", "x")
    assert code == 2 and "choose one of" in one_line_error(err)


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.topo"
    bad.write_text("garbage\n")
    res = CliRunner().invoke(main, ["--debug", "discover", "--input", str(bad)])
    assert res.exit_code != 0 and res.exception is not None


def test_saved_snapshots_diff_by_label(tmp_path: Path) -> None:
    db = str(tmp_path / "d.db")
    text = SMALL.read_text()
    assert run("discover", "--input", str(SMALL), "--save", "--label", "a", "--db", db)[0] == 0
    # the same fabric with one cable gone: drop both listings of switch port 19's cable
    lines = text.splitlines()
    gone = [ln for ln in lines if ln.startswith("[19]") and "r-dcs96 HCA-3" in ln]
    assert len(gone) == 1
    ca_line = next(i for i, ln in enumerate(lines) if '"r-dcs96 HCA-3"' in ln and ln.startswith("Ca"))
    cut = [ln for i, ln in enumerate(lines) if ln not in gone and i != ca_line + 1]
    edited = tmp_path / "b.topo"
    edited.write_text("\n".join(cut) + "\n")
    assert run("discover", "--input", str(edited), "--save", "--label", "b", "--db", db)[0] == 0
    code, out, err = run("topology", "diff", "a", "b", "--db", db, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert not d["links_added"] and not d["links_changed"] and not d["nodes_removed"]
    (gone_link,) = d["links_removed"]
    assert {gone_link["a"]["name"], gone_link["b"]["name"]} == {"r-ufm-sw226", "r-dcs96 HCA-3"}
    code, out, _ = run("topology", "diff", "a", "a", "--db", db)
    assert code == 0 and "no changes" in out
    code, _, err = run("topology", "diff", "a", "nosuchlabel", "--db", db)
    assert code == 5 and "nosuchlabel" in one_line_error(err)


def test_diff_of_two_files(tmp_path: Path) -> None:
    code, out, _ = run("topology", "diff", str(SMALL), str(SMALL))
    assert code == 0 and "no changes" in out
    assert os.path.exists(SMALL)
