"""The port counters ibfab keeps, their canonical names and their widths in bits.

One vocabulary for parsers (perfquery, ibqueryerrors, ibdiagnet), the store, health scoring and
the Prometheus exporter. Widths are those of the PMA attributes: the base error counters are
*sticky* (they saturate at ``2**bits - 1`` and never wrap); data and packet counters are read
from PortCountersExtended (64-bit). ``xmit_data``/``rcv_data`` count 4-byte words.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# canonical name -> (bits, PMA field name as perfquery/ibqueryerrors print it)
COUNTERS: Mapping[str, tuple[int, str]] = MappingProxyType(
    {
        "symbol_errors": (16, "SymbolErrorCounter"),
        "link_error_recovery": (8, "LinkErrorRecoveryCounter"),
        "link_downed": (8, "LinkDownedCounter"),
        "rcv_errors": (16, "PortRcvErrors"),
        "rcv_remote_physical_errors": (16, "PortRcvRemotePhysicalErrors"),
        "rcv_switch_relay_errors": (16, "PortRcvSwitchRelayErrors"),
        "xmit_discards": (16, "PortXmitDiscards"),
        "xmit_constraint_errors": (8, "PortXmitConstraintErrors"),
        "rcv_constraint_errors": (8, "PortRcvConstraintErrors"),
        "local_link_integrity_errors": (4, "LocalLinkIntegrityErrors"),
        "excessive_buffer_overrun_errors": (4, "ExcessiveBufferOverrunErrors"),
        "vl15_dropped": (16, "VL15Dropped"),
        "xmit_wait": (32, "PortXmitWait"),
        "xmit_data": (64, "PortXmitData"),
        "rcv_data": (64, "PortRcvData"),
        "xmit_pkts": (64, "PortXmitPkts"),
        "rcv_pkts": (64, "PortRcvPkts"),
    }
)

COUNTER_NAMES: tuple[str, ...] = tuple(COUNTERS)
ERROR_COUNTERS: tuple[str, ...] = COUNTER_NAMES[:12]
BY_PMA_NAME: Mapping[str, str] = MappingProxyType({pma: name for name, (_, pma) in COUNTERS.items()})


def max_value(name: str) -> int:
    """The value at which ``name`` saturates."""
    return (1 << COUNTERS[name][0]) - 1
