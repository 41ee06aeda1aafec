"""The lab's simulated nccl-tests: busbw computed from the lab fabric's state and the simulated
nodes' GPUs, never measured.

ibsim moves management packets only and a lab host has no GPU, so, as :mod:`probes.labtraffic`
does for ib_write_bw, this backend stands in for nccl-tests and says so: every run it makes
carries ``SIMULATED`` in its source. The model:

* each simulated node has GPUs whose single-node all_reduce reaches :data:`NVLINK_BUSBW` GB/s
  (NVLink), and a GPU-to-HCA path (PCIe) that carries what its HCAs do;
* a node planted ``gpu`` (throttled GPUs, a degraded NVLink) reaches only ``factor`` of that in
  every collective it is part of; a node planted ``pcie`` (an HCA behind a narrow PCIe link)
  carries only ``factor`` of its HCAs' rate between its GPUs and its HCAs: nccl-tests across
  nodes feel it, ib_write_bw from host memory and single-node runs do not;
* a collective across nodes moves each rail's share through every node's HCA on that rail and
  every cable of the routes between ring neighbours (a cable as trained: a degraded cable counts
  at its trained rate); the ring goes at its slowest rail, times :data:`NCCL_EFFICIENCY` (what
  a healthy run reaches of the bound, :mod:`probes.nccl_model`), and no faster than its slowest
  node's GPUs;
* a node planted ``lost`` stops answering from round ``from_round`` of a triage on (its slurmd or
  sshd gone): no test that includes it runs from then on (:mod:`fabric.app.triage.simulated`).

Planted faults are kept as JSON (:func:`parse_planted`, :func:`format_planted`) in the lab's
directory by :mod:`fabric.app.triage.labnodes`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from probes.nccl_model import FabricFacts, HcaNet, bus_factor
from probes.nccl_parse import NcclRank, NcclRow, NcclTestResult, NcclTiming
from topology.errors import ParseError
from topology.model import Link

SIMULATED = "lab-simulated"
NVLINK_BUSBW = 480.0  # GB/s: an 8-GPU node's single-node all_reduce
NCCL_EFFICIENCY = 0.94  # of the network bound (2 DGX A100 with 8 HDR HCAs reach 94 %)
SIZES = tuple(1 << k for k in range(20, 34))  # 1 MiB .. 8 GiB, nccl-tests -b 1M -e 8G
_LATENCY_US = 60.0
FAULT_KINDS = ("gpu", "pcie", "lost")


@dataclass(frozen=True, slots=True)
class PlantedNode:
    """A simulated node made slow: its GPUs (``gpu``) or its GPU-to-HCA path (``pcie``) reach
    ``factor`` of their healthy rate; or made ``lost`` from round ``from_round`` of a triage on
    (``factor`` 1: it is not slow while it answers)."""

    host: str
    kind: str
    factor: float
    from_round: int = 1


def parse_planted(text: str, source: str = "<planted nodes>") -> dict[str, PlantedNode]:
    """The planted nodes of a lab (``{"nodes": [{"host":..,"kind":..,"factor":..}]}``)."""
    try:
        doc = json.loads(text)
        out = {}
        for item in doc["nodes"]:
            node = PlantedNode(
                str(item["host"]), str(item["kind"]), float(item["factor"]), int(item.get("from_round", 1))
            )
            if node.kind not in FAULT_KINDS or not 0.0 < node.factor <= 1.0 or node.from_round < 1:
                raise ValueError(
                    f"{node.host}: kind {node.kind!r}, factor {node.factor}, round {node.from_round}"
                )
            out[node.host] = node
        return out
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise ParseError("planted nodes", source, 0, "", f"not a planted-node file ({exc})") from None


def format_planted(nodes: Mapping[str, PlantedNode]) -> str:
    items = [
        {
            "host": n.host,
            "kind": n.kind,
            "factor": n.factor,
            **({"from_round": n.from_round} if n.kind == "lost" else {}),
        }
        for n in sorted(nodes.values(), key=lambda x: x.host)
    ]
    return json.dumps({"format": "ibfab-lab-nodes/1", "nodes": items}, indent=1) + "\n"


def _trained(hca: HcaNet) -> float:
    return hca.gbps if hca.trained_gbps is None else hca.trained_gbps


def _result(
    source: str, collective: str, hosts: Sequence[str], per_node: int, busbw: float, factor: float
) -> NcclTestResult:
    """An nccl-tests result whose busbw approaches ``busbw`` (time = latency + bytes / bandwidth)."""
    ranks = tuple(
        NcclRank(i * per_node + d, 0, 4000 + i, h, d, f"0000:{0x18 + d:02x}:00", "simulated GPU")
        for i, h in enumerate(hosts)
        for d in range(per_node)
    )
    rows = []
    alg_peak = busbw / factor if factor else busbw
    for size in SIZES:
        t = _LATENCY_US + size / (alg_peak * 1e3)
        alg = size / t / 1e3
        timing = NcclTiming(round(t, 2), round(alg, 2), round(alg * factor, 2), 0)
        rows.append(NcclRow(size, size // 4, "float", "sum", -1, timing, timing))
    avg = sum(r.in_place.busbw for r in rows) / len(rows)
    return NcclTestResult(
        source,
        collective,
        None,
        None,
        None,
        (),
        ranks,
        tuple(rows),
        round(avg, 3),
        0,
        (),
        (),
        None,
        (),
        True,
        None,
    )


@dataclass(frozen=True)
class SimulatedCluster:
    """The lab's hosts as GPU nodes: their HCAs from the fabric, their planted faults, and the routes
    between HCAs (the lab's OpenSM routes; a cable not on any known route is not felt)."""

    facts: FabricFacts
    planted: Mapping[str, PlantedNode]
    route: Mapping[tuple[str, str, int], Sequence[Link]]  # (host a, host b, rail) -> cables
    gpus_per_node: int = 8

    def _gpu(self, host: str) -> float:
        p = self.planted.get(host)
        return NVLINK_BUSBW * (p.factor if p is not None and p.kind == "gpu" else 1.0)

    def _pcie(self, host: str, hca: HcaNet) -> float:
        p = self.planted.get(host)
        return hca.gbps * p.factor if p is not None and p.kind == "pcie" else float("inf")

    def single_node(self, host: str, collective: str = "all_reduce_perf") -> NcclTestResult:
        """One node's all_reduce over its own GPUs (NVLink)."""
        g = self.gpus_per_node
        return _result(
            f"{SIMULATED} {host}", collective, [host], g, self._gpu(host), bus_factor(collective, g)
        )

    def collective(self, hosts: Sequence[str], collective: str = "all_reduce_perf") -> NcclTestResult:
        """A ring collective over ``hosts`` (all GPUs of each), in the given order."""
        rails = min(len(self.facts.of(h) or ()) for h in hosts)
        used = min(rails, self.gpus_per_node)
        per_rail: list[float] = []
        for r in range(used):
            rate = min(
                min(_trained(hca), self._pcie(h, hca)) for h in hosts for hca in [(self.facts.of(h) or ())[r]]
            )
            for a, b in zip(hosts, [*hosts[1:], hosts[0]], strict=True):
                for lk in self.route.get((a, b, r), ()):
                    rate = min(rate, lk.gbps)
            per_rail.append(rate)
        network = used * min(per_rail) / 8.0 * NCCL_EFFICIENCY if per_rail else 0.0
        busbw = min(network, min(self._gpu(h) for h in hosts))
        n = len(hosts) * self.gpus_per_node
        return _result(
            f"{SIMULATED} {len(hosts)} nodes",
            collective,
            hosts,
            self.gpus_per_node,
            busbw,
            bus_factor(collective, n),
        )


__all__ = [
    "FAULT_KINDS",
    "NCCL_EFFICIENCY",
    "NVLINK_BUSBW",
    "SIMULATED",
    "PlantedNode",
    "SimulatedCluster",
    "format_planted",
    "parse_planted",
]
