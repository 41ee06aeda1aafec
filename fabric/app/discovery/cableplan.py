"""``ibfab topology check --plan`` and ``ibfab export plan``: the fabric against its cable plan,
and today's fabric written as tomorrow's plan (UFM NDT's five columns, plus Speed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabric.app.discovery.discover import Discovery
from topology.cableplan import format_cable_plan, merge_plans, read_cable_plan
from topology.errors import UsageError
from topology.nameformats import UnfitName
from topology.plancheck import PlanCheck, check_plan, check_to_dict, checked_plan_rows


def check_against_plans(d: Discovery, plans: Sequence[str]) -> PlanCheck:
    """Every plan file read (one line naming file, line and column when one cannot be), merged,
    and compared with the fabric ``d``."""
    return check_plan(merge_plans(read_cable_plan(p) for p in plans), d.fabric)


def plan_check_to_dict(check: PlanCheck, d: Discovery) -> dict[str, Any]:
    return {**check_to_dict(check, d.fabric), "fabric": d.source}


@dataclass(frozen=True, slots=True)
class WrittenPlan:
    text: str
    cables: int
    unfit: tuple[UnfitName, ...] = ()  # names a plan cell cannot carry (their nodes go by GUID)


def fabric_as_plan(d: Discovery, with_speed: bool = True, output: str | None = None) -> WrittenPlan:
    """The fabric's cables as a plan; written to ``output`` when given."""
    rows, unfit = checked_plan_rows(d.fabric)
    text = format_cable_plan(rows, with_speed=with_speed)
    if output:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{output}: {exc.strerror or exc}") from exc
    return WrittenPlan(text, len(rows), unfit)
