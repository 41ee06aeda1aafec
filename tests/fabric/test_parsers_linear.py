"""Every parser is linear in its input: its work on adversarial text grows as the text does,
never with its square (a backtracking pattern, a loop over the lines inside one).

A regex that backtracks (``(?P<key>[A-Za-z][\\w ]*?)\\s*:`` over a 16 KB line took 2.8 s; the
perfquery fallback turned 1 MB of garbage into 40 s and 3.5 GB) is quadratic or worse in the length
of a line. Each parser gets: one long line of each character that its patterns repeat (letters,
spaces, tabs, digits, quotes, brackets, colons, ``=``, ``#``, ``-``, ``>``), a real line of its tool
repeated into one line, a real line with a run of spaces or letters in the middle at each
separator, long lines of its real text, and its real text repeated; each at 16 KB and at 64 KB.

The work is counted, not timed (:mod:`tests.workcount`): the calls made, the characters given to
regexes, and the steps of the regex engine on the longest strings each pattern was given. Four
times the text may cost at most about four times the work, whatever the machine's load. The time
itself, against reading the text, at 1 MB, is ``bench/bench_parsers_linear.py``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator

import pytest

from fabric.counters.parse import parse_ibdiagnet_pm, parse_ibqueryerrors, parse_perfquery
from probes.inventory import parse_inventory
from probes.labstep import parse_step_output
from probes.labtraffic import parse_error_rates
from probes.nccl_parse import parse_nccl_tests
from probes.opensm import parse_opensm_conf, parse_opensm_log, parse_sminfo
from probes.pairs import Endpoint, parse_pair_file
from probes.perftest import key_values, parse_perftest
from probes.preflight import SAMPLE_DUMP, parse_sysfs_dump
from probes.slurm_parse import (
    parse_granted,
    parse_jobs,
    parse_nodes,
    parse_reasons,
    parse_reservations,
    parse_steps,
    salloc_refusal,
    step_failure,
    task_output,
)
from tests.conftest import REALDATA
from tests.regexsteps import engine_steps, real_spans
from tests.workcount import measure_in_child
from topology.cableplan import parse_cable_plan
from topology.cables import parse_cables
from topology.ibdiag_csv import parse_db_csv_fabric
from topology.ibdiag_state import parse_db_csv_state
from topology.ibnetdiscover import parse_ibnetdiscover_text
from topology.model import Guid
from topology.naming import parse_hca_description
from topology.routes import parse_lft_dump


def _real(*parts: str, limit: int = 200_000) -> str:
    return (REALDATA.joinpath(*parts)).read_text(encoding="utf-8", errors="replace")[:limit]


def _data(name: str) -> str:
    from pathlib import Path

    return (Path(__file__).parents[1] / "data" / "slurm" / name).read_text()


_EPS = [
    Endpoint(f"dgx-{h:04d}", f"mlx5_{d}", Guid(f"0x{h * 16 + d:016x}"), None, d)
    for h in range(1, 9)
    for d in range(2)
]

# name -> (parse the text, a real or representative text of that format)
PARSERS: dict[str, tuple[Callable[[str], object], Callable[[], str]]] = {
    "ibnetdiscover": (
        lambda t: parse_ibnetdiscover_text(t, "adv"),
        lambda: _real("ibnetdiscover", "ufm-sdk-small-lab-hdr-edr-fdr-15nodes.txt"),
    ),
    "ibnetdiscover-p": (
        lambda t: parse_ibnetdiscover_text(t, "adv"),
        lambda: _real("ibnetdiscover", "treydock-ibnetdiscover-p-ports-edr-osc.txt"),
    ),
    "perfquery": (
        lambda t: parse_perfquery(t, "adv"),
        lambda: _real("perfquery", "treydock-perfquery-l-x-switch-port-errors-xmitdiscards.txt"),
    ),
    "ibqueryerrors": (
        lambda t: parse_ibqueryerrors(t, "adv"),
        lambda: _real("ibqueryerrors", "linux-rdma-ml-2021-sx6036-ceph-errors-quoted.txt"),
    ),
    "ibdiagnet-pm": (
        lambda t: parse_ibdiagnet_pm(t, "adv"),
        lambda: _real("ibdiagnet", "garyli-ndr-272nodes-ibdiagnet2.pm", limit=20_000),
    ),
    "db_csv-fabric": (
        lambda t: parse_db_csv_fabric(t, "adv"),
        lambda: _real("ibdiagnet", "garyli-ndr-272nodes-ibdiagnet2.db_csv", limit=60_000),
    ),
    "db_csv-state": (
        lambda t: parse_db_csv_state(t, "adv"),
        lambda: _real("ibdiagnet", "garyli-ndr-272nodes-ibdiagnet2.db_csv", limit=60_000),
    ),
    "cables": (
        lambda t: parse_cables(t, "adv"),
        lambda: _real("ibdiagnet", "garyli-ndr-272nodes-ibdiagnet2.cables", limit=20_000),
    ),
    "cable-plan": (
        lambda t: parse_cable_plan(t, "adv"),
        lambda: _real("ndt", "ufm-ndt-negative_flow_ndts-incorrect_ports.ndt"),
    ),
    "ib_write_bw": (
        lambda t: parse_perftest(t, "adv"),
        lambda: _real("ib_write_bw", "superbench-loopback-8M-hdr-server-client-concat.txt"),
    ),
    "ib_write_lat": (
        lambda t: parse_perftest(t, "adv"),
        lambda: _real("ib_write_lat", "stmatengss-cx3-qdr-a-sweep.txt"),
    ),
    "nccl-tests": (
        lambda t: parse_nccl_tests(t, "adv"),
        lambda: _real("nccl-tests", "oci-hpc-all_reduce_perf-2nodes-16xH100-nccl2.23.4.txt"),
    ),
    "nccl-tests-failure": (
        lambda t: parse_nccl_tests(t, "adv"),
        lambda: _real("nccl-tests", "nccl-tests-issue369-gh200-2x4-cuda-busy-failure.txt"),
    ),
    "lft-dump": (
        lambda t: parse_lft_dump(t, "adv"),
        lambda: _real("opensm", sorted(p.name for p in (REALDATA / "opensm").iterdir())[0]),
    ),
    "sysfs-dump": (lambda t: parse_sysfs_dump(t, "adv"), lambda: SAMPLE_DUMP),
    "inventory": (
        lambda t: parse_inventory(t, "adv"),
        lambda: "dgx-0001 address=10.0.0.1 user=root port=22\ndgx-0002 address=10.0.0.2\n# note\n",
    ),
    "pair-file": (
        lambda t: parse_pair_file(t, "adv", _EPS),
        lambda: "# pairs\n1 dgx-0001:mlx5_0 dgx-0005:mlx5_0\n2 dgx-0002 dgx-0006\n",
    ),
    "ibsim-dump": (
        parse_error_rates,
        lambda: (
            'Switch 36 "S-0c42a10300a10000"\t\t# "leaf-su01-r0" nodeguid 0c42a10300a10000\n'
            'c42a10300a10000\t[1]\t"leaf-su01-r0"[5]\t  4x 50G Active/LinkUp\t# err_rate 30\n'
        ),
    ),
    "labstep": (lambda t: parse_step_output(t, "adv"), lambda: '{"format": "x", "a": 1}\nnoise\n'),
    "opensm": (
        lambda t: (parse_sminfo(t), parse_opensm_log(t), parse_opensm_conf(t)),
        lambda: (
            "sminfo: sm lid 1 sm guid 0x1070fd0300100001, activity count 5 priority 0 state 3 SMINFO_MASTER\n"
            "Nov 25 08:00:00 123 [7F] 0x02 -> OpenSM 5.17.0 MLNX\n"
            "Nov 25 08:00:01 123 [7F] 0x02 -> ar_updn tables configured on all switches\n"
            "routing_engine ar_updn  # AR\nroot_guid_file /etc/r\n"
        ),
    ),
    "scontrol-node": (parse_nodes, lambda: _data("scontrol-show-node-drain-alloc.txt")),
    "sinfo-R": (parse_reasons, lambda: _data("sinfo-R-drain.txt")),
    "scontrol-reservation": (parse_reservations, lambda: _data("scontrol-show-reservation-maint.txt")),
    "squeue": (parse_jobs, lambda: _data("squeue-job.txt")),
    "squeue-steps": (parse_steps, lambda: _data("squeue-steps.txt")),
    "salloc": (
        lambda t: (parse_granted(t), salloc_refusal(t)),
        lambda: _data("salloc-bad-reservation.txt") + _data("salloc-granted.txt"),
    ),
    "srun": (
        lambda t: (step_failure(t), task_output(t)),
        lambda: _data("srun-dead-node.txt") + _data("srun-task-exit-3.txt"),
    ),
    "hca-description": (parse_hca_description, lambda: "dgx-0001 mlx5_0\n"),
}

# Characters the patterns repeat (\s*, \S+, [^"]*, .*?, (?:>\s?)+, \r+ ...), each made into a 1 MB
# line, and short units repeated (a key before a colon, an unclosed bracket or parenthesis, words).
_RUNS = ("a", " ", "\t", "\r", "0", '"', "[", "(", ":", "=", "#", "-", ">", "*", ";")
_UNITS = ("a ", "a:", " :", "a=", "A=b ", '"a', "[x == 1 (", "0x", "x\t", "; a:", "1.")
_FILLERS = (" ", "a", '"')


def adversarial_texts(seed: str, size: int) -> Iterator[tuple[str, str]]:
    """(label, text of about ``size`` characters) built from ``seed`` (a real text of the format)."""
    for ch in _RUNS:
        yield f"run {ch!r}", ch * size
    for unit in _UNITS:
        yield f"run {unit!r}", unit * (size // len(unit))
    lines = [ln for ln in seed.splitlines() if ln.strip()]
    head = "\n".join(lines[:8]) + "\n"  # the lines that put a parser in its state, before the long one
    # a few lines of every shape in the seed: the first ones (headers) and some from the body
    picks = list(dict.fromkeys(lines[:4] + lines[4 :: max(1, len(lines) // 4)][:4]))
    for i, line in enumerate(picks):
        yield f"line {i} repeated", head + (line + " ") * (size // (len(line) + 1) + 1)
        # a long run where a pattern repeats: after the first and the last separator, before the
        # last word (a free-text tail), at the end
        seps = [m.start() + 1 for m in re.finditer(r"[:=#\[\]\"|,(]", line)]
        gaps = [m.start() for m in re.finditer(r"\s\S+\s*$", line)]
        for at in sorted({*seps[:1], *seps[-1:], *gaps, len(line)}):
            for filler in _FILLERS:
                yield f"line {i} {filler!r} at {at}", head + line[:at] + filler * size + line[at:] + "\n"
    body = "\n".join(lines) + "\n"
    width = min(65536, size // 4)
    yield (
        "64 KB lines",
        "\n".join((body.replace("\n", " ") * 64)[:width] for _ in range(size // width)) + "\n",
    )
    yield "seed repeated", body * (size // max(1, len(body)) + 1)


SMALL, LARGE = 1 << 14, 1 << 16  # each text at both sizes: 4x the text, at most ~4.5x the work


# -- parsers that are not linear, to show the count catches them ----------------------------------
def _rest_of_text(text: str) -> object:
    """Matches each line against the whole rest of the text (a slice, then a search on it)."""
    found, at = [], 0
    while at < len(text):
        m = _LINE_REST.match(text[at:])
        if not m:
            break
        found.append(m.group(1))
        at += m.end()
    return found


def _each_line_against_the_others(text: str) -> object:
    """For each line, a look at every line before it (a membership test by calls)."""
    lines = text.splitlines()[:2000]
    return [sum(1 for other in lines[:k] if other.startswith(line[:1])) for k, line in enumerate(lines)]


_LINE_REST = re.compile(r"([^\n]*)\n?")
# perftest's key=value pattern before it was made linear: lazy over a key's letters, then a colon
_OLD_KEY_VALUE = re.compile(r"(?P<key>[A-Za-z][A-Za-z0-9_.*/ -]*?)\s*:\s*(?P<value>\S+)")
_PERFTEST_SEED = PARSERS["ib_write_bw"][1]

TOYS = {
    "rest-of-text": (_rest_of_text, _PERFTEST_SEED),
    "line-against-lines": (_each_line_against_the_others, _PERFTEST_SEED),
    "old-key-value": (lambda t: [_OLD_KEY_VALUE.findall(ln) for ln in t.splitlines()], _PERFTEST_SEED),
}


@pytest.fixture(scope="module")
def work() -> dict[str, dict[str, list[str]]]:
    """Every parser's counted work, from one process that counts (see workcount)."""
    return measure_in_child(sorted(PARSERS), SMALL, LARGE)


@pytest.fixture(scope="module")
def toys() -> dict[str, dict[str, list[str]]]:
    """The toys' counted work, on shorter texts: the real engine runs the backtracking one too."""
    return measure_in_child(sorted(TOYS), 1 << 10, 1 << 12)


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_parser_work_grows_linearly_on_adversarial_text(
    name: str, work: dict[str, dict[str, list[str]]]
) -> None:
    found = work[name]
    assert not found["slow"], f"{name} does superlinear work: " + "; ".join(found["slow"][:5])
    assert not found["backtracking"], f"{name} has a pattern that backtracks: " + "; ".join(
        found["backtracking"][:3]
    )


def test_the_count_catches_a_quadratic_parser(toys: dict[str, dict[str, list[str]]]) -> None:
    assert any("regex input" in line for line in toys["rest-of-text"]["slow"]), toys["rest-of-text"]
    assert any("calls" in line for line in toys["line-against-lines"]["slow"]), toys["line-against-lines"]
    assert not toys["rest-of-text"]["backtracking"] and not toys["line-against-lines"]["backtracking"]


def test_the_count_catches_a_backtracking_pattern(toys: dict[str, dict[str, list[str]]]) -> None:
    """The old key=value pattern: one findall per line is linear in calls and characters given;
    only the engine's steps show it (its steps grow with the square of a line of a key's letters)."""
    found = toys["old-key-value"]
    assert not found["slow"]
    assert any(repr(_OLD_KEY_VALUE.pattern) in line and "over " in line for line in found["backtracking"]), (
        found
    )


def test_the_step_counter_counts_a_backtracking_pattern_as_quadratic() -> None:
    few = engine_steps(_OLD_KEY_VALUE, "findall", "a" * 200).steps
    many = engine_steps(_OLD_KEY_VALUE, "findall", "a" * 800).steps
    assert many > 12 * few  # 4x the line, 16x the steps
    linear = [engine_steps(key, "findall", "a" * n).steps for n in (200, 800) for key in [re.compile(r"\S+")]]
    assert linear[1] <= 4.5 * linear[0]


def test_the_step_counter_matches_what_re_matches() -> None:
    """Its steps are those of re's matching only where it matches what re does: random lines on
    patterns of every construct the parsers use."""
    patterns = [
        r"\s*:\s*(\S+)",
        r"^(\w+)\s+(\d+)$",
        r"(a|ab)*c",
        r"x*",
        r"(?:>\s?)+",
        r'[^"]*"',
        r"\bab\b",
        r"(?i)abc[d-f]",
        r"a(?=b)",
        r"(?<!a)b",
        r"(?>a+)b",
        r"a++:",
        r"(?m)^x$",
        r"\d{2,3}?",
        r".*?:",
        r"\[(?:[^\]]|\\\])*\]",
        r"(?:^|(?<=\s))([A-Z][A-Za-z0-9_/:]*)=",
        _OLD_KEY_VALUE.pattern,
    ]
    rng = random.Random(30)
    for pattern in map(re.compile, patterns):
        for _ in range(150):
            line = "".join(rng.choice('ab :\n"x>[]\\AB1 23c=\t') for _ in range(rng.randint(0, 30)))
            for method in ("search", "findall", "match", "fullmatch"):
                pos = rng.randint(0, len(line))
                want = real_spans(pattern, method, line, pos)
                assert engine_steps(pattern, method, line, pos).spans == want, (pattern, method, line, pos)


def test_key_values_finds_what_the_pattern_found() -> None:
    old = re.compile(r"(?P<key>[A-Za-z][A-Za-z0-9_.*/ -]*?)\s*:\s*(?P<value>\S+)")
    rng = random.Random(15)
    alphabet = "aZ09 _.*/-:\t\u00e9x"
    for _ in range(20_000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert key_values(line) == [(k.strip(), v) for k, v in old.findall(line)], line


def test_a_node_reason_is_read_as_the_pattern_read_it() -> None:
    from probes.slurm_parse import _reason

    old = re.compile(r"\sReason=(.*?)(?:\s\[([^\]@]*)@([^\]]*)\])?\s*$")
    rng = random.Random(16)
    parts = [" Reason=", "Reason=", " ", "[", "]", "@", "a", "root", "\t", "x=y", " [root@t]"]
    for _ in range(20_000):
        line = "NodeName=n" + "".join(rng.choice(parts) for _ in range(rng.randint(0, 9)))
        m = old.search(line)
        want = (m.start(), m.group(1).strip(), m.group(2), m.group(3)) if m else None
        assert _reason(line) == want, line
