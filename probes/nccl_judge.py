"""A run judged as a whole: what NCCL's log says about its network (findings, each with the lines
that show it), its busbw against the fabric (:mod:`probes.nccl_model`), and whether it failed.

A run is a failed probe, whatever its numbers, when:

* it ran over sockets (``Using network Socket``, or ``NCCL_IB_DISABLE=1`` / ``NCCL_NET=Socket``
  set) across nodes, or where the fabric gives its hosts HCAs: the classic silent
  misconfiguration (a missing driver, a container without /dev/infiniband, a wrong NCCL_IB_HCA);
* NCCL found no IB device on a host the fabric gives HCAs;
* a host opened fewer HCAs than it has rails (or than its ranks, when it runs fewer ranks than it
  has rails: a rail run on one HCA is meant);
* its hosts used different networks;
* nccl-tests itself said it failed (:attr:`NcclTestResult.error`), or its busbw is low.

Reported without failing: the network and HCAs each host used, GPUDirect RDMA off, a network
plugin, the NCCL version (and nccl-tests built against another one), no log to tell the network.
Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from probes.nccl_env import Evidence, HostNetwork, NcclEnvironment
from probes.nccl_json import nccl_version_name
from probes.nccl_model import BusbwVerdict, FabricFacts, judge_busbw
from probes.nccl_parse import NcclTestResult

FAILING = frozenset({"socket", "no_ib_device", "fewer_hcas", "mixed_networks", "sockets_configured"})


@dataclass(frozen=True, slots=True)
class TransportFinding:
    """One fact about a run's network, for the hosts it holds on, with the lines that show it.

    ``kind``: network, socket, no_ib_device, fewer_hcas, mixed_networks, sockets_configured,
    gdr_off, plugin, network_unknown, nccl_version.
    """

    kind: str
    failed: bool
    hosts: tuple[str, ...]
    network: str | None = None
    opened: tuple[str, ...] = ()  # HCA ports NCCL opened ('mlx5_0:1/IB')
    expected: int | None = None  # HCAs it should have opened (the host's rails, or its ranks)
    missing: tuple[str, ...] = ()  # the fabric's HCAs it did not open
    value: str | None = None  # a setting's or the version's text
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True, slots=True)
class NcclJudgement:
    result: NcclTestResult
    findings: tuple[TransportFinding, ...]
    busbw: BusbwVerdict

    @property
    def failed(self) -> bool:
        return not self.result.ok or any(f.failed for f in self.findings) or self.busbw.failed


def _evidence(h: HostNetwork, *words: str) -> tuple[Evidence, ...]:
    return tuple(e for e in h.evidence if any(w in e.text for w in words))


def _group(items: Sequence[tuple[tuple[object, ...], str]]) -> dict[tuple[object, ...], list[str]]:
    out: dict[tuple[object, ...], list[str]] = {}
    for key, host in items:
        out.setdefault(key, []).append(host)
    return out


def transport_findings(
    result: NcclTestResult,
    facts: FabricFacts | None = None,
    *,
    expect_ib: bool | None = None,
    hosts: Sequence[str] | None = None,
) -> list[TransportFinding]:
    """The network findings of a run (see the module docstring). ``expect_ib`` says IB was meant;
    unset, IB is expected on the hosts the fabric gives HCAs."""
    env: NcclEnvironment = result.environment
    run_hosts = list(hosts or result.hosts or [h.host for h in env.hosts])
    multi = len(run_hosts) > 1 or (env.nodes or 0) > 1

    def ib_expected(host: str) -> bool:
        if expect_ib is not None:
            return expect_ib
        return facts is not None and bool(facts.rails(host))

    out: list[TransportFinding] = []
    settings = dict(env.settings)
    if settings.get("NCCL_IB_DISABLE", "").strip() == "1" or settings.get("NCCL_NET", "").lower() == "socket":
        name = "NCCL_IB_DISABLE" if settings.get("NCCL_IB_DISABLE", "").strip() == "1" else "NCCL_NET"
        ev = tuple(e for e in env.settings_evidence if name in e.text)
        out.append(
            TransportFinding(
                "sockets_configured",
                multi or any(ib_expected(h) for h in run_hosts),
                tuple(run_hosts),
                "Socket",
                value=f"{name}={settings[name]}",
                evidence=ev,
            )
        )
    if not env.hosts:
        out.append(TransportFinding("network_unknown", False, tuple(run_hosts), value=result.form))
    by_network = _group([((h.network or "",), h.host) for h in env.hosts])
    if multi and len([k for k in by_network if k[0]]) > 1:
        ev = tuple(e for h in env.hosts for e in _evidence(h, "Using network")[:1])
        out.append(
            TransportFinding(
                "mixed_networks",
                True,
                tuple(h.host for h in env.hosts),
                ", ".join(str(k[0]) for k in by_network),
                evidence=ev,
            )
        )
    for h in env.hosts:
        socket = h.network == "Socket" or (h.network is None and h.no_ib_device and bool(h.socket_interfaces))
        if socket:
            fail = multi or ib_expected(h.host)
            out.append(
                TransportFinding(
                    "socket", fail, (h.host,), "Socket", opened=h.socket_interfaces,
                    evidence=_evidence(h, "No device found", "Using network", "NET/Socket"),
                )
            )  # fmt: skip
        elif h.no_ib_device:
            out.append(
                TransportFinding(
                    "no_ib_device",
                    ib_expected(h.host),
                    (h.host,),
                    h.network,
                    evidence=_evidence(h, "No device found"),
                )
            )
        if h.plugin:
            out.append(
                TransportFinding(
                    "plugin", False, (h.host,), h.network, value=h.plugin, evidence=_evidence(h, "plugin")
                )
            )
    per_host = result.ranks_per_host
    groups = _group(
        [
            ((h.network or "", tuple(x.label for x in h.hcas or ()), h.gdr), h.host)
            for h in env.hosts
            if h.hcas
        ]
    )
    for key, group in groups.items():
        first = next(h for h in env.hosts if h.host == group[0])
        out.append(
            TransportFinding(
                "network", False, tuple(group), first.network, tuple(x.label for x in first.hcas or ()),
                evidence=_evidence(first, "Using network", "NET/IB : Using"),
            )
        )  # fmt: skip
        del key
    for h in env.hosts:
        if not h.hcas and not h.no_ib_device:
            continue
        rails = facts.rails(h.host) if facts is not None else None
        if not rails or h.network == "Socket":
            continue
        ib = [x for x in h.hcas or () if x.link == "IB"]
        expected = min(rails, per_host) if per_host else rails
        if len(ib) < expected:
            names = {x.name for x in ib}
            known = facts.of(h.host) if facts is not None else None
            missing = tuple(x.name for x in known or () if x.name and x.name not in names)
            hca_setting = tuple(e for e in env.settings_evidence if "NCCL_IB_HCA" in e.text)
            out.append(
                TransportFinding(
                    "fewer_hcas", True, (h.host,), h.network, tuple(x.label for x in ib), expected, missing,
                    settings.get("NCCL_IB_HCA"), _evidence(h, "NET/IB : Using") + hca_setting,
                )
            )  # fmt: skip
    off = [h for h in env.hosts if h.gdr is False and h.network not in (None, "Socket")]
    if off:
        out.append(
            TransportFinding(
                "gdr_off",
                False,
                tuple(h.host for h in off),
                off[0].network,
                evidence=_evidence(off[0], "via NET/"),
            )
        )
    version = result.nccl_version or env.nccl_version
    if version or result.nccl_library:
        value = version or nccl_version_name(result.nccl_library or 0)
        if result.nccl_headers and result.nccl_library and result.nccl_headers != result.nccl_library:
            value += f" (nccl-tests built against {result.nccl_headers}, running {result.nccl_library})"
        out.append(TransportFinding("nccl_version", False, (), value=value))
    return _merge_fewer(out)


def _merge_fewer(findings: list[TransportFinding]) -> list[TransportFinding]:
    """One fewer_hcas finding per (opened, missing) with all its hosts: 64 hosts, one line."""
    out: list[TransportFinding] = []
    seen: dict[tuple[object, ...], int] = {}
    for f in findings:
        if f.kind not in ("fewer_hcas", "socket", "no_ib_device"):
            out.append(f)
            continue
        key = (f.kind, f.failed, f.opened, f.missing, f.expected)
        if key in seen:
            prev = out[seen[key]]
            out[seen[key]] = TransportFinding(
                prev.kind, prev.failed, prev.hosts + f.hosts, prev.network, prev.opened, prev.expected,
                prev.missing, prev.value, prev.evidence,
            )  # fmt: skip
        else:
            seen[key] = len(out)
            out.append(f)
    return out


def judge_run(
    result: NcclTestResult,
    facts: FabricFacts | None = None,
    *,
    expect_ib: bool | None = None,
    collective: str | None = None,
    hosts: Sequence[str] | None = None,
    nranks: int | None = None,
) -> NcclJudgement:
    """Findings and the busbw verdict of one run (see the module docstring)."""
    findings = transport_findings(result, facts, expect_ib=expect_ib, hosts=hosts)
    verdict = judge_busbw(result, facts, collective=collective, hosts=hosts, nranks=nranks)
    return NcclJudgement(result, tuple(findings), verdict)


__all__ = ["FAILING", "NcclJudgement", "TransportFinding", "judge_run", "transport_findings"]
