"""What NCCL's log says about the network a run used: per host, the network NCCL chose (IB, Socket,
a plugin's), the HCAs and ports it opened, GPUDirect RDMA on or off, and the NCCL_* settings.

Read from the ``NCCL INFO`` lines of ``NCCL_DEBUG=INFO`` (whose default subsystems, INIT, BOOTSTRAP
and ENV, print all of these). Message formats from NCCL v2.28.9-1 (the same wording since 2.4 for
the lines used here): ``init.cc`` ``Using network %s``; ``transport/net_ib.cc`` ``NET/IB : No
device found.`` and ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>``;
``transport/net_socket.cc`` ``NET/Socket : Using [0]eth0:10.0.0.1<0>``; ``transport/net.cc``
``Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA``; ``graph/topo.cc`` ``NET/IB : GPU
Direct RDMA Enabled for HCA 0 'mlx5_0'``; ``plugin/net/net_v*.cc`` ``NET/Plugin: Loaded net plugin
NAME (vN)``; ``misc/param.cc`` ``NCCL_X set by environment to V.``. Pure.

A run's JSON report (``-J``) has no log; its environment list gives the NCCL_* settings only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from probes.nccl_log import NcclLogLine

_USING_NETWORK = re.compile(r"Using network (?P<net>\S.*)")
_NO_IB = re.compile(r"NET/IB ?: No device found")
_IB_USING = re.compile(r"NET/IB ?: Using(?P<list>[^;]*);")
_IB_DEVICE = re.compile(r"\[\d{1,4}\]([^\s:\[\]]+):(\d{1,3})/(IB|RoCE)\b")
_SOCKET_USING = re.compile(r"NET/Socket ?: Using(?P<list>.*)")
_SOCKET_IF = re.compile(r"\[\d+\]([^\s:\[\]]+):")
_PLUGIN = re.compile(
    r"NET/Plugin ?: ?(?:Loaded net plugin|Successfully loaded external network plugin) (?P<name>.+)"
)
_PLUGIN_VERSION = re.compile(r"\s*\(v\d+\)$")
_CHANNEL = re.compile(r"Channel \d+/\d+ : .* via NET/(?P<net>[^/]+)/\d+(?:\(\d+\))?(?P<gdr>/GDRDMA)?")
_GDR_HCA = re.compile(r"NET/[^:]+: GPU Direct RDMA (?P<state>Enabled|Disabled) for HCA")
_GDR_GPU = re.compile(r"GPU Direct RDMA (?P<state>Enabled|Disabled) for GPU")
_VERSION = re.compile(r"NCCL version (?P<v>\S+)")
_COMM = re.compile(
    r"comm 0x[0-9a-fA-F]+ rank \d+ nRanks (?P<ranks>\d{1,7}) nNodes (?P<nodes>\d{1,7}) localRanks (?P<local>\d{1,7})"
)
_SETTING = re.compile(r"(?P<name>NCCL_[A-Z0-9_]+) set (?:by environment )?to (?P<value>\S.*)")
_MAX_VALUE = 200


@dataclass(frozen=True, slots=True)
class Evidence:
    """A line that shows a fact: its number in the output (None from a JSON report) and its text."""

    lineno: int | None
    text: str


@dataclass(frozen=True, slots=True)
class NcclHca:
    """One HCA port NCCL opened: ``mlx5_3`` port 1 over IB (or RoCE)."""

    name: str
    port: int
    link: str

    @property
    def label(self) -> str:
        return f"{self.name}:{self.port}/{self.link}"


@dataclass(frozen=True, slots=True)
class HostNetwork:
    """What NCCL's log says about one host's network."""

    host: str
    network: str | None  # 'Using network X': IB, Socket, or a plugin's name
    hcas: tuple[NcclHca, ...] | None  # 'NET/IB : Using ...' (None when not printed)
    no_ib_device: bool
    socket_interfaces: tuple[str, ...]
    plugin: str | None
    gdr: bool | None  # GPUDirect RDMA on the network channels; None: nothing said
    net_channels: int  # channel connections over the network
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True, slots=True)
class NcclEnvironment:
    """Every host's network and the NCCL_* settings the run reported."""

    hosts: tuple[HostNetwork, ...] = ()
    settings: tuple[tuple[str, str], ...] = ()
    settings_evidence: tuple[Evidence, ...] = ()
    info_lines: int = 0
    nccl_version: str | None = None  # 'NCCL version 2.28.9+cuda13.0' as an INFO line
    nodes: int | None = None  # 'comm ... nRanks 16 nNodes 2 localRanks 8': what NCCL counted
    local_ranks: int | None = None

    @property
    def networks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(h.network for h in self.hosts if h.network))

    def setting(self, name: str) -> str | None:
        return next((v for k, v in self.settings if k == name), None)

    def host(self, name: str) -> HostNetwork | None:
        return next((h for h in self.hosts if h.host == name), None)


@dataclass
class _Host:
    network: str | None = None
    hcas: tuple[NcclHca, ...] | None = None
    no_ib_device: bool = False
    sockets: tuple[str, ...] = ()
    plugin: str | None = None
    gdr_channels: int = 0
    net_channels: int = 0
    gdr_said: list[bool] = field(default_factory=list)
    evidence: dict[str, Evidence] = field(default_factory=dict)


class EnvironmentReader:
    """Collects the facts line by line (a run logs thousands of lines; only the facts are kept)."""

    def __init__(self) -> None:
        self._hosts: dict[str, _Host] = {}
        self._settings: dict[str, str] = {}
        self._settings_evidence: dict[str, Evidence] = {}
        self.info_lines = 0
        self.version: str | None = None
        self.nodes: int | None = None
        self.local_ranks: int | None = None

    def add_setting(self, name: str, value: str, evidence: Evidence) -> None:
        value = value.strip().rstrip(".")[:_MAX_VALUE]
        self._settings.setdefault(name, value)
        self._settings_evidence.setdefault(name, evidence)

    def add(self, log: NcclLogLine, lineno: int | None) -> None:
        if log.level != "INFO":
            return
        self.info_lines += 1
        msg = log.message
        h = self._hosts.setdefault(log.host, _Host())
        said = Evidence(lineno, f"{log.host}:{log.pid} {msg}"[:400])

        def keep(kind: str) -> None:
            h.evidence.setdefault(kind, said)

        if m := _USING_NETWORK.match(msg):
            h.network = m["net"].strip()
            keep("network")
        elif _NO_IB.match(msg):
            h.no_ib_device = True
            keep("no_ib_device")
        elif m := _IB_USING.match(msg):
            found = tuple(NcclHca(n, int(p), link) for n, p, link in _IB_DEVICE.findall(m["list"]))
            if h.hcas is None or len(found) > len(h.hcas):
                h.hcas = found
            keep("hcas")
        elif m := _SOCKET_USING.match(msg):
            h.sockets = h.sockets or tuple(_SOCKET_IF.findall(m["list"]))
            keep("sockets")
        elif m := _PLUGIN.match(msg):
            h.plugin = _PLUGIN_VERSION.sub("", m["name"]).strip()
            keep("plugin")
        elif m := _CHANNEL.match(msg):
            h.net_channels += 1
            if m["gdr"]:
                h.gdr_channels += 1
                keep("gdr")
            else:
                keep("no_gdr")
        elif (m := _GDR_HCA.match(msg)) or (m := _GDR_GPU.match(msg)):
            h.gdr_said.append(m["state"] == "Enabled")
            keep("gdr" if m["state"] == "Enabled" else "no_gdr")
        elif m := _SETTING.match(msg):
            self.add_setting(m["name"], m["value"], said)
        elif m := _VERSION.match(msg):
            self.version = self.version or m["v"]
        elif (m := _COMM.match(msg)) and self.nodes is None:
            self.nodes, self.local_ranks = int(m["nodes"]), int(m["local"])

    def result(self) -> NcclEnvironment:
        hosts = []
        for name, h in self._hosts.items():
            gdr: bool | None = None
            if h.net_channels:
                gdr = h.gdr_channels > 0
            elif h.gdr_said:
                gdr = any(h.gdr_said)
            kinds = ["network", "no_ib_device", "hcas", "sockets", "plugin"]
            kinds += ["gdr"] if gdr else ["no_gdr"] if gdr is False else []
            evidence = tuple(h.evidence[k] for k in kinds if k in h.evidence)
            hosts.append(
                HostNetwork(
                    name,
                    h.network,
                    h.hcas,
                    h.no_ib_device,
                    h.sockets,
                    h.plugin,
                    gdr,
                    h.net_channels,
                    evidence,
                )
            )
        return NcclEnvironment(
            tuple(sorted(hosts, key=lambda x: x.host)),
            tuple(sorted(self._settings.items())),
            tuple(self._settings_evidence[k] for k in sorted(self._settings_evidence)),
            self.info_lines,
            self.version,
            self.nodes,
            self.local_ranks,
        )


def settings_from_env(entries: Iterable[str]) -> list[tuple[str, str]]:
    """The ``NCCL_*`` variables of a process environment (``NAME=value`` strings); nothing else is
    kept (an environment may carry secrets)."""
    out = []
    for entry in entries:
        name, sep, value = entry.partition("=")
        if sep and re.fullmatch(r"NCCL_[A-Z0-9_]{1,64}", name):
            out.append((name, value[:_MAX_VALUE]))
    return out


__all__ = ["EnvironmentReader", "Evidence", "HostNetwork", "NcclEnvironment", "NcclHca", "settings_from_env"]
