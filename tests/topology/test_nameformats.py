"""Each output format's rule for names: what fits, and the one line naming what does not and why."""

from __future__ import annotations

import pytest

from topology.nameformats import (
    HOSTFILE,
    K8S_LABEL_VALUE,
    K8S_NODE,
    PLAN_CELL,
    SLURM_NODE,
    NameFormat,
    unfit,
    unfit_names,
)

# name -> the formats it fits (the others refuse it)
NAMES: dict[str, set[NameFormat]] = {
    "dgx-0001": {SLURM_NODE, HOSTFILE, K8S_NODE, PLAN_CELL, K8S_LABEL_VALUE},
    "DGX-0001.cluster": {
        SLURM_NODE,
        HOSTFILE,
        K8S_NODE,
        PLAN_CELL,
        K8S_LABEL_VALUE,
    },  # kubectl gets it lower-cased
    "node_06": {SLURM_NODE, HOSTFILE, PLAN_CELL, K8S_LABEL_VALUE},  # '_' is no RFC 1123 character
    "evil#1": {PLAN_CELL},
    "dgx-[0001-0999]": {PLAN_CELL},
    "$(reboot)": {PLAN_CELL},
    "a b": {PLAN_CELL},
    "x,y": {PLAN_CELL},  # CSV quotes the comma
    "Ünï-05": {PLAN_CELL},
    "host:1": {PLAN_CELL},
    "=cmd": set(),
    "-x": set(),
    "bell\x07": set(),
    "line\nbreak": set(),
    " padded": set(),
    "": {K8S_LABEL_VALUE},  # an empty label value is valid; an empty name is no name
    "a" * 64: {SLURM_NODE, HOSTFILE, K8S_NODE, PLAN_CELL},  # a label value is at most 63
}
FORMATS = (SLURM_NODE, HOSTFILE, K8S_NODE, PLAN_CELL, K8S_LABEL_VALUE)


@pytest.mark.parametrize("name", NAMES, ids=[repr(n) for n in NAMES])
@pytest.mark.parametrize("fmt", FORMATS, ids=[f.what for f in FORMATS])
def test_rule(name: str, fmt: NameFormat) -> None:
    record = unfit(name, fmt)
    assert fmt.fits(name) == (fmt in NAMES[name]) == (record is None)
    if record is not None:
        line = str(record)
        assert "\n" not in line and line.startswith(f"{name!r} left out of {fmt.what}: ")
        assert record.why


@pytest.mark.parametrize(
    ("name", "fmt", "words"),
    [
        ("evil#1", SLURM_NODE, "'#' starts a comment in topology.conf"),
        ("dgx-[0001-0999]", SLURM_NODE, "is 999 nodes"),
        ("x,y", SLURM_NODE, "separates names"),
        ("a b", SLURM_NODE, "whitespace"),
        ("$(reboot)", SLURM_NODE, "'$' is not in a host name"),
        ("-x", SLURM_NODE, "reads as an option"),
        ("evil#1", HOSTFILE, "comment in a hostfile"),
        ("host:1", HOSTFILE, "MPICH"),
        ("node_06", K8S_NODE, "'_' is not in an RFC 1123 name"),
        ("bell\x07", PLAN_CELL, "control character"),
        ("line\nbreak", PLAN_CELL, "line break"),
        ("=cmd", PLAN_CELL, "formula"),
        (" padded", PLAN_CELL, "stripped"),
    ],
)
def test_the_reason_names_what_breaks(name: str, fmt: NameFormat, words: str) -> None:
    record = unfit(name, fmt)
    assert record is not None and words in record.why


def test_unfit_names_keeps_order_and_says_each_name_once() -> None:
    got = unfit_names(["ok-1", "b#", "a[1-2]", "b#", "ok-2"], SLURM_NODE)
    assert list(got) == ["b#", "a[1-2]"]
