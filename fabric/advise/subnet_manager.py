"""What is known about the subnet manager and the switches' adaptive routing, and how it is known.

The sources, strongest first:

* **ibdiagnet AR_INFO** (``ibdiagnet2.db_csv``): each switch's own AR state (the ``e`` bit) and the
  service levels AR is on for. Only a run with ``-r`` (routing) fills the table; a run without it
  leaves the table empty, which says nothing.
* **The OpenSM log** (the SM host's ``/var/log/opensm.log``, UFM's ``/opt/ufm/files/log/opensm.log``):
  the ``OpenSM <version>`` line and the last ``<engine> tables configured on all switches`` line,
  which is what configured the switches last. Upstream OpenSM (3.x) has no adaptive routing engine.
* **sminfo** or ibdiagnet's SM_INFO: which port is the master SM (not what it runs).
* **opensm.conf**: what the SM runs at its next start. Never taken for what runs now; it only
  adds the AR service levels (``ar_sl_mask``) once the log shows an AR engine running.

Nothing is inferred beyond that: a field no source gave stays unknown, and AR is *on* or *off* only
when the switches or the SM's own log say so. :class:`Unknown` names what was not learnt, the advice
that waits for it and the commands that would tell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from topology.ibdiag_state import ArState
from topology.model import Fabric, Guid

AR_ENGINES = ("ar_updn", "ar_ftree", "ar_torus", "dfp", "dfp2")
# Where NVIDIA UFM keeps the SM's files (UFM Enterprise user manual, SM configuration).
UFM_OPENSM_LOG = "/opt/ufm/files/log/opensm.log"
UFM_OPENSM_CONF = "/opt/ufm/files/conf/opensm/opensm.conf"
OPENSM_LOG = "/var/log/opensm.log"
OPENSM_CONF = "/etc/opensm/opensm.conf"


@dataclass(frozen=True, slots=True)
class SwitchAr:
    """Per-switch AR state as one ibdiagnet run read it (AR_INFO)."""

    source: str  # "ibdiagnet AR_INFO (<path>)"
    states: Mapping[Guid, ArState]
    table_present: bool = True  # the run had an AR_INFO table (possibly with no rows)


@dataclass(frozen=True, slots=True)
class SubnetManager:
    """What could be learnt about the master SM; every field may be unknown (None).

    ``engine`` is the engine the SM's log says last configured the switches (what runs now);
    ``conf`` is opensm.conf as read (what the SM would run at its next start). ``sources`` says
    where each known thing came from: ``master`` (lid, guid, state), ``version``, ``engine``, ``conf``.
    """

    lid: int | None = None
    guid: str | None = None
    state: str | None = None
    version: str | None = None
    engine: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    switches: SwitchAr | None = None

    @property
    def vendor(self) -> str:
        """``nvidia`` (MLNX/UFM OpenSM: has AR), ``upstream`` (linux-rdma: no AR) or ``unknown``."""
        v = (self.version or "").upper()
        if "MLNX" in v or "UFM" in v or (self.engine or "").startswith(AR_ENGINES):
            return "nvidia"
        if self.version and re.match(r"3\.", self.version):
            return "upstream"
        return "unknown"

    @property
    def ar_sls_configured(self) -> tuple[int, ...] | None:
        """The SLs opensm.conf's ``ar_sl_mask`` enables AR for (None: not configured there)."""
        mask = self.conf.get("ar_sl_mask")
        if not mask:
            return None
        try:
            value = int(mask, 0)
        except ValueError:
            return None
        return tuple(sl for sl in range(16) if value >> sl & 1)

    def source_of(self, what: str) -> str:
        return self.sources.get(what, "given")

    def to_dict(self) -> dict[str, object]:
        return {
            "lid": self.lid,
            "guid": self.guid,
            "state": self.state,
            "version": self.version,
            "vendor": self.vendor,
            "engine": self.engine,
            "conf": dict(self.conf),
            "notes": list(self.notes),
            "sources": dict(self.sources),
            "switch_ar_source": self.switches.source if self.switches else None,
            "switch_ar_reported": len(self.switches.states) if self.switches else 0,
        }


class Ar(StrEnum):
    ON = "on"
    OFF = "off"
    MIXED = "mixed"  # on on some switches, off on others
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ArVerdict:
    """Whether the fabric routes adaptively, with the facts (and their sources) that say so."""

    state: Ar
    how: tuple[str, ...]  # each fact with where it came from
    sls: tuple[int, ...] | None = None  # SLs AR is on for (on every switch running AR); None: not known
    all_sls: bool = False  # AR on for every SL (no per-SL mask)
    off: tuple[Guid, ...] = ()  # switches that report AR off (MIXED)
    unreported: int = 0  # switches of the fabric the AR source did not report

    @property
    def text(self) -> str:
        if self.state is Ar.ON:
            where = "all SLs" if self.all_sls else f"SL {','.join(map(str, self.sls))}" if self.sls else None
            return "AR on" + (f" for {where}" if where else "")
        return f"AR {self.state.value}"

    def to_dict(self) -> dict[str, object]:
        return {
            "state": self.state.value,
            "how": list(self.how),
            "sls": None if self.sls is None else list(self.sls),
            "all_sls": self.all_sls,
            "off_switches": list(self.off),
            "unreported_switches": self.unreported,
        }


@dataclass(frozen=True, slots=True)
class Unknown:
    """Something the advice needs and no source told: what waits for it and how to learn it."""

    what: str
    waits: str  # the advice held back until it is known
    commands: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {"what": self.what, "waits": self.waits, "commands": list(self.commands)}


def _sl_set(st: ArState) -> frozenset[int] | None:
    """The SLs AR is on for on one switch; None: every SL."""
    if st.by_sl and st.sls is not None:
        return frozenset(st.sls)
    return None


def _from_switches(sw: SwitchAr, switches: list[Guid]) -> ArVerdict | None:
    """The verdict of the switches themselves, or None when they do not settle it."""
    reported = {g: sw.states[g] for g in switches if g in sw.states and sw.states[g].enabled is not None}
    missing = len(switches) - len(reported)
    if not reported:
        return None
    on = sorted(g for g, st in reported.items() if st.enabled)
    off = sorted(g for g, st in reported.items() if not st.enabled)
    counted = f"{len(reported)} of {len(switches)} switches reported" + (
        f", {missing} not" if missing else ""
    )
    if on and off:
        how = f"{sw.source}: AR on on {len(on)} switches, off on {len(off)} ({counted})"
        return ArVerdict(Ar.MIXED, (how,), off=tuple(off), unreported=missing)
    if off:
        if missing:  # off where reported, unknown elsewhere: not settled
            return None
        return ArVerdict(Ar.OFF, (f"{sw.source}: AR off on every switch ({counted})",))
    sets = [_sl_set(reported[g]) for g in on]
    masked = [s for s in sets if s is not None]
    all_sls = not masked
    sls: tuple[int, ...] | None = None
    if masked:
        common = frozenset.intersection(*masked)
        sls = tuple(sorted(common))
    where = "all SLs" if all_sls else f"SL {','.join(map(str, sls or ())) or 'none in common'}"
    how = f"{sw.source}: AR on for {where} on {len(on)} switches ({counted})"
    return ArVerdict(Ar.ON, (how,), sls, all_sls, unreported=missing)


def ar_verdict(sm: SubnetManager, fabric: Fabric) -> ArVerdict:
    """AR on/off/mixed/unknown from the switches (AR_INFO), else from what the SM's log says runs."""
    notes: list[str] = []
    switches = sorted(n.guid for n in fabric.switches())
    if sm.switches is not None:
        v = _from_switches(sm.switches, switches)
        if v is not None:  # what the switches do is what counts; the SM's log only adds to it
            extra = (
                (f"{sm.source_of('engine')}: {sm.engine} configured the switches last",) if sm.engine else ()
            )
            return ArVerdict(v.state, (*v.how, *extra), v.sls, v.all_sls, v.off, v.unreported)
        if not sm.switches.states:
            why = "has no rows" if sm.switches.table_present else "is missing"
            notes.append(f"{sm.switches.source} {why}: that run did not read AR (ibdiagnet -r reads it)")
        else:
            notes.append(f"{sm.switches.source}: AR off where reported, but not every switch is reported")
    if sm.engine:
        src = sm.source_of("engine")
        if sm.engine.startswith(AR_ENGINES):
            conf_sls = sm.ar_sls_configured
            how = [f"{src}: {sm.engine} (an AR engine) configured the switches last"]
            if conf_sls is not None:
                how.append(f"{sm.source_of('conf')}: ar_sl_mask {sm.conf.get('ar_sl_mask')}")
            return ArVerdict(Ar.ON, (*notes, *how), conf_sls, conf_sls is not None and len(conf_sls) == 16)
        return ArVerdict(
            Ar.OFF, (*notes, f"{src}: {sm.engine} (a static engine) configured the switches last")
        )
    if sm.vendor == "upstream":
        return ArVerdict(
            Ar.OFF,
            (*notes, f"{sm.source_of('version')}: OpenSM {sm.version} (upstream, which has no AR engine)"),
        )
    if sm.conf.get("routing_engine"):
        notes.append(
            f"{sm.source_of('conf')}: routing_engine {sm.conf['routing_engine']} is configured "
            "(what the SM runs at its next start, not necessarily now)"
        )
    return ArVerdict(Ar.UNKNOWN, tuple(notes))


# -- how to learn what is unknown -----------------------------------------------------------------
def learn_ar() -> tuple[str, ...]:
    return (
        "ibdiagnet -r -o /var/tmp/ibdiagnet2 && ibfab recommend --ibdiagnet /var/tmp/ibdiagnet2"
        "   # every switch's AR state (AR_INFO)",
        f"grep -E 'OpenSM [0-9]|tables configured on all switches' {OPENSM_LOG}"
        f"   # on the SM host (UFM: {UFM_OPENSM_LOG}); or give it: ibfab recommend --opensm-log FILE",
        "curl -k -u <user>:<password> 'https://<ufm-host>/ufmRest/app/smconf?param_name=routing_engine_active'"
        "   # the engine UFM's SM runs",
    )


def learn_version() -> tuple[str, ...]:
    return (
        "opensm --version   # on the SM host",
        f"grep -E 'OpenSM [0-9]' {OPENSM_LOG}   # (UFM: {UFM_OPENSM_LOG}); or ibfab recommend --opensm-log FILE",
    )


def learn_engine() -> tuple[str, ...]:
    return (
        f"grep 'tables configured on all switches' {OPENSM_LOG} | tail -1"
        "   # on the SM host; or ibfab recommend --opensm-log FILE",
    )
