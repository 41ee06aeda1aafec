"""What repeats is said once: the NDR SuperPOD's 74 unnamed HCAs are one discovery anomaly per
machine (26, beside its 12 missing uplinks and one miswire), and the nodes an export leaves out of
Selene (170 storage and service hosts, an unnamed HCA) are one stderr line, not one per node."""

from __future__ import annotations

import json
from collections import Counter

from click.testing import CliRunner

from fabric.cli.main import main
from tests.conftest import REALDATA

CAPTURES = REALDATA / "ibnetdiscover"


def test_superpod_unnamed_hcas_are_one_anomaly_per_machine() -> None:
    res = CliRunner().invoke(
        main, ["discover", "--input", str(CAPTURES / "topograph-dgx-ndr-superpod-622nodes.txt"), "--json"]
    )
    assert res.exit_code == 0, res.output
    anomalies = json.loads(res.stdout)["anomalies"]
    assert Counter(a["kind"] for a in anomalies) == {"unnamed_hca": 26, "missing_link": 12, "rail_miswire": 1}
    unnamed = [a for a in anomalies if a["kind"] == "unnamed_hca"]
    assert sum(len(a["nodes"]) for a in unnamed) == 74
    assert len({g for a in unnamed for g in a["nodes"]}) == 74  # no HCA in two machines
    for a in unnamed:  # each names every HCA it holds, with the leaf port it is on
        assert len(a["ports"]) == len(a["nodes"])
        assert all(g in a["message"] for g in a["nodes"])
    text = (
        CliRunner()
        .invoke(main, ["discover", "--input", str(CAPTURES / "topograph-dgx-ndr-superpod-622nodes.txt")])
        .stdout
    )
    assert "4 HCAs of one machine (the machine on port 13 of A09-P1-IBLEAF-01-02, " in text


def test_selene_export_says_what_it_left_out_in_one_line() -> None:
    res = CliRunner().invoke(
        main,
        [
            "export",
            "slurm-topology",
            "--input",
            str(CAPTURES / "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines() == [
        "left out: 170 service hosts (ai400x-001, ai400x-002, ai400x-003, ...), 1 unnamed HCA; "
        "--include-service adds the service hosts"
    ]
