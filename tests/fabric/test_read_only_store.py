"""Commands that only read never create a store: a --db that names nothing stays nothing (an
operator's typo must not leave an empty store behind that later commands read as 'no data')."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from tests.conftest import REALDATA

SUPERPOD = REALDATA / "ibnetdiscover" / "topograph-dgx-ndr-superpod-622nodes.txt"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["recommend", "--input", str(SUPERPOD)], 0),
        (["schedule", "list"], 0),
        (["health"], 5),
        (["topology", "list"], 5),
        (["store", "info"], 5),
        (["place", "--nodes", "2", "--input", str(SUPERPOD)], 0),
        (["export", "slurm-topology", "--input", str(SUPERPOD)], 0),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else str(v),
)
def test_a_read_only_command_creates_no_store(tmp_path: Path, args: list[str], code: int) -> None:
    db = tmp_path / "typo" / "ibfab.db"
    res = CliRunner().invoke(main, [*args, "--db", str(db)])
    assert res.exit_code == code, res.output
    assert not db.parent.exists()
