"""Names from NodeDescriptions, in every habit seen on real fabrics.

* **HCAs**: ``host mlx5_3``, ``host HCA-4`` (1-based), ``host/mlx5_3``, ``host ib0``, and netdev
  names made from the PCI address, ``host ibp11s0f0`` / ``host ibs12f1`` / ``host ibP1p11s0f0``:
  those carry no index of their own, so :func:`pci_indexes` numbers a host's adapters in PCI
  order (against the layout most hosts share, so a dead card does not renumber the rest). One
  host written in two cases (``DGX01``, ``dgx01``) is one host (:func:`host_spellings`).
* **Unnamed** HCAs (``localhost``, ``ubuntu``, a bare adapter model such as ``MT4123 ConnectX6
  Mellanox Technologies``) name no host.
* **Switches**: ``MF0;leaf-01:MQM9700/U1`` is ``leaf-01``; a switch with no name of its own (a
  model string, ``switch-<guid digits>``, or a description another switch also has) is shown with
  its GUID and LID so that two of them can be told apart (:func:`switch_display_name`).

>>> parse_hca_description("dgx-0042 mlx5_3")
('dgx-0042', 'mlx5_3', 3)
>>> parse_hca_description("node01/HCA-2")
('node01', 'HCA-2', 1)
>>> pci_key("ibp11s0f1")
(0, 0, 11, 0, 1, 0)
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping

from topology.model import Guid, Node

_ADAPTER = re.compile(
    r"^(?:(mlx\d+|hfi\d+|qib|bnxt_re|irdma|mthca|ocrdma|efa|erdma)_?(\d+)|HCA-(\d+)|ib(\d+)"
    r"|(ib\S+|rocep\S+|roce\S+))$"
)
# systemd's predictable netdev names for IB ports: [P<domain>]p<bus>s<slot>[f<function>] or
# s<slot>[f<function>], with an optional n<port name> or d<dev port> suffix.
_PCI_NAME = re.compile(
    r"^ib(?:(?:P(\d+))?p(\d+)s(\d+)|s(\d+))(?:f(\d+))?(?:d(\d+)|n\S+)?$",
)
_UNNAMED_HOSTS = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "ubuntu",
        "debian",
        "centos",
        "rhel",
        "rocky",
        "linux",
        "(none)",
        "none",
    }
)
_ADAPTER_MODEL = re.compile(r"^(?:MT\d+|ConnectX|InfiniHost|Mellanox|MCX|BlueField)", re.IGNORECASE)
# MF0;<name>:<model>[/<board>...]/U<n>: the board (L01, S03) tells a director's chips apart.
_SWITCH_NAME = re.compile(r"^MF0;([^:]+):[^/]*((?:/[^/]+)*?)(?:/U\d+)?\s*$")
# Switch descriptions that are a model or a default rather than a name someone gave.
_DEFAULT_SWITCH = re.compile(
    r"\b(?:Mellanox|Voltaire|QLogic|Technologies|Infiniscale\S*|localhost)\b"
    r"|^(?:Sun|switch-[0-9a-f]{4,}$|MT\d+|Quantum|SwitchX|SwitchIB|Spectrum)"
)
_HOST_SEPARATORS = ("/", ":")

PciKey = tuple[int, ...]


def parse_hca_description(desc: str) -> tuple[str | None, str | None, int | None]:
    """(host, adapter, index) from an HCA NodeDescription; host None when it names no host.
    Index None when the adapter name carries none (``ibp11s0f0``: see :func:`pci_indexes`)."""
    tokens = desc.split()
    if not tokens:
        return None, None, None
    if len(tokens) == 1:
        # "host/mlx5_0", "host:HCA-1": one word, host and adapter joined.
        for sep in _HOST_SEPARATORS:
            before, found_sep, after = tokens[0].rpartition(sep)
            if found_sep and before and adapter_index(after) is not None:
                tokens = [before, after]
                break
    adapter = index = None
    host_tokens = tokens
    found = adapter_index(tokens[-1]) if len(tokens) >= 2 else None
    if found is not None:
        adapter, index = tokens[-1], found[0]
        host_tokens = tokens[:-1]
    if len(host_tokens) != 1:
        return None, adapter, index
    host = host_tokens[0]
    if _names_no_host(host):
        return None, adapter, index
    return host, adapter, index


# Cached: a fabric has a handful of adapter names (mlx5_0..mlx5_7) and each host name repeats
# once per HCA of the host.
@functools.lru_cache(maxsize=4096)
def adapter_index(token: str) -> tuple[int | None] | None:
    """``(index,)`` when ``token`` names an adapter (``mlx5_3`` -> 3, ``HCA-1`` -> 0, ``ib1`` -> 1),
    ``(None,)`` for an adapter name without an index (``ibp11s0f0``), else None."""
    m = _ADAPTER.match(token)
    if m is None:
        return None
    if m.group(2) is not None:
        return (int(m.group(2)),)
    if m.group(3) is not None:
        return (int(m.group(3)) - 1,)
    if m.group(4) is not None:
        return (int(m.group(4)),)
    return (None,)


@functools.lru_cache(maxsize=65536)
def _names_no_host(word: str) -> bool:
    return word.lower() in _UNNAMED_HOSTS or _ADAPTER_MODEL.match(word) is not None


@functools.lru_cache(maxsize=4096)
def pci_key(adapter: str) -> PciKey | None:
    """A sort key of the PCI address in a netdev name (``ibp11s0f1``), None for other names.
    Bus-addressed names sort before slot-addressed ones (a host uses one scheme)."""
    m = _PCI_NAME.match(adapter)
    if m is None:
        return None
    domain, bus, slot, only_slot, function, dev_port = (int(x) if x else 0 for x in m.groups())
    if m.group(4) is not None:
        return (1, 0, 0, only_slot, function, dev_port)
    return (0, domain, bus, slot, function, dev_port)


def pci_indexes(adapters: Mapping[str, Mapping[Guid, PciKey]]) -> dict[Guid, int]:
    """HCA index of each PCI-named adapter: its place, in PCI order, in its host's layout.

    A host's layout is the largest set of PCI addresses that contains its own and that at least
    two hosts have (or its own): a host whose card at bus 0x21 is dead keeps its other cards'
    indexes, and hosts of another model number their own layout.
    """
    own = {host: frozenset(keys.values()) for host, keys in adapters.items()}
    counts = Counter(own.values())
    common = sorted((s for s, n in counts.items() if n >= 2), key=lambda s: (-len(s), -counts[s]))
    out: dict[Guid, int] = {}
    for host, keys in adapters.items():
        mine = own[host]
        layout = next((s for s in common if mine <= s), mine)
        order = {key: i for i, key in enumerate(sorted(layout))}
        for guid, key in keys.items():
            out[guid] = order[key]
    return out


def host_spellings(names: Iterable[str]) -> dict[str, str]:
    """Each host spelling -> the one spelling of that host: host names are not case sensitive,
    so ``DGX01`` and ``dgx01`` are one host, written as most of its HCAs write it."""
    seen = Counter(names)
    by_key: dict[str, list[str]] = {}
    for name in seen:
        by_key.setdefault(name.lower(), []).append(name)
    out: dict[str, str] = {}
    for spellings in by_key.values():
        chosen = min(spellings, key=lambda s: (-seen[s], s))
        for s in spellings:
            out[s] = chosen
    return out


def switch_name(desc: str) -> str:
    """``MF0;leaf-su01-r3:MQM9700/U1`` -> ``leaf-su01-r3``; a director's chip keeps its board
    (``MF0;ib1:MCS8500/L01/U1`` -> ``ib1/L01``); other descriptions unchanged."""
    m = _SWITCH_NAME.match(desc)
    if m is None:
        return desc.strip()
    return m.group(1) + m.group(2)


def has_own_name(name: str) -> bool:
    """False for a name that is a model string or a default (``Quantum-2 Mellanox Technologies``,
    ``switch-de779e``, ``MT43132 Mellanox Technologies``): nobody named that switch."""
    return bool(name) and _DEFAULT_SWITCH.search(name) is None


def switch_display_name(node: Node, shared: bool = False) -> str:
    """The switch's name, with its GUID and LID when the name does not tell it apart: no name of
    its own, or ``shared`` (another switch has the same description)."""
    name = switch_name(node.description)
    if name and has_own_name(name) and not shared:
        return name
    lid = f", lid {node.lid}" if node.lid is not None else ""
    return f"{name or 'switch'} ({node.guid}{lid})"
