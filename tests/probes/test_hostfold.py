"""probes.hostfold folds one-axis host names without ClusterShell: its fold must be exactly
``str(NodeSet.fromlist(names))``, and it must step aside (None) for names with several numbers."""

from __future__ import annotations

from ClusterShell.NodeSet import NodeSet
from hypothesis import given, settings
from hypothesis import strategies as st

from probes.hostfold import fold_one_number

_number = st.one_of(
    st.integers(0, 40).map(str),
    st.integers(0, 40).flatmap(lambda n: st.integers(1, 5).map(lambda w: f"{n:0{w}d}")),
    st.integers(0, 10**30).map(str),
    st.sampled_from(["0", "00", "007", "0999", "1000", "1" * 100]),
)
_prefix = st.sampled_from(["", "dgx-", "node", "gpu", "login", "a-b.c", "x_"])
_suffix = st.sampled_from(["", "-ib", ".a", "b"])
_one = st.tuples(_prefix, _number, _suffix).map("".join)
_none = st.sampled_from(["login", "mgmt", "a-b", "x"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_one, _none), min_size=1, max_size=60))
def test_one_axis_fold_is_clustershells(names: list[str]) -> None:
    assert fold_one_number(names) == str(NodeSet.fromlist(names))


def test_runs_padding_and_patterns() -> None:
    names = [f"dgx-{i:04d}" for i in range(1024, 0, -1)]
    names += ["n9", "n10", "n12", "login1", "login01", "mgmt", "p08", "p09", "p10", "p100", "q0999", "q1000"]
    want = "dgx-[0001-1024],login[1,01],mgmt,n[9-10,12],p[08-10,100],q[0999-1000]"
    assert fold_one_number(names) == str(NodeSet.fromlist(names)) == want


def test_several_numbers_are_left_to_clustershell() -> None:
    assert fold_one_number(["dgx-01", "su1-dgx-02"]) is None
    assert fold_one_number(["n" + "9" * 101]) is None
