"""Every sample file is read by the real code that consumes it."""

from __future__ import annotations

from click.testing import CliRunner

import samples
from fabric.cli.main import main
from fabric.health.thresholds import load_thresholds
from probes.inventory import read_inventory
from probes.plan import plan_sweep
from tests.advise_fabrics import fabric_of


def test_inventory_sample() -> None:
    inv = read_inventory(samples.path("inventory.toml"))
    assert inv.names()[:2] == ["dgx-0001", "dgx-0002"] and "mgmt-01" in inv.names()
    dgx = inv.get("dgx-0008")
    assert (dgx.address, dgx.user) == ("10.1.0.18", "root")
    assert dgx.jump is not None and dgx.jump.name == "mgmt-01" and inv.get("mgmt-01").port == 2222


def test_thresholds_sample() -> None:
    t = load_thresholds(samples.path("health.toml"))
    assert (t.ber_target, t.ber_window_long_s, t.xmit_discards_warn, t.congestion_warn) == (
        1e-14,
        7500.0,
        100,
        0.10,
    )


def test_pair_file_sample_plans_two_rounds() -> None:
    d = fabric_of("rail-small")
    text = samples.path("rail0-pairs.txt").read_text()
    plan = plan_sweep(d.fabric, d.classification, "custom", pairs_text=text, pairs_source="rail0-pairs.txt")
    assert (len(plan.probes), plan.rounds) == (4, 2)


def test_thresholds_sample_through_the_cli() -> None:
    res = CliRunner().invoke(
        main, ["health", "--thresholds", str(samples.path("health.toml")), "--db", "/nonexistent/x.db"]
    )
    # no store there: the thresholds file was read first and accepted, then the store error
    assert res.exit_code == 5 and "ibfab counters collect" in res.stderr
