"""``ibfab topology check --plan`` and ``ibfab export plan``: the fabric against its cable plan,
and today's fabric written as tomorrow's plan (UFM NDT's five columns, plus Speed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabric.app.discovery.discover import Discovery
from topology.cableplan import (
    CablePlan,
    format_cable_plan,
    merge_plans,
    parse_cable_plan,
    read_cable_plan,
    read_plan_text,
)
from topology.errors import UsageError
from topology.nameformats import UnfitName
from topology.plancheck import PlanCheck, check_plan, check_to_dict, checked_plan_rows

if TYPE_CHECKING:
    from fabric.app.session import StoreAccess


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


# A site's plan, stored so that ``ibfab status`` checks the fabric against it without --plan.
PLAN_KIND = "cableplan"
PLAN_TOOL = "ufm-ndt"


def save_plans(plans: Sequence[str], stored: StoreAccess) -> int:
    """Store the plan files (read and parsed first: an unreadable one stores nothing) as one set,
    the newest for ``ibfab status``; returns how many files."""
    import time

    from fabric.store import RawCapture

    texts = [(str(p), read_plan_text(p)) for p in plans]
    for path, text in texts:
        parse_cable_plan(text, path)
    now = time.time()
    with stored.write() as store:
        for path, text in texts:
            store.save_capture(RawCapture(PLAN_KIND, PLAN_TOOL, text, now, path, (), "plan/1"))
    return len(texts)


@dataclass(frozen=True)
class StoredPlan:
    plan: CablePlan
    sources: tuple[str, ...]
    taken_at: float


def stored_plan(stored: StoreAccess) -> StoredPlan | None:
    """The newest plan set stored (``topology check --plan ... --save``), None when none is."""
    found = stored.read()
    if found is None:
        return None
    with found as store:
        infos = store.list_captures(kind=PLAN_KIND)
        if not infos:
            return None
        newest = max(i.taken_at for i in infos)
        texts = [(i.source, store.load_capture(i.id).text) for i in infos if i.taken_at == newest]
    plan = merge_plans(parse_cable_plan(text, source) for source, text in texts)
    return StoredPlan(plan, tuple(s for s, _ in texts), newest)


def check_stored_plan(d: Discovery, stored: StoreAccess) -> tuple[PlanCheck, StoredPlan] | None:
    """The fabric ``d`` against the newest stored plan; None when none is stored."""
    found = stored_plan(stored)
    if found is None:
        return None
    return check_plan(found.plan, d.fabric), found
