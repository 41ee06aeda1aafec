"""A clean fabric is quiet: on a clean lab of every preset's shape, ``ibfab health``, ``ibfab
recommend`` and ``ibfab sweep run`` (every pattern) report nothing to do.

Each preset runs at the smallest size that keeps its shape (tiers, rails, units, cores per
plane), one lab per preset shared by its tests. The three small presets' sweeps are also in
test_sweep_lab (through the use case); here every pattern runs through the CLI and its store.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.app.health.collect import Collector
from fabric.app.session import Session
from fabric.app.source import Source
from fabric.cli.main import main
from fabric.lab import simulator as lab
from fabric.store import Store
from probes.plan import PATTERNS
from topology.generate import PRESETS

pytestmark = pytest.mark.lab

# Each preset at its smallest size with the same shape.
SMALLEST = {
    "rail-small": PRESETS["rail-small"],
    "rail-3tier": PRESETS["rail-3tier"],
    "fattree-small": PRESETS["fattree-small"],
    # one scalable unit, eight rails, four spines
    "superpod-1su": "rail:units=1,nodes=4,hcas=8,spines=4,radix=64,speed=NDR",
    # several scalable units sharing one spine tier
    "superpod-4su": "rail:units=4,nodes=2,hcas=8,spines=4,radix=64,speed=NDR",
    # units under spines under a core tier, several cores per spine plane
    "superpod-64su": "rail:units=2,nodes=2,hcas=8,spines=4,core=8,radix=64,speed=NDR",
}
# The routing settings recommend gives from the SM's own evidence (the lab's OpenSM runs minhop):
# configuration advice, not something wrong with the fabric.
ROUTING = {"set_routing_engine", "set_nccl_env", "enable_ar", "disable_ar"}


def test_every_preset_has_its_smallest_shape_here() -> None:
    assert set(SMALLEST) == set(PRESETS)


class CleanLab:
    """A running lab shared by a module's tests, in its own lab directory (each test's own one,
    set by conftest, does not hold it)."""

    def __init__(self, name: str, db: str, workdir: Path) -> None:
        self.name, self.db, self.workdir = name, db, workdir

    def cli(self, *args: str) -> tuple[int, str, str]:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("IBFAB_LAB_DIR", str(self.workdir / "labs"))
            res = CliRunner().invoke(main, list(args))
        return res.exit_code, res.stdout, res.stderr


@pytest.fixture(scope="module", params=sorted(SMALLEST))
def clean(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CleanLab]:
    preset = str(request.param)
    name = f"clean-{preset}"
    workdir = tmp_path_factory.mktemp(name)
    db = str(workdir / "store.db")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IBFAB_LAB_DIR", str(workdir / "labs"))
        mp.setenv("IBFAB_DATA_DIR", str(workdir / "data"))
        lab.up(SMALLEST[preset], (), name=name)
        try:
            with Store.open(db) as store:  # two readings of every port: a health window
                collector = Collector(store, Session(Source.lab(name)))
                collector.collect_once()
                collector.collect_once()
            yield CleanLab(name, db, workdir)
        finally:
            lab.down(name)


def test_health_has_no_finding(clean: CleanLab) -> None:
    code, out, err = clean.cli("health", "--db", clean.db, "--since", "1h", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["links"], "health judged the links"
    flagged = [
        (lk["a"], lk["b"], lk["reasons"]) for lk in doc["links"] if lk["status"] != "ok" or lk["reasons"]
    ]
    assert flagged == []
    code, text, _ = clean.cli("health", "--db", clean.db, "--since", "1h")
    assert text.startswith("No findings: every link is ok.")
    with Store.open(clean.db) as store:
        assert store.load_findings_history() == []


def test_recommend_has_nothing_to_do(clean: CleanLab) -> None:
    code, out, err = clean.cli("recommend", "--lab", clean.name, "--db", clean.db, "--json")
    assert code == 0, err
    assert "no health data" not in err  # judged on the stored health, not on nothing
    doc = json.loads(out)
    assert [(a["kind"], a["target"]) for a in doc["actions"] if a["kind"] not in ROUTING] == []
    assert doc["notes"] == [] and doc["safety"]["verdicts"] == []


@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_sweep_pattern_is_quiet_and_stored_ok(clean: CleanLab, pattern: str) -> None:
    extra: list[str] = []
    if pattern == "custom":  # consecutive hosts, as an operator's own list of pairs
        code, out, err = clean.cli("sweep", "plan", "--lab", clean.name, "--pattern", "rail-pairs", "--json")
        assert code == 0, err
        plan = json.loads(out)
        hosts = sorted({p[end].split(":")[0] for p in plan["probes"] for end in ("client", "server")})
        pairs = clean.workdir / "pairs.txt"
        pairs.write_text("".join(f"{a} {b}\n" for a, b in itertools.pairwise(hosts)))
        extra = ["--pairs", str(pairs)]
    db = str(clean.workdir / f"sweep-{pattern}.db")
    code, out, err = clean.cli(
        "sweep", "run", "--lab", clean.name, "--pattern", pattern, "--db", db, "--json", *extra
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["results"] and all(r["ok"] for r in doc["results"])
    assert doc["suspects"] == [] and doc["tie"] == [] and doc["unexplained"] == []
    assert doc["retest_passes"] == 0 and doc["followup_probes"] == 0
    code, shown, err = clean.cli("sweep", "show", "--db", db, "--json")
    assert code == 0, err
    stored = json.loads(shown)
    assert all(r["ok"] for r in stored["results"]) and stored["suspects"] == []
