"""Schedule timing: intervals, the cron subset, next fire times; and `ibfab schedule` on a real store."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from fabric.cli.main import main
from fabric.core.timing import Timing, next_cron_fire, parse_cron, parse_interval
from fabric.core.units import duration_spec
from fabric.store import Store
from topology.errors import UsageError


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("5m", 300), ("1h", 3600), ("1d", 86400), ("90", 90), (" 2H ", 7200)]
)
def test_intervals(text: str, seconds: int) -> None:
    assert parse_interval(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "0s", "-5m", "1.5h", "m"])
def test_bad_intervals_are_one_line_usage_errors(text: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_interval(text)
    assert "--every" in str(err.value) and "\n" not in str(err.value)


def test_format_interval_is_the_shortest_exact_spelling() -> None:
    assert [duration_spec(s) for s in (30, 90, 300, 3600, 86400, 5400)] == [
        "30s",
        "90s",
        "5m",
        "1h",
        "1d",
        "90m",
    ]


def test_cron_fields_expand() -> None:
    spec = parse_cron("*/15 9-17/4 1,15 * 1-5")
    assert spec.minutes == {0, 15, 30, 45}
    assert spec.hours == {9, 13, 17}
    assert spec.days == {1, 15}
    assert spec.months == set(range(1, 13))
    assert spec.weekdays == {1, 2, 3, 4, 5}
    assert parse_cron("0 0 * * 7").weekdays == {0}  # 7 is Sunday too
    assert parse_cron("5/20 * * * *").minutes == {5, 25, 45}


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("60 * * * *", "minute"),
        ("* 24 * * *", "hour"),
        ("* * 0 * *", "day-of-month"),
        ("* * * 13 *", "month"),
        ("* * * * 8", "day-of-week"),
        ("*/0 * * * *", "minute"),
        ("* 5-2 * * *", "hour"),
        ("* * * JAN *", "month"),
        ("* * * * mon", "day-of-week"),
    ],
)
def test_bad_cron_names_the_field(text: str, field: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_cron(text)
    assert f"{field} field" in str(err.value) and "\n" not in str(err.value)


def test_cron_needs_five_fields() -> None:
    with pytest.raises(UsageError, match="needs 5 fields"):
        parse_cron("* * * *")


def test_next_fire_hand_cases() -> None:
    t = datetime(2024, 2, 28, 23, 59, 30)
    assert next_cron_fire(parse_cron("* * * * *"), t) == datetime(2024, 2, 29, 0, 0)
    assert next_cron_fire(parse_cron("0 0 29 2 *"), t) == datetime(2024, 2, 29, 0, 0)
    # Feb 29 from just after it: the next leap year.
    assert next_cron_fire(parse_cron("0 0 29 2 *"), datetime(2024, 2, 29, 0, 0)) == datetime(2028, 2, 29)
    # Strictly after: a fire time itself is not returned again.
    assert next_cron_fire(parse_cron("30 2 * * *"), datetime(2024, 5, 1, 2, 30)) == datetime(
        2024, 5, 2, 2, 30
    )
    # Both day fields restricted: either matches (the 13th, or a Friday).
    spec = parse_cron("0 12 13 * 5")
    assert next_cron_fire(spec, datetime(2024, 9, 1)) == datetime(2024, 9, 6, 12, 0)  # Friday the 6th
    assert next_cron_fire(spec, datetime(2024, 9, 10)) == datetime(2024, 9, 13, 12, 0)  # also Friday
    assert next_cron_fire(spec, datetime(2024, 10, 12)) == datetime(2024, 10, 13, 12, 0)  # a Sunday, the 13th


def test_cron_that_never_fires_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="never fires"):
        next_cron_fire(parse_cron("0 0 31 2 *"), datetime(2024, 1, 1))


def _field_text(values: list[int]) -> str:
    return ",".join(str(v) for v in sorted(set(values)))


_cron_fields = st.tuples(
    st.one_of(st.just("*"), st.lists(st.integers(0, 59), min_size=1, max_size=4).map(_field_text)),
    st.one_of(
        st.just("*"),
        st.integers(1, 12).map(lambda n: f"*/{n}"),
        st.lists(st.integers(0, 23), min_size=1, max_size=3).map(_field_text),
    ),
    st.one_of(st.just("*"), st.lists(st.integers(1, 28), min_size=1, max_size=3).map(_field_text)),
    st.one_of(st.just("*"), st.lists(st.integers(1, 12), min_size=1, max_size=3).map(_field_text)),
    st.one_of(st.just("*"), st.integers(0, 6).flatmap(lambda a: st.integers(a, 6).map(lambda b: f"{a}-{b}"))),
)


def _allowed(field: str, low: int, high: int) -> set[int]:
    """An independent reading of the generated field text."""
    if field == "*":
        return set(range(low, high + 1))
    if field.startswith("*/"):
        return set(range(low, high + 1, int(field[2:])))
    if "-" in field:
        a, b = field.split("-")
        return set(range(int(a), int(b) + 1))
    return {int(v) for v in field.split(",")}


@settings(max_examples=200, deadline=None)
@given(fields=_cron_fields, now=st.datetimes(datetime(2000, 1, 1), datetime(2090, 1, 1)))
def test_next_fire_is_after_now_and_matches_every_field(fields: tuple[str, ...], now: datetime) -> None:
    minute, hour, dom, month, dow = fields
    fire = next_cron_fire(parse_cron(" ".join(fields)), now)
    assert fire > now and fire.second == 0 and fire.microsecond == 0
    assert fire.minute in _allowed(minute, 0, 59)
    assert fire.hour in _allowed(hour, 0, 23)
    assert fire.month in _allowed(month, 1, 12)
    in_dom = fire.day in _allowed(dom, 1, 31)
    in_dow = fire.isoweekday() % 7 in _allowed(dow, 0, 6)
    assert (in_dom or in_dow) if dom != "*" and dow != "*" else (in_dom and in_dow)
    # And it is the first: no earlier minute of the same day fits (checked minute by minute).
    t = max(now.replace(second=0, microsecond=0) + timedelta(minutes=1), fire.replace(hour=0, minute=0))
    spec = parse_cron(" ".join(fields))
    while t < fire:
        assert not spec.matches(t), t
        t += timedelta(minutes=1)


def test_timing_first_and_next_runs() -> None:
    every = Timing.parse("5m", None)
    assert every.first_run(1000.0) == 1000.0
    assert every.after_run(1000.0, 1010.0) == 1300.0
    assert every.after_run(1000.0, 1400.0) == 1400.0  # a run longer than the interval: no backlog
    cron = Timing.parse(None, "0 * * * *")
    start = datetime(2024, 6, 1, 10, 20).timestamp()
    assert cron.first_run(start) == datetime(2024, 6, 1, 11, 0).timestamp()
    with pytest.raises(UsageError, match="exactly one"):
        Timing.parse("5m", "* * * * *")
    with pytest.raises(UsageError, match="exactly one"):
        Timing.parse(None, None)


# -- the CLI on a real store --------------------------------------------------------------------
def test_schedule_add_list_remove(tmp_path: object) -> None:
    run = CliRunner().invoke
    res = run(main, ["schedule", "add", "c5", "--kind", "counters", "--every", "5m", "--lab", "demo"])
    assert res.exit_code == 0, res.output
    assert "schedule c5 (counters, every 5m) added" in res.output
    res = run(
        main,
        [
            "schedule",
            "add",
            "nightly",
            "--kind",
            "sweep",
            "--cron",
            "0 2 * * *",
            "--lab",
            "demo",
            "--",
            "--pattern",
            "pairwise",
            "--no-retest",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(run(main, ["schedule", "list", "--json"]).output)
    by_name = {d["name"]: d for d in doc}
    assert by_name["c5"]["interval_seconds"] == 300 and by_name["c5"]["args"] == {"lab": "demo"}
    assert by_name["nightly"]["cron"] == "0 2 * * *"
    assert by_name["nightly"]["args"] == {"lab": "demo", "pattern": "pairwise", "retest": False}
    nxt = datetime.fromtimestamp(by_name["nightly"]["next_run"])
    assert (nxt.hour, nxt.minute) == (2, 0)
    assert by_name["c5"]["last_result"] is None
    text = run(main, ["schedule", "list"]).output
    assert "every 5m" in text and "cron 0 2 * * *" in text and "lab demo" in text
    assert run(main, ["schedule", "remove", "c5"]).exit_code == 0
    with Store.open() as store:
        assert [s.name for s in store.list_schedules()] == ["nightly"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--kind", "counters", "--every", "5q"], "--every '5q'"),
        (["--kind", "counters", "--cron", "* * 32 * *"], "day-of-month field"),
        (["--kind", "counters", "--every", "5m", "--cron", "* * * * *"], "exactly one"),
        (["--kind", "sweep", "--every", "5m"], "needs --lab NAME or --inventory"),
        (["--kind", "sweep", "--every", "5m", "--lab", "x", "--", "--bogus"], "No such option '--bogus'"),
        (["--kind", "counters", "--every", "5m", "--", "--pattern", "x"], "takes no job arguments"),
    ],
)
def test_bad_schedule_add_is_one_line(argv: list[str], needle: str) -> None:
    res = CliRunner().invoke(main, ["schedule", "add", "x", *argv])
    assert res.exit_code == 2, res.output
    assert needle in res.output and res.output.count("\n") == 1


def test_duplicate_and_unknown_names_are_store_errors() -> None:
    run = CliRunner().invoke
    assert run(main, ["schedule", "add", "a", "--kind", "counters", "--every", "1m"]).exit_code == 0
    res = run(main, ["schedule", "add", "a", "--kind", "counters", "--every", "1m"])
    assert res.exit_code == 5 and "cannot add schedule 'a'" in res.output
    res = run(main, ["schedule", "remove", "nope"])
    assert res.exit_code == 5 and "no schedule 'nope'" in res.output
