"""`ibfab topology list`: the stored snapshots with their counts, from a real store."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from fabric.cli.main import main
from tests.conftest import REALDATA

CAPTURE = REALDATA / "ibnetdiscover" / "garyli-ibdiagnet2-ndr-272nodes-label-ports.txt"


def test_list_snapshots(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    runner = CliRunner()
    res = runner.invoke(main, ["topology", "list", "--db", db])
    assert res.exit_code == 5 and "no ibfab store there" in res.stderr
    for args in (
        ["--input", str(CAPTURE), "--label", "before"],
        ["--ibdiagnet", str(REALDATA / "ibdiagnet")],
    ):
        assert runner.invoke(main, ["discover", *args, "--save", "--db", db]).exit_code == 0
    res = runner.invoke(main, ["topology", "list", "--db", db, "--json"])
    rows = json.loads(res.stdout)
    assert [(r["id"], r["label"], r["switches"], r["hcas"], r["links"]) for r in rows] == [
        (1, "before", 9, 263, 271),
        (2, None, 9, 263, 271),
    ]
    assert rows[1]["source"].endswith("ibdiagnet2.db_csv")
    res = runner.invoke(main, ["topology", "list", "--db", db])
    lines = res.stdout.splitlines()
    assert res.exit_code == 0 and len(lines) == 4 and " before " in lines[2] and lines[3].startswith("2 ")
