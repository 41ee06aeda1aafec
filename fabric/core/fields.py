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


# The counter table: how samples travel between parsers, the store and health scoring.
# A pandas DataFrame (long by sample, wide by counter), one row per (snapshot, port):
#   snapshot  int      id of the fabric-wide collection the sample belongs to
#   time      float    seconds since the epoch when the port was read
#   guid      str      normalised node GUID (topology.model.normalise_guid)
#   port      int      port number
#   lid       Int64    LID the port answered on (NA if unknown)
#   peer_guid str|None the far end of the cable at collection time (None if not cabled/known)
#   peer_port Int64
#   reachable bool     False when the port did not answer this time (counters NA)
#   <one column per COUNTER_NAMES entry>  Int64, NA when not read
# A value equal to max_value(name) means the counter is saturated: the true count is at least that.
FRAME_KEY_COLUMNS: tuple[str, ...] = (
    "snapshot",
    "time",
    "guid",
    "port",
    "lid",
    "peer_guid",
    "peer_port",
    "reachable",
)
FRAME_COLUMNS: tuple[str, ...] = FRAME_KEY_COLUMNS + COUNTER_NAMES

# One stored row of a port in a counter snapshot, in this order (the store's port_counters table).
PORT_COUNTER_FIELDS: tuple[str, ...] = (
    "guid",
    "port",
    "lid",
    "peer_guid",
    "peer_port",
    "reachable",
    "unreachable_reason",
    "time",
    *COUNTER_NAMES,
)
