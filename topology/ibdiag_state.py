"""Switch and port state from ``ibdiagnet2.db_csv``: adaptive routing (AR_INFO), the FEC mode
each port runs (FEC_MODE), temperatures (TEMP_SENSING) and the subnet managers (SM_INFO).

Only what the run reported is kept: a switch missing from AR_INFO has *unknown* AR state (a run
with no AR rows says nothing about AR), never "off". Values the tool could not read (``N/A``)
are None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from topology.ibdiag_csv import Section, db_csv_sections, optional_int
from topology.model import Guid, PortRef, normalise_guid

# FECActv codes. 0-3 are the InfiniBand PortInfo codes; 4 and 14 are the ones the real NDR run in
# the real run in tests/data/realdata shows, named as the same run's ibdiagnet2.net_dump names them.
FEC_NAMES: Mapping[int, str] = MappingProxyType(
    {
        0: "NO-FEC",
        1: "FIRECODE",
        2: "RS_FEC_528_514",
        3: "LL_RS_FEC_271_257",
        4: "RS_FEC_544_514",
        14: "MLNX_RS_271_257_PLR",
    }
)
_FEC_NOT_APPLICABLE = 255


@dataclass(frozen=True, slots=True)
class ArState:
    """A switch's adaptive routing as AR_INFO reports it."""

    guid: Guid
    enabled: bool | None  # the 'e' bit
    by_sl: bool | None  # AR enabled per service level (by_sl_en)
    sls: tuple[int, ...] | None  # service levels AR is on for, when by_sl (from enable_by_sl_mask)
    fast_recovery: bool | None  # fr_enabled
    hbf: bool | None  # hash-based forwarding on some SL (by_sl_hbf_en)

    def describe(self) -> str:
        if self.enabled is None:
            return "AR state unknown"
        if not self.enabled:
            return "AR off"
        if self.by_sl and self.sls is not None:
            return f"AR on for SL {','.join(map(str, self.sls)) or 'none'}"
        return "AR on for all SLs"


@dataclass(frozen=True, slots=True)
class PortFec:
    ref: PortRef
    code: int | None
    mode: str | None  # FEC_NAMES, "code N" for one not listed, None when N/A


# SMInfo SMState codes (IBA 14.2.5.13).
SM_STATES: Mapping[int, str] = MappingProxyType(
    {0: "not active", 1: "discovering", 2: "standby", 3: "master"}
)


@dataclass(frozen=True, slots=True)
class SmPort:
    """One subnet manager the run found (SM_INFO)."""

    node: Guid
    port_guid: Guid
    state: str | None  # SM_STATES, None when unreadable
    priority: int | None


@dataclass(frozen=True)
class IbdiagState:
    ar: Mapping[Guid, ArState]  # switches AR_INFO reported; others unknown
    fec: Mapping[PortRef, PortFec]
    temperature: Mapping[Guid, int]  # node -> degrees C (TEMP_SENSING), read values only
    ar_section_present: bool  # AR_INFO was in the run (possibly empty)
    sms: tuple[SmPort, ...] = ()  # SM_INFO rows, in file order

    @property
    def master_sm(self) -> SmPort | None:
        return next((sm for sm in self.sms if sm.state == "master"), None)


def _flag(row: Mapping[str, str], key: str) -> bool | None:
    value = optional_int(row.get(key))
    return None if value is None else bool(value)


def _sls(mask: int | None) -> tuple[int, ...] | None:
    return None if mask is None else tuple(sl for sl in range(16) if mask >> sl & 1)


def _ar(section: Section | None) -> dict[Guid, ArState]:
    out: dict[Guid, ArState] = {}
    for row in section.rows if section else ():
        try:
            guid = normalise_guid(row.get("NodeGUID", ""))
        except ValueError:
            continue
        by_sl = _flag(row, "by_sl_en")
        out[guid] = ArState(
            guid,
            _flag(row, "e"),
            by_sl,
            _sls(optional_int(row.get("enable_by_sl_mask"))) if by_sl else None,
            _flag(row, "fr_enabled"),
            _flag(row, "by_sl_hbf_en"),
        )
    return out


def _fec(section: Section | None) -> dict[PortRef, PortFec]:
    out: dict[PortRef, PortFec] = {}
    for row in section.rows if section else ():
        try:
            guid = normalise_guid(row.get("NodeGuid", ""))
        except ValueError:
            continue
        port = optional_int(row.get("PortNum"))
        if port is None:
            continue
        code = optional_int(row.get("FECActv"))
        mode = None if code is None or code == _FEC_NOT_APPLICABLE else FEC_NAMES.get(code, f"code {code}")
        out[PortRef(guid, port)] = PortFec(PortRef(guid, port), code, mode)
    return out


def _temperatures(section: Section | None) -> dict[Guid, int]:
    out: dict[Guid, int] = {}
    for row in section.rows if section else ():
        value = optional_int(row.get("CurrentTemperature"))
        try:
            guid = normalise_guid(row.get("NodeGUID", ""))
        except ValueError:
            continue
        if value is not None:
            out[guid] = value
    return out


def _sms(section: Section | None) -> tuple[SmPort, ...]:
    out = []
    for row in section.rows if section else ():
        try:
            node = normalise_guid(row.get("NodeGUID", ""))
            port = normalise_guid(row.get("PortGUID", "") or row.get("GUID", ""))
        except ValueError:
            continue
        code = optional_int(row.get("SmState"))
        state = None if code is None else SM_STATES.get(code, f"state {code}")
        out.append(SmPort(node, port, state, optional_int(row.get("Priority"))))
    return tuple(out)


def parse_db_csv_state(text: str, source: str = "<db_csv>") -> IbdiagState:
    # A row of these that is not CSV leaves its switch's or port's state unknown, nothing more.
    sections = db_csv_sections(text, source, ("AR_INFO", "FEC_MODE", "TEMP_SENSING", "SM_INFO"), bad_rows=[])
    return IbdiagState(
        MappingProxyType(_ar(sections.get("AR_INFO"))),
        MappingProxyType(_fec(sections.get("FEC_MODE"))),
        MappingProxyType(_temperatures(sections.get("TEMP_SENSING"))),
        "AR_INFO" in sections,
        _sms(sections.get("SM_INFO")),
    )
