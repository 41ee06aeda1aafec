"""``ibfab tui --thresholds FILE``: the TUI judges links by the site's thresholds, as ``ibfab
health --thresholds`` and ``ibfab recommend --thresholds`` do (the UI once used the defaults
whatever the site had set), in its own process and in the child that computes health for the UI."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from fabric.app.readmodel.service import FabricService
from fabric.app.session import open_session
from tests.tui_data import build_store
from tui.program import main


def _statuses(svc: FabricService, keys: list[object]) -> list[str]:
    health = svc.health()
    assert health is not None
    return [health.by_key[k].status.value for k in keys]  # type: ignore[index]


def test_the_sites_thresholds_decide_the_tuis_statuses_and_advice(tmp_path: Path) -> None:
    db, _, ber_bad, flappy = build_store(tmp_path / "tui.db")
    lenient = tmp_path / "site.toml"
    lenient.write_text("[health]\nflap_warn = 100\nflap_critical = 200\n")
    keys: list[object] = [ber_bad.key, flappy.key]

    default = FabricService(open_session(db=db))
    assert _statuses(default, keys) == ["critical", "critical"]
    site = FabricService(open_session(db=db, thresholds_file=lenient))
    assert _statuses(site, keys) == ["critical", "ok"]  # 15 link-downs are under the site's 100
    job = site.start_health()  # the UI's way: the same thresholds in the child process
    child = job.result()
    assert child is not None and child.by_key[flappy.key].status.value == "ok"

    def advised(svc: FabricService) -> set[str]:
        view = svc.load_view()
        assert view is not None
        recs = svc.recommendations(view, svc.health())
        assert isinstance(recs, list)
        return {f"{a.kind} {a.target}" for a in recs}

    flappy_cable = "leaf-su01-r1:6 <-> spine-02:2"  # tests.tui_data's sixth uplink
    assert {f"isolate_port {flappy_cable}", f"replace_cable {flappy_cable}"} <= advised(default)
    assert not any(flappy_cable in a for a in advised(site))  # not flapping by the site's rules
    assert "isolate_port leaf-su01-r0:5 <-> spine-01:1" in advised(site)  # the BER cable still is

    # the CLI: the report follows the file; a bad file is one line, exit 2, before anything runs
    runner = CliRunner()
    plain = runner.invoke(main, ["tui", "--db", str(db), "--report"])
    judged = runner.invoke(main, ["tui", "--db", str(db), "--report", "--thresholds", str(lenient)])
    assert plain.exit_code == 0 and judged.exit_code == 0, (plain.output, judged.output)
    assert "critical: 2" in plain.output and "critical: 1" in judged.output
    bad = tmp_path / "bad.toml"
    bad.write_text("[health]\nflap_warn = 5\nflap_critical = 2\n")
    refused = runner.invoke(main, ["tui", "--db", str(db), "--report", "--thresholds", str(bad)])
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (
        f"ibfab: error: {bad}: health threshold flap_warn (5) must be below flap_critical (2)"
    )
