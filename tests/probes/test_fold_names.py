"""fold_names builds its NodeSet without ClusterShell parsing each host name (probes.inventory
host_nodeset): the fold must stay exactly ClusterShell's own, ``NodeSet.fromlist`` of the names,
for any mix of host names: one number, none, several, leading zeros, mixed widths, huge runs."""

from __future__ import annotations

from ClusterShell.NodeSet import NodeSet
from hypothesis import given, settings
from hypothesis import strategies as st

from probes.inventory import fold_names, host_nodeset, host_sort_key
from topology.nameformats import HOST_NAME_RE


def reference(names: list[str], *, last_number_only: bool = False) -> str:
    """The fold as ClusterShell makes it from the names one by one (the code before the fast path)."""
    hosts = [n for n in names if HOST_NAME_RE.fullmatch(n)]
    others = [repr(n) for n in dict.fromkeys(n for n in names if not HOST_NAME_RE.fullmatch(n))]
    if not last_number_only:
        ns = NodeSet.fromlist(hosts)
    else:
        ns = NodeSet.fromlist(sorted(set(hosts), key=host_sort_key))
        ns.fold_axis = (-1,)
    return ",".join(([str(ns)] if hosts else []) + others)


_number = st.one_of(
    st.integers(0, 40).map(str),
    st.integers(0, 40).flatmap(lambda n: st.integers(1, 5).map(lambda w: f"{n:0{w}d}")),
    st.integers(0, 10**30).map(str),
    st.sampled_from(["0", "00", "007", "1" * 100, "9" * 101]),
)
_word = st.sampled_from(["dgx-", "node", "gpu", "-ib", ".a", "x_", "su", "r", "login", "a-b.c"])
_name = st.lists(st.one_of(_word, _number), min_size=1, max_size=4).map("".join)
_names = st.lists(st.one_of(_name, st.sampled_from(["a[b", "dgx-[0001-0003]", " x", "é1"])), max_size=40)


@settings(max_examples=400, deadline=None)
@given(_names, st.booleans())
def test_fold_is_clustershells_own(names: list[str], last_number_only: bool) -> None:
    try:
        want = reference(names, last_number_only=last_number_only)
    except Exception as exc:  # ClusterShell refuses it (an index over 1e100): so does fold_names
        try:
            fold_names(names, last_number_only=last_number_only)
        except type(exc):
            return
        raise AssertionError(f"fold_names accepted {names!r}, which ClusterShell refuses") from None
    assert fold_names(names, last_number_only=last_number_only) == want


def test_a_thousand_hosts_and_the_odd_ones() -> None:
    names = [f"dgx-{i:04d}" for i in range(1024, 0, -1)] + [
        "login1",
        "login01",
        "mgmt",
        "su1-dgx-02",
        "n9",
        "n10",
    ]
    assert fold_names(names) == reference(names) == "dgx-[0001-1024],login[1,01],mgmt,n[9-10],su1-dgx-02"
    assert host_nodeset(names) == NodeSet.fromlist(names)
    assert len(host_nodeset(names)) == len(set(names))
