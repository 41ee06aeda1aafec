"""The Grafana dashboard: read back through grafana-foundation-sdk's schema models (nothing outside
the schema, every panel and query of a known kind), every query parsed by the real promtool, and
the panels and variables the operators asked for. (Each query also runs against a real Prometheus
scraping a lab in tests/test_alerts_lab.py.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.exports.grafana import dashboard_queries, grafana_dashboard, with_sample_variables


def _board() -> dict[str, Any]:
    return grafana_dashboard()


def test_dashboard_round_trips_through_the_sdk_schema_models() -> None:
    """from_json keeps only what the schema knows: a key outside it would be lost on the way back."""
    from grafana_foundation_sdk.cog import plugins
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.cog.runtime import UnknownDataquery, panelcfg_config
    from grafana_foundation_sdk.models.dashboard import Dashboard, Panel
    from grafana_foundation_sdk.models.prometheus import Dataquery

    plugins.register_default_plugins()
    board = _board()
    model = Dashboard.from_json(board)
    assert json.loads(json.dumps(model, cls=JSONEncoder)) == board
    panels = [p for p in model.panels or [] if isinstance(p, Panel)]
    assert len(panels) == 11
    for panel in panels:
        assert panel.type_val is not None and panelcfg_config(panel.type_val) is not None, panel.type_val
        for target in panel.targets or []:
            assert isinstance(target, Dataquery) and not isinstance(target, UnknownDataquery), panel.title


def test_a_key_outside_the_schema_does_not_survive_the_round_trip() -> None:
    """The round-trip check can fail: a misspelt option is dropped by the models."""
    from grafana_foundation_sdk.cog import plugins
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models.dashboard import Dashboard

    plugins.register_default_plugins()
    board = _board()
    board["panels"][1]["fieldConfg"] = {"defaults": {}}
    assert json.loads(json.dumps(Dashboard.from_json(board), cls=JSONEncoder)) != board


def test_variables_and_panels_operators_asked_for() -> None:
    board = _board()
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource", "fabric", "tier", "switch"]
    titles = [p["title"] for p in board["panels"]]
    for want in (
        "Links by status",
        "Worst links",
        "BER per link (upper bound dashed)",
        "Link-downs and retrains per link",
        "Leaf x spine health (worst link score per pair)",
        "Error counters per switch port, with the saturated flag",
        "Last counter collection",
    ):
        assert want in titles
    exprs = " ".join(dashboard_queries(board))
    assert "infiniband_port_saturated" in exprs and "ibfab_sweep_last_timestamp_seconds" in exprs
    assert "$switch" in exprs and "$tier" in exprs and "$fabric" in exprs


def test_every_query_is_valid_promql_for_promtool(tmp_path: Path) -> None:
    queries = [with_sample_variables(q) for q in dashboard_queries(_board())]
    assert len(queries) == 23
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [{"record": f"ibfab:q{i}", "expr": q} for i, q in enumerate(queries)],
            }
        ]
    }
    path = tmp_path / "queries.yml"
    path.write_text(yaml.safe_dump(rules))
    res = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_cli_prints_the_dashboard_json() -> None:
    res = CliRunner().invoke(main, ["export", "grafana-dashboard"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == _board()
    fixed = CliRunner().invoke(main, ["export", "grafana-dashboard", "--datasource-uid", "prom-1"])
    assert '"uid": "prom-1"' in fixed.output and "${datasource}" not in fixed.output
