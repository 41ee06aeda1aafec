"""Prometheus alerting and recording rules for what ``ibfab exporter`` serves. Pure: thresholds in, YAML out.

Every number a rule compares against comes from :class:`fabric.health.HealthThresholds`, the object
``ibfab health`` judges links by (give both the same ``--thresholds`` file), so a rule and the
command that confirms it never disagree. Link statuses themselves are computed by the exporter
with those thresholds; the rules only say how long a status must hold before it pages.

>>> rules = alert_rules()
>>> [r.alert for r in rules.alerts][:3]
['IbfabLinkCritical', 'IbfabLinkWarn', 'IbfabLinkBerAboveTarget']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fabric.exports.prometheus import SATURATED_METRIC
from fabric.health.ber import bits_to_certify
from fabric.health.thresholds import HealthThresholds

# A sweep suspect pages only when every pair of the sweep that crossed it was slow or failed
# (probes.localize scores slow / all crossing pairs); since every suspect is such a link (one fast
# pair clears a cable), the bar keeps the rule honest if the scoring ever changes.
SUSPECT_SCORE = 1.0
# Scrapes that must fail in a row before the exporter counts as down (at a 1 min scrape interval).
EXPORTER_DOWN_FOR = "5m"
# Collections that may be missed before the data counts as stale.
STALE_INTERVALS = 3

# What to do, per kind of finding (fabric.app.health.assess.finding_kind of the link's first reason).
ACTIONS: Mapping[str, str] = MappingProxyType(
    {
        "ber": "Clean and reseat both ends; if errors continue, swap the transceivers, then the cable. "
        "`ibfab recommend` says whether isolating the port is safe meanwhile.",
        "flapping": "Check the cable seating and both transceivers (a link that went down and came back); "
        "replace what keeps failing. `ibfab recommend` says whether isolating the port is safe meanwhile.",
        "rcv_errors": "Receive errors at one end: reseat or swap the transceiver on the end that counts them "
        "(`ibfab health --json` shows which), then the cable.",
        "xmit_discards": "Packets dropped on send: look for a stuck or congested port downstream; "
        "`ibfab health --json` shows which end discards.",
        "congestion": "The port waits for credits: a traffic or routing matter, not a cable fault; "
        "see `ibfab recommend` for adaptive routing and NCCL settings.",
        "repeat_offender": "Replace the cable and both transceivers: do not return the link to service on "
        "the same parts.",
        "degraded_link": "The cable trains narrower or slower than its peers: reseat both ends, then swap the "
        "transceivers, then the cable (`ibfab discover` names it too).",
        "unseen": "Neither end answered counter queries: check the collection (`ibfab counters collect`) and "
        "that both nodes are up.",
    }
)
DEFAULT_ACTION = "Read the reasons in `ibfab health`; `ibfab recommend` gives the actions for the link."


@dataclass(frozen=True, slots=True)
class RuleTiming:
    """How long each condition must hold before its alert fires (``for:``).

    Link statuses move only when a counter snapshot lands (every few minutes), so the defaults wait
    for the next snapshot to agree; tests shorten them to seconds.
    """

    critical: str = "5m"
    warn: str = "15m"
    ber: str = "10m"
    flapping: str = "1m"
    repeat_offender: str = "15m"
    uplinks: str = "10m"
    suspect: str = "0s"
    exporter_down: str = EXPORTER_DOWN_FOR
    exporter_error: str = "10m"
    stale: str = "1m"
    run_failed: str = "0s"
    credit_loop: str = "0s"  # stored tables change only when stored again: no flicker to wait out


@dataclass(frozen=True, slots=True)
class Rule:
    """One alerting rule (``alert``) or recording rule (``record``)."""

    expr: str
    alert: str = ""
    record: str = ""
    for_: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"alert": self.alert} if self.alert else {"record": self.record}
        out["expr"] = self.expr
        if self.for_ and self.for_ != "0s":
            out["for"] = self.for_
        if self.labels:
            out["labels"] = dict(self.labels)
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        return out


@dataclass(frozen=True, slots=True)
class RuleSet:
    recording: tuple[Rule, ...]
    alerts: tuple[Rule, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "groups": [
                {"name": "ibfab-recording", "rules": [r.to_dict() for r in self.recording]},
                {"name": "ibfab-alerts", "rules": [r.to_dict() for r in self.alerts]},
            ]
        }

    def to_yaml(self, header: str = "") -> str:
        return _yaml(self.to_dict(), header)


# -- annotation templates (Go text/template, as Prometheus renders them) ---------------------------
_ENDS = "{{ $labels.a_name }}:{{ $labels.a_port }} <-> {{ $labels.b_name }}:{{ $labels.b_port }}"
# printf arguments that select the series of the alert's own link (its exporter, both ends)
_LINK_SELECTOR = "instance=%q,a_guid=%q,a_port=%q,b_guid=%q,b_port=%q"
_LINK_ARGS = "$labels.instance $labels.a_guid $labels.a_port $labels.b_guid $labels.b_port"


def _query_link(metric: str, then: str, condition: str = "") -> str:
    """Template text that runs ``then`` for each series of ``metric`` on the alert's link."""
    return (
        '{{ range printf "'
        + metric
        + "{"
        + _LINK_SELECTOR
        + "}"
        + condition
        + '" '
        + _LINK_ARGS
        + " | query }}"
        + then
        + "{{ end }}"
    )


def _first_reason(then: str) -> str:
    """Template text that runs ``then`` with the link's first reason as dot (its ``.Labels``)."""
    return _query_link("ibfab_link_reason", then, " == 1")


def _action_template() -> str:
    branches = "".join(
        "{{ " + ("if" if i == 0 else "else if") + f' eq .Labels.kind "{kind}" }}}}{text}'
        for i, (kind, text) in enumerate(ACTIONS.items())
    )
    return _first_reason(branches + "{{ else }}" + DEFAULT_ACTION + "{{ end }}")


def _duration(seconds: float) -> str:
    """A window in the words ``--since`` takes: 130m, 2h, 30d."""
    if seconds % 86400 == 0:
        return f"{seconds / 86400:g}d"
    if seconds % 3600 == 0:
        return f"{seconds / 3600:g}h"
    if seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


def alert_rules(
    thresholds: HealthThresholds = HealthThresholds(),  # noqa: B008 (frozen, so sharing is safe)
    *,
    job: str = "ibfab",
    window_s: float = 7800.0,
    timing: RuleTiming = RuleTiming(),
) -> RuleSet:
    """The rules for an exporter scraped as ``job`` that judges health over ``window_s`` seconds.

    ``window_s`` is the exporter's ``--window``: it only goes into the commands that confirm an
    alert (``ibfab health --since``), so that they look at what the exporter looked at.
    """
    t = thresholds
    since = _duration(window_s)
    confirm_link = f"Confirm: `ibfab health --since {since}` lists the link with the same reasons."
    certify_bits = bits_to_certify(0, t.ber_target, t.ber_confidence)
    reason = _first_reason("{{ .Labels.reason }}")
    action = _action_template()

    def link_alert(
        name: str, expr: str, for_: str, severity: str, summary: str, description: str, fix: str = action
    ) -> Rule:
        return Rule(
            expr,
            alert=name,
            for_=for_,
            labels={"severity": severity},
            annotations={
                "summary": summary,
                "ends": _ENDS,
                "reason": reason,
                "action": fix,
                "description": description,
            },
        )

    alerts = (
        link_alert(
            "IbfabLinkCritical",
            'ibfab_link_status{status="critical"} == 1',
            timing.critical,
            "critical",
            f"InfiniBand link {_ENDS} is critical",
            "ibfab scores the link below 40 of 100 over the last "
            f"{since} of counters: a budget-breaking BER, repeated link-downs or a link that is down. "
            + confirm_link,
        ),
        link_alert(
            "IbfabLinkWarn",
            'ibfab_link_status{status="warn"} == 1',
            timing.warn,
            "warning",
            f"InfiniBand link {_ENDS} is degraded (warn)",
            f"ibfab scores the link 40-69 of 100 over the last {since} of counters. " + confirm_link,
        ),
        Rule(
            f"ibfab_link_ber_upper > {t.ber_target!r} and ibfab_link_ber_sample_size >= {certify_bits:.6g}",
            alert="IbfabLinkBerAboveTarget",
            for_=timing.ber,
            labels={"severity": "warning"},
            annotations={
                "summary": f"BER of {_ENDS} cannot be shown to meet {t.ber_target:g}",
                "ends": _ENDS,
                "reason": reason,
                "action": ACTIONS["ber"],
                "description": (
                    f"The {t.ber_confidence:.0%} upper bound of the link's bit error rate is "
                    "{{ $value | humanize }}, above the target "
                    f"{t.ber_target:g}, although the link carried the {certify_bits:.3g} bits at its rate "
                    "that show a clean link meets it: the bound is high because of symbol errors, not "
                    f"for want of data. {confirm_link}"
                ),
            },
        ),
        link_alert(
            "IbfabLinkFlapping",
            f"ibfab_link_downs >= {t.flap_critical} or ibfab_link_recoveries >= {t.recovery_warn}",
            timing.flapping,
            "critical",
            f"InfiniBand link {_ENDS} is flapping",
            f"The link went down {t.flap_critical} or more times (both ends within {t.flap_merge_s:g} s "
            f"counted once), or retrained {t.recovery_warn} or more times, in the last {since}. "
            + confirm_link,
        ),
        link_alert(
            "IbfabLinkRepeatOffender",
            f"ibfab_link_repeat_offences >= {t.repeat_days}",
            timing.repeat_offender,
            "warning",
            f"InfiniBand link {_ENDS} is a repeat offender",
            f"The link had warn or critical findings on {{{{ $value }}}} distinct days in the last "
            f"{t.repeat_lookback_days:g} days (threshold {t.repeat_days}): it keeps failing. "
            f"Confirm: `ibfab health --since {t.repeat_lookback_days:g}d` marks it a repeat offender.",
            ACTIONS["repeat_offender"],
        ),
        Rule(
            "ibfab_switch_uplinks < ibfab_switch_uplinks_usual",
            alert="IbfabSwitchBelowUsualUplinks",
            for_=timing.uplinks,
            labels={"severity": "warning"},
            annotations={
                "summary": "Switch {{ $labels.switch }} has fewer uplinks than the switches of its tier",
                "description": (
                    "{{ $labels.switch }} (tier {{ $labels.tier }}) has {{ $value }} uplinks where most "
                    'switches of its tier have {{ with printf "ibfab_switch_uplinks_usual{instance=%q,'
                    'guid=%q}" $labels.instance $labels.guid | query }}{{ . | first | value }}{{ end }}: '
                    "a cable is missing or down. Confirm: `ibfab discover` lists a missing_link anomaly "
                    "for it, with the uncabled uplink ports."
                ),
                "action": "Check the switch's uplink ports that are dark: replug or replace the cable.",
            },
        ),
        Rule(
            f"ibfab_sweep_suspect_score >= {SUSPECT_SCORE:g}",
            alert="IbfabSweepSuspectCable",
            for_=timing.suspect,
            labels={"severity": "warning"},
            annotations={
                "summary": f"Probe sweep suspects the cable {_ENDS}",
                "ends": _ENDS,
                "description": (
                    'Every pair of sweep {{ with printf "ibfab_sweep_last_id{instance=%q}" $labels.instance '
                    "| query }}{{ . | first | value }}{{ end }} that crossed the link was slow or failed "
                    "("
                    + _query_link("ibfab_sweep_suspect_slow_pairs", "{{ .Value }}")
                    + " pairs). Confirm: `ibfab sweep show` ranks it at the top."
                ),
                "action": "Re-test the link alone (`ibfab sweep run` re-tests slow pairs at lower "
                "concurrency), then reseat or swap its transceivers and cable.",
            },
        ),
        Rule(
            f'up{{job="{job}"}} == 0',
            alert="IbfabExporterDown",
            for_=timing.exporter_down,
            labels={"severity": "warning"},
            annotations={
                "summary": "ibfab exporter {{ $labels.instance }} does not answer",
                "description": (
                    "Prometheus cannot scrape the ibfab exporter: no link health reaches the alerts. "
                    "Confirm: `curl http://{{ $labels.instance }}/metrics`; start it with `ibfab exporter`."
                ),
            },
        ),
        Rule(
            "ibfab_exporter_up == 0",
            alert="IbfabExporterError",
            for_=timing.exporter_error,
            labels={"severity": "warning"},
            annotations={
                "summary": "ibfab exporter {{ $labels.instance }} cannot serve everything from its store",
                "description": (
                    'Problems: {{ range printf "ibfab_exporter_error{instance=%q} == 1" $labels.instance '
                    "| query }}{{ .Labels.reason }} {{ end }}(the exporter's log says why). Confirm: "
                    "`ibfab health` on the same store shows the same problem."
                ),
            },
        ),
        Rule(
            # inline, not the recording rule: one rule group must not wait on another's output
            "time() - ibfab_exporter_last_snapshot_timestamp_seconds > "
            f"{STALE_INTERVALS} * ibfab_counters_interval_seconds",
            alert="IbfabCountersStale",
            for_=timing.stale,
            labels={"severity": "warning"},
            annotations={
                "summary": "No counter collection on {{ $labels.instance }} for "
                f"{STALE_INTERVALS} collection intervals",
                "description": (
                    "The newest counter snapshot is {{ $value | humanizeDuration }} old, more than "
                    f"{STALE_INTERVALS} times the usual interval between collections: link health is "
                    "frozen at that snapshot. Confirm: `ibfab schedule list` (last run and result of "
                    "the counters schedule) and `ibfab counters collect` by hand."
                ),
            },
        ),
        Rule(
            "ibfab_route_credit_loop_channels > 0",
            alert="IbfabCreditLoop",
            for_=timing.credit_loop,
            labels={"severity": "critical"},
            annotations={
                "summary": "Credit loop in the forwarding tables stored for {{ $labels.instance }}",
                "description": (
                    "{{ $value }} channels of the hosts' routes wait on each other in cycles: a full "
                    "set of buffers on one deadlocks the links on it. Confirm: `ibfab routes check "
                    "--snapshot latest` shows the loop link by link; fix the routing engine (an "
                    "up/down engine, or dfsssp with enough VLs) and store the new tables."
                ),
            },
        ),
        Rule(
            "ibfab_schedule_last_run_success == 0",
            alert="IbfabScheduleRunFailed",
            for_=timing.run_failed,
            labels={"severity": "warning"},
            annotations={
                "summary": "ibfab daemon: the last {{ $labels.kind }} run of {{ $labels.schedule }} failed",
                "description": (
                    'Error: {{ range printf "ibfab_schedule_last_run_error{instance=%q,schedule=%q}" '
                    "$labels.instance $labels.schedule | query }}{{ .Labels.error }}{{ end }}. Confirm: "
                    "`ibfab schedule list` shows the failed run; run it by hand to see the whole error."
                ),
            },
        ),
    )
    recording = (
        Rule("time() - ibfab_exporter_last_snapshot_timestamp_seconds", record="ibfab:counters_age_seconds"),
        Rule("sum by (job, instance, status) (ibfab_link_status)", record="ibfab:links:count_by_status"),
        Rule(
            f"count by (job, instance, counter) ({SATURATED_METRIC} == 1)",
            record="ibfab:ports_saturated:count_by_counter",
        ),
    )
    return RuleSet(recording, alerts)


def rules_header(thresholds_source: str | None, job: str, window_s: float) -> str:
    return (
        "# Prometheus rules for `ibfab exporter`, made by `ibfab export prometheus-rules`"
        f" (thresholds: {thresholds_source or 'defaults'}; job {job!r}; health window {_duration(window_s)}).\n"
        "# Load with rule_files: in prometheus.yml; check with `promtool check rules FILE`.\n"
    )


def _yaml(data: Any, header: str) -> str:
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def _str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
        # long annotations read better folded over lines than as one escaped line
        style = ">" if len(text) > 100 and "\n" not in text else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)

    _Dumper.add_representer(str, _str)
    return header + yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)
