"""The generated Prometheus rules, checked and unit-tested by the real promtool.

For every alert: it stays silent until its ``for:`` has passed on a series that should fire it,
then fires with the expected labels; on a clean series (a healthy fabric as the exporter serves
it) it never fires. Thresholds come from HealthThresholds, so a changed threshold moves the rule.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.exports.alert_rules import ACTIONS, RuleTiming, alert_rules
from fabric.health import HealthThresholds
from fabric.health.ber import bits_to_certify

INSTANCE = {"job": "ibfab", "instance": "fabric-a:9315"}
LINK = {
    "a_guid": "0x0c42a10300a00001",
    "a_port": "1",
    "a_name": "leaf-01",
    "b_guid": "0x1070fd0300000001",
    "b_port": "1",
    "b_name": "cn0001 mlx5_0",
}
OTHER = {**LINK, "a_port": "2", "b_guid": "0x1070fd0300000002", "b_name": "cn0002 mlx5_0"}
ENDS = "leaf-01:1 <-> cn0001 mlx5_0:1"
STEP = 60  # seconds between samples in the unit tests


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    body = ",".join(f'{k}="{v}"' for k, v in {**INSTANCE, **labels}.items())
    return {"series": f"{name}{{{body}}}", "values": values}


def _minutes(duration: str) -> int:
    unit = {"s": 1 / 60, "m": 1, "h": 60}[duration[-1]]
    return round(float(duration[:-1]) * unit)


@dataclass
class Case:
    """An alert, the series that should fire it (true from ``start`` minutes on) and a clean set."""

    alert: str
    firing: list[dict[str, str]]
    clean: list[dict[str, str]]
    labels: dict[str, str]  # the fired alert's labels, besides alertname and severity
    severity: str = "warning"
    start: int = 2
    annotations: dict[str, str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _status(labels: dict[str, str], status: str, start: int, length: int = 40) -> list[dict[str, str]]:
    """ibfab_link_status series of one link: ok until ``start``, then ``status``."""
    out = []
    for s in ("ok", "watch", "warn", "critical"):
        before = "1" if s == "ok" else "0"
        after = "1" if s == status else "0"
        out.append(
            _series("ibfab_link_status", {**labels, "status": s}, f"{before}x{start - 1} {after}x{length}")
        )
    return out


def _cases(t: HealthThresholds) -> list[Case]:
    certify = bits_to_certify(0, t.ber_target, t.ber_confidence)
    reason = "symbol errors: 120 in the last 12 min, over the 12 min budget of 1.44 at 4xHDR (BER 1e-14)"
    link_out = {**INSTANCE, **LINK}
    return [
        Case(
            "IbfabLinkCritical",
            [
                *_status(LINK, "critical", 2),
                _series("ibfab_link_reason", {**LINK, "kind": "ber", "reason": reason}, "_x2 1x40"),
            ],
            _status(LINK, "ok", 2) + _status(OTHER, "watch", 2),
            {**link_out, "status": "critical"},
            severity="critical",
            annotations={
                "summary": f"InfiniBand link {ENDS} is critical",
                "ends": ENDS,
                "reason": reason,
                "action": ACTIONS["ber"],
                "description": "ibfab scores the link below 40 of 100 over the last 130m of counters: a "
                "budget-breaking BER, repeated link-downs or a link that is down. Confirm: "
                "`ibfab health --since 130m` lists the link with the same reasons.",
            },
        ),
        Case(
            "IbfabLinkWarn",
            _status(LINK, "warn", 2),
            _status(LINK, "watch", 2) + _status(OTHER, "critical", 2),  # critical is the other alert
            {**link_out, "status": "warn"},
        ),
        Case(
            "IbfabLinkBerAboveTarget",
            [
                _series("ibfab_link_ber_upper", LINK, f"{t.ber_target / 10}x1 {t.ber_target * 3}x40"),
                _series("ibfab_link_ber_sample_size", LINK, f"{certify * 2}x42"),
            ],
            [
                # above target only for want of bits (a fresh or slow link): not an alarm
                _series("ibfab_link_ber_upper", LINK, f"{t.ber_target * 3}x42"),
                _series("ibfab_link_ber_sample_size", LINK, f"{certify / 2}x42"),
                # enough bits and a bound under the target: certified
                _series("ibfab_link_ber_upper", OTHER, f"{t.ber_target / 2}x42"),
                _series("ibfab_link_ber_sample_size", OTHER, f"{certify * 10}x42"),
            ],
            link_out,
        ),
        Case(
            "IbfabLinkFlapping",
            [_series("ibfab_link_downs", LINK, f"0 {t.flap_critical - 1} {t.flap_critical}x40")],
            [
                _series(
                    "ibfab_link_downs", LINK, f"0 {t.flap_critical - 1}x41"
                ),  # one down: warn, not a flap
                _series("ibfab_link_recoveries", OTHER, f"{t.recovery_warn - 1}x42"),
            ],
            link_out,
            severity="critical",
        ),
        Case(
            "IbfabLinkRepeatOffender",
            [_series("ibfab_link_repeat_offences", LINK, f"{t.repeat_days - 1}x1 {t.repeat_days}x40")],
            [_series("ibfab_link_repeat_offences", LINK, f"{t.repeat_days - 1}x42")],
            link_out,
            annotations={
                "summary": f"InfiniBand link {ENDS} is a repeat offender",
                "ends": ENDS,
                "reason": "",  # no ibfab_link_reason series in this test
                "action": ACTIONS["repeat_offender"],
                "description": f"The link had warn or critical findings on {t.repeat_days} distinct days in "
                f"the last {t.repeat_lookback_days:g} days (threshold {t.repeat_days}): it keeps failing. "
                f"Confirm: `ibfab health --since {t.repeat_lookback_days:g}d` marks it a repeat offender.",
            },
        ),
        Case(
            "IbfabSwitchBelowUsualUplinks",
            [
                _series(
                    "ibfab_switch_uplinks", {"guid": "0x01", "switch": "leaf-03", "tier": "1"}, "4x1 3x40"
                ),
                _series(
                    "ibfab_switch_uplinks_usual", {"guid": "0x01", "switch": "leaf-03", "tier": "1"}, "4x42"
                ),
            ],
            [
                _series("ibfab_switch_uplinks", {"guid": "0x01", "switch": "leaf-03", "tier": "1"}, "4x42"),
                _series(
                    "ibfab_switch_uplinks_usual", {"guid": "0x01", "switch": "leaf-03", "tier": "1"}, "4x42"
                ),
                # a spine tier has no usual count: its own number never alerts
                _series("ibfab_switch_uplinks", {"guid": "0x02", "switch": "spine-01", "tier": "2"}, "0x42"),
            ],
            {**INSTANCE, "guid": "0x01", "switch": "leaf-03", "tier": "1"},
            annotations={
                "summary": "Switch leaf-03 has fewer uplinks than the switches of its tier",
                "description": "leaf-03 (tier 1) has 3 uplinks where most switches of its tier have 4: a "
                "cable is missing or down. Confirm: `ibfab discover` lists a missing_link anomaly for it, "
                "with the uncabled uplink ports.",
                "action": "Check the switch's uplink ports that are dark: replug or replace the cable.",
            },
        ),
        Case(
            "IbfabSweepSuspectCable",
            [
                _series("ibfab_sweep_suspect_score", LINK, "_x2 1x40"),
                _series("ibfab_sweep_suspect_slow_pairs", LINK, "_x2 3x40"),
                _series("ibfab_sweep_last_id", {}, "_x2 7x40"),
            ],
            [_series("ibfab_sweep_suspect_score", LINK, "0.5x42")],  # fast pairs crossed it too
            link_out,
            annotations={
                "summary": f"Probe sweep suspects the cable {ENDS}",
                "ends": ENDS,
                "description": "Every pair of sweep 7 that crossed the link was slow or failed (3 pairs). "
                "Confirm: `ibfab sweep show` ranks it at the top.",
                "action": "Re-test the link alone (`ibfab sweep run` re-tests slow pairs at lower "
                "concurrency), then reseat or swap its transceivers and cable.",
            },
        ),
        Case(
            "IbfabExporterDown",
            [_series("up", {}, "1x1 0x40")],
            [
                _series("up", {}, "1x42"),
                {**_series("up", {}, "0x42"), "series": 'up{job="other",instance="x"}'},
            ],
            dict(INSTANCE),
        ),
        Case(
            "IbfabExporterError",
            [
                _series("ibfab_exporter_up", {}, "1x1 0x40"),
                _series("ibfab_exporter_error", {"reason": "store_error"}, "0x1 1x40"),
            ],
            [_series("ibfab_exporter_up", {}, "1x42")],
            dict(INSTANCE),
            annotations={
                "summary": "ibfab exporter fabric-a:9315 cannot serve everything from its store",
                "description": "Problems: store_error (the exporter's log says why). Confirm: `ibfab health` "
                "on the same store shows the same problem.",
            },
        ),
        Case(
            "IbfabCountersStale",
            # snapshots every 5 min until minute 10, then none: stale once 15 min old
            [
                _series("ibfab_exporter_last_snapshot_timestamp_seconds", {}, "0x4 300x5 600x40"),
                _series("ibfab_counters_interval_seconds", {}, "300x50"),
            ],
            [
                _series(
                    "ibfab_exporter_last_snapshot_timestamp_seconds",
                    {},
                    " ".join(str(300 * (m // 5)) for m in range(43)),
                ),
                _series("ibfab_counters_interval_seconds", {}, "300x42"),
            ],
            dict(INSTANCE),
            start=10 + 3 * 5 + 1,  # true once the 600 s snapshot is more than 3 x 300 s old
            annotations={
                "summary": "No counter collection on fabric-a:9315 for 3 collection intervals",
                "description": "The newest counter snapshot is 18m 0s old, more than 3 times the usual "
                "interval between collections: link health is frozen at that snapshot. Confirm: "
                "`ibfab schedule list` (last run and result of the counters schedule) and "
                "`ibfab counters collect` by hand.",
            },
        ),
        Case(
            "IbfabCreditLoop",
            [_series("ibfab_route_credit_loop_channels", {}, "0x1 4x40")],
            [_series("ibfab_route_credit_loop_channels", {}, "0x42")],
            dict(INSTANCE),
            severity="critical",
            annotations={
                "summary": "Credit loop in the forwarding tables stored for fabric-a:9315",
                "description": "4 channels of the hosts' routes wait on each other in cycles: a full set "
                "of buffers on one deadlocks the links on it. Confirm: `ibfab routes check --snapshot "
                "latest` shows the loop link by link; fix the routing engine (an up/down engine, or "
                "dfsssp with enough VLs) and store the new tables.",
            },
        ),
        Case(
            "IbfabScheduleRunFailed",
            [
                _series(
                    "ibfab_schedule_last_run_success",
                    {"schedule": "counters-5m", "kind": "counters"},
                    "1x1 0x40",
                ),
                _series(
                    "ibfab_schedule_last_run_error",
                    {"schedule": "counters-5m", "kind": "counters", "error": "ibqueryerrors: timed out"},
                    "_x2 1x40",
                ),
            ],
            [
                _series(
                    "ibfab_schedule_last_run_success", {"schedule": "counters-5m", "kind": "counters"}, "1x42"
                )
            ],
            {**INSTANCE, "schedule": "counters-5m", "kind": "counters"},
            annotations={
                "summary": "ibfab daemon: the last counters run of counters-5m failed",
                "description": "Error: ibqueryerrors: timed out. Confirm: `ibfab schedule list` shows the "
                "failed run; run it by hand to see the whole error.",
            },
        ),
    ]


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def rules_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rules") / "ibfab-rules.yml"
    path.write_text(alert_rules().to_yaml())
    return path


@pytest.fixture(scope="module")
def bare_rules_file(rules_file: Path) -> Path:
    """The same rules without annotations (promtool compares every annotation of a fired alert;
    the timing tests leave them to the annotation tests)."""
    doc = yaml.safe_load(rules_file.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    path = rules_file.parent / "ibfab-rules-bare.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_promtool_check_rules(rules_file: Path) -> None:
    res = _promtool("check", "rules", rules_file.name, cwd=rules_file.parent)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS: 15 rules found" in res.stdout


def test_every_alert_has_a_unit_test() -> None:
    assert sorted(c.alert for c in _cases(HealthThresholds())) == sorted(
        r.alert for r in alert_rules().alerts
    )


def test_every_alert_says_how_to_confirm_it_with_ibfab() -> None:
    for rule in alert_rules().alerts:
        assert "Confirm: " in rule.annotations["description"] and "`ibfab " in rule.annotations["description"]


def _unit_test(case: Case, for_: str, rules_name: str) -> list[dict[str, Any]]:
    """One promtool test group with the firing series and one with the clean series."""
    wait = _minutes(for_)
    fired = {"exp_labels": {"alertname": case.alert, "severity": case.severity, **case.labels}}
    firing: dict[str, Any] = {
        "interval": f"{STEP}s",
        "input_series": case.firing,
        "alert_rule_test": [
            {"eval_time": f"{case.start + wait - 1}m", "alertname": case.alert, "exp_alerts": []},
            {"eval_time": f"{case.start + wait + 1}m", "alertname": case.alert, "exp_alerts": [fired]},
        ],
    }
    if wait == 0:  # nothing to wait for: silent just before the series turns bad
        firing["alert_rule_test"][0]["eval_time"] = f"{case.start - 1}m"
    clean = {
        "interval": f"{STEP}s",
        "input_series": case.clean,
        "alert_rule_test": [
            {"eval_time": f"{m}m", "alertname": case.alert, "exp_alerts": []} for m in (1, 20, 40)
        ],
    }
    return [firing, clean]


def test_promtool_unit_tests_fire_after_for_and_stay_silent_on_clean_series(bare_rules_file: Path) -> None:
    timing = RuleTiming()
    rules = {r.alert: r for r in alert_rules().alerts}
    tests = []
    for case in _cases(HealthThresholds()):
        tests += _unit_test(case, rules[case.alert].for_ or "0s", bare_rules_file.name)
    spec = {"rule_files": [bare_rules_file.name], "evaluation_interval": "1m", "tests": tests}
    test_file = bare_rules_file.parent / "ibfab-rules.test.yml"
    test_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    res = _promtool("test", "rules", test_file.name, cwd=bare_rules_file.parent)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout
    assert timing.critical == rules["IbfabLinkCritical"].for_


def test_a_broken_rule_fails_promtool(rules_file: Path) -> None:
    """The unit tests can fail: the same tests against a rule that never fires do."""
    broken = rules_file.parent / "broken.yml"
    broken.write_text(
        rules_file.read_text().replace('ibfab_link_status{status="critical"} == 1', "vector(0) > 1")
    )
    tests = _unit_test(_cases(HealthThresholds())[0], "5m", broken.name)
    for group in tests:  # only the timing matters here
        for check in group["alert_rule_test"]:
            for alert in check["exp_alerts"]:
                alert["exp_annotations"] = {}
    test_file = rules_file.parent / "broken.test.yml"
    test_file.write_text(
        yaml.safe_dump({"rule_files": [broken.name], "evaluation_interval": "1m", "tests": tests})
    )
    res = _promtool("test", "rules", test_file.name, cwd=rules_file.parent)
    assert res.returncode != 0 and "IbfabLinkCritical" in res.stdout + res.stderr


def test_thresholds_file_moves_the_rules(tmp_path: Path) -> None:
    toml = tmp_path / "thresholds.toml"
    toml.write_text("[health]\nber_target = 1e-13\nflap_critical = 3\nrepeat_days = 5\n")
    res = CliRunner().invoke(main, ["export", "prometheus-rules", "--thresholds", str(toml)])
    assert res.exit_code == 0, res.output
    doc = yaml.safe_load(res.output)
    exprs = {r["alert"]: r["expr"] for g in doc["groups"] for r in g["rules"] if "alert" in r}
    assert exprs["IbfabLinkBerAboveTarget"].startswith("ibfab_link_ber_upper > 1e-13 and")
    assert exprs["IbfabLinkFlapping"].startswith("ibfab_link_downs >= 3 or")
    assert exprs["IbfabLinkRepeatOffender"] == "ibfab_link_repeat_offences >= 5"
    assert res.output.startswith("# Prometheus rules for `ibfab exporter`")
    default = CliRunner().invoke(main, ["export", "prometheus-rules"])
    assert default.exit_code == 0 and default.output == alert_rules().to_yaml(
        default.output.split("groups:")[0]
    )


def test_bad_thresholds_file_is_a_one_line_error(tmp_path: Path) -> None:
    toml = tmp_path / "thresholds.toml"
    toml.write_text("[health]\nber_target = -1\n")
    res = CliRunner().invoke(main, ["export", "prometheus-rules", "--thresholds", str(toml)])
    assert res.exit_code == 2
    assert res.output == f"ibfab: error: {toml}: health threshold 'ber_target' must be positive, not -1\n"


def test_annotations_name_both_ends_the_reason_the_action_and_how_to_confirm(rules_file: Path) -> None:
    """The templates render against the other series the exporter serves (reasons, sweep, errors)."""
    rules = {r.alert: r for r in alert_rules().alerts}
    tests = []
    for case in _cases(HealthThresholds()):
        if case.annotations is None:
            continue
        [firing, _] = _unit_test(case, rules[case.alert].for_ or "0s", rules_file.name)
        firing["alert_rule_test"][1]["exp_alerts"][0]["exp_annotations"] = case.annotations
        tests.append(firing)
    assert len(tests) == 8
    spec = {"rule_files": [rules_file.name], "evaluation_interval": "1m", "tests": tests}
    test_file = rules_file.parent / "annotations.test.yml"
    test_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    res = _promtool("test", "rules", test_file.name, cwd=rules_file.parent)
    assert res.returncode == 0, res.stdout + res.stderr
