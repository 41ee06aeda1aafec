"""Is this bandwidth normal: the busbw model calibrated on real runs (and where it does not fit),
and the network findings of a run, each planted fault beside its clean case."""

from __future__ import annotations

import pytest

from probes.nccl_judge import judge_run, transport_findings
from probes.nccl_model import (
    EXPECTED,
    LOW,
    FabricFacts,
    HcaNet,
    bus_factor,
    busbw_model,
    fabric_facts,
    judge_busbw,
    uniform_facts,
)
from probes.nccl_parse import read_nccl_tests
from tests.advise_fabrics import fabric_of
from tests.conftest import REALDATA
from tests.ncclforms import FORMS

REAL = REALDATA / "nccl-tests"


def test_factors_are_nccl_tests() -> None:
    assert bus_factor("all_reduce_perf", 16) == 1.875
    assert bus_factor("AllGather", 8) == 0.875
    assert bus_factor("broadcast_perf", 8) == bus_factor("sendrecv", 2) == 1.0


# --- calibration: the real runs whose hardware their source states ----------------------------


def test_two_dgx_a100_with_8_hdr_hcas_are_normal() -> None:
    """deepops: 2 DGX A100, 8x 200G HDR each (SOURCES.tsv), a table without rank lines."""
    result = read_nccl_tests(str(REAL / "deepops-all_reduce_perf-2x-dgxa100-8xhdr-k8s-old-format.txt"))
    v = judge_busbw(
        result,
        uniform_facts(8, 200.0, "SOURCES.tsv"),
        collective="all_reduce_perf",
        hosts=["a", "b"],
        nranks=16,
    )
    assert v.verdict == "normal" and v.model is not None
    assert v.model.bound_gbs == 200.0 and v.best_gbs == 188.70 and v.best_size == 4 << 30
    assert EXPECTED[0] <= (v.ratio or 0) <= EXPECTED[1]  # 94 %: inside what a healthy run reaches


def test_the_same_run_on_half_the_rate_would_be_above_the_model_not_low() -> None:
    result = read_nccl_tests(str(REAL / "deepops-all_reduce_perf-2x-dgxa100-8xhdr-k8s-old-format.txt"))
    v = judge_busbw(
        result, uniform_facts(4, 200.0, "x"), collective="all_reduce", hosts=["a", "b"], nranks=16
    )
    assert v.verdict == "normal" and v.above_model  # faster than the ring bound is never 'low'


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (
            "superbench-all_reduce_perf-1node-8xA100-old-format.txt",
            "single_node",
        ),  # NVLink: not network-bound
        ("superbench-alltoall_perf-1node-8xA100-old-format.txt", "single_node"),
        ("superbench-reduce_perf-1node-8xA100-old-format-root.txt", "single_node"),
        # Slingshot-11 (200 Gb/s) pair: 22.9 GB/s (92 %) at 128 MiB, but no size of 1 GiB or more
        ("nccl-tests-issue369-gh200-2nodes-wrong-out-of-bounds-FAILED.txt", "small_sizes"),
        # the clouds' RoCE captures do not state their NICs: no fabric, no guess
        ("oci-hpc-all_reduce_perf-2nodes-16xH100-nccl2.23.4.txt", "no_fabric"),
        ("oci-oke-rccl-tests-all_reduce_perf-2nodes-MI300X.txt", "no_fabric"),
        ("meta-gcm-all_reduce_perf-2nodes-16xA100-80GB-pairwise-templated-hosts.txt", "no_fabric"),
    ],
)
def test_where_the_model_does_not_fit_it_says_unknown(name: str, why: str) -> None:
    result = read_nccl_tests(str(REAL / name))
    facts = uniform_facts(1, 200.0, "Slingshot-11") if "gh200" in name else None
    assert judge_busbw(result, facts).verdict == "unknown"
    assert judge_busbw(result, facts).why == why


def test_a_two_node_h100_run_beats_the_ring_model() -> None:
    """16 x 200 Gb/s per node would bound a ring at 400 GB/s; the capture reaches 471 (NVLS/tree
    across two nodes moves fewer bytes): normal, above the model, never low."""
    result = read_nccl_tests(
        str(REAL / "oci-hpc-all_reduce_perf-2nodes-16xH100-nccl2.23.4.txt"), "all_reduce_perf"
    )
    v = judge_busbw(result, uniform_facts(16, 200.0, "by hand"))
    assert v.verdict == "normal" and v.above_model and (v.ratio or 0) > 1.15


# --- the model from a fabric --------------------------------------------------------------------


def test_a_generated_rail_fabric_gives_each_host_its_rails() -> None:
    d = fabric_of("rail-small")
    facts = fabric_facts(d.fabric, d.classification, "rail-small")
    assert [x.name for x in facts.of("dgx-0001") or ()] == [f"mlx5_{i}" for i in range(8)]
    assert {x.gbps for x in facts.of("dgx-0007") or ()} == {400.0}
    assert facts.of("dgx-0001.cluster") == facts.of("dgx-0001")  # NCCL prints the short name
    assert facts.of("login") is None


def test_each_collective_kind() -> None:
    facts = uniform_facts(8, 400.0, "x")
    ring = busbw_model("all_reduce", 16, ["a", "b"], facts)
    a2a = busbw_model("alltoall", 16, ["a", "b"], facts)
    p2p = busbw_model("sendrecv", 16, ["a", "b"], facts)
    rail = busbw_model("all_reduce", 2, ["a", "b"], facts)  # one rank per node: one HCA
    assert not isinstance(ring, str) and ring.bound_gbs == 400.0
    assert not isinstance(a2a, str) and a2a.bound_gbs == pytest.approx(400.0 * 15 / (8 * 8))
    assert not isinstance(p2p, str) and p2p.bound_gbs == 50.0
    assert not isinstance(rail, str) and (rail.hcas_per_node, rail.bound_gbs) == (1, 50.0)
    assert busbw_model("gather", 16, ["a", "b"], facts) == "not_modelled"
    assert busbw_model("all_reduce", 15, ["a", "b"], facts) == "no_ranks"


def test_alltoall_across_oversubscribed_leaves() -> None:
    """Four one-HCA hosts, two per leaf, each leaf with one 400G uplink: two-thirds of each host's
    alltoall traffic leaves its leaf (533 Gb/s of demand on 400): the leaf bounds the run."""
    hcas = {f"h{i}": (HcaNet("mlx5_0", 400.0, "leaf-a" if i < 2 else "leaf-b"),) for i in range(4)}
    facts = FabricFacts(hcas, {"leaf-a": 400.0, "leaf-b": 400.0}, "by hand")
    m = busbw_model("alltoall", 4, ["h0", "h1", "h2", "h3"], facts)
    assert not isinstance(m, str) and m.leaf_bound_gbs is not None
    assert m.bound_gbs == pytest.approx(50.0 * 400 / (2 * 400 * 2 / 3) * 3 / (1 * 3))
    wide = FabricFacts(hcas, {"leaf-a": 1600.0, "leaf-b": 1600.0}, "by hand")
    m2 = busbw_model("alltoall", 4, ["h0", "h1", "h2", "h3"], wide)
    assert not isinstance(m2, str) and m2.leaf_bound_gbs is None and m2.bound_gbs == 50.0


def test_low_says_how_low_and_where() -> None:
    result = read_nccl_tests(str(FORMS / "all_reduce_perf-2nodes-16xH100-4-of-8-hcas-warn-mid-row.txt"))
    v = judge_busbw(result, uniform_facts(8, 400.0, "x"))
    assert v.verdict == "low" and v.failed and v.ratio == pytest.approx(188.47 / 400, abs=1e-3)
    assert [s for s, _ in v.low_sizes] == [1 << 30, 2 << 30, 4 << 30, 8 << 30]
    assert all(bw < 400 * LOW for _, bw in v.low_sizes)


# --- network findings: each fault beside its clean case ----------------------------------------

RAIL = fabric_of("rail-small")
FACTS = fabric_facts(RAIL.fabric, RAIL.classification, "rail-small")


def _kinds(name: str, **kw: object) -> set[tuple[str, bool]]:
    result = read_nccl_tests(str(FORMS / name))
    return {(f.kind, f.failed) for f in transport_findings(result, FACTS, **kw)}  # type: ignore[arg-type]


def test_a_clean_run_has_no_failing_finding() -> None:
    result = read_nccl_tests(str(FORMS / "all_reduce_perf-2nodes-16xH100-ib-info.txt"))
    j = judge_run(result, FACTS)
    assert not j.failed and j.busbw.verdict == "normal"
    assert {f.kind for f in j.findings} == {"network", "nccl_version"}


def test_sockets_fail_the_run_with_their_lines() -> None:
    result = read_nccl_tests(str(FORMS / "all_reduce_perf-2nodes-16xH100-socket-fallback.txt"))
    j = judge_run(result, FACTS)
    [sock] = [f for f in j.findings if f.failed]
    assert (sock.kind, sock.hosts, sock.opened) == ("socket", ("dgx-0001", "dgx-0002"), ("eth0",))
    texts = [e.text for e in sock.evidence]
    assert any("NET/IB : No device found." in t for t in texts) and any(
        "Using network Socket" in t for t in texts
    )
    assert all(e.lineno for e in sock.evidence)


def test_fewer_hcas_than_rails_names_the_missing_ones() -> None:
    result = read_nccl_tests(str(FORMS / "all_reduce_perf-2nodes-16xH100-4-of-8-hcas-warn-mid-row.txt"))
    [fewer] = [f for f in judge_run(result, FACTS).findings if f.failed]
    assert (fewer.kind, fewer.expected, fewer.missing) == (
        "fewer_hcas",
        8,
        ("mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"),
    )
    assert fewer.value == "mlx5_0,mlx5_1,mlx5_2,mlx5_3"
    assert any("NCCL_IB_HCA set to" in e.text for e in fewer.evidence)


def test_a_rail_run_on_one_hca_is_meant() -> None:
    """One rank per node with NCCL_IB_HCA on one HCA opens one of eight: no finding."""
    from probes.nccl_parse import parse_nccl_tests
    from tests import ncclforms as nf

    ranks = nf.ranks_of(nf.HOSTS, 1, nf.PIDS)
    text = nf.header("all_reduce_perf", ranks, 1 << 30, 1 << 30, 20, None)
    text += nf.init_lines(ranks, 2, nf.ib_net(["mlx5_0"])) + nf.result_header()
    for m in nf.measure([1 << 30], 1.0, 46.8, 24.0):
        text += nf.preamble(m, "float", "sum", -1) + nf.body(m.oop) + nf.body(m.ip) + "\n"
    result = parse_nccl_tests(text + nf.footer("all_reduce_perf", 46.8), "rail")
    assert result.ranks_per_host == 1
    j = judge_run(result, FACTS)
    assert not j.failed and j.busbw.verdict == "normal" and j.busbw.model is not None
    assert j.busbw.model.hcas_per_node == 1


def test_one_node_over_sockets_fails_only_where_ib_is_expected() -> None:
    name = "all_gather_perf-1gpu-vm-coll-info-mid-row.txt"
    assert _kinds(name) >= {("socket", False)}  # 'vm' is no host of the fabric
    assert ("socket", True) in _kinds(name, expect_ib=True)


def test_no_log_no_network_finding() -> None:
    result = read_nccl_tests(str(REAL / "oci-hpc-all_reduce_perf-2nodes-16xH100-nccl2.23.4.txt"))
    kinds = {f.kind: f for f in transport_findings(result)}
    assert set(kinds) == {"network_unknown", "nccl_version"} and not any(f.failed for f in kinds.values())
    assert kinds["nccl_version"].value == "2.23.4+cuda12.6"
