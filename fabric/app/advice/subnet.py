"""What can be learnt about the master subnet manager and the switches' adaptive routing, each
thing with where it came from: ``sminfo`` on the fabric (this machine, a lab or an SSH host), the
OpenSM log and config where they are readable (given, or the usual places of OpenSM and UFM on this
machine), and an ibdiagnet run's AR_INFO and SM_INFO. Every field no source gave stays unknown."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from fabric.advise.subnet_manager import (
    OPENSM_CONF,
    OPENSM_LOG,
    UFM_OPENSM_CONF,
    UFM_OPENSM_LOG,
    SubnetManager,
    SwitchAr,
)
from probes.opensm import parse_opensm_conf, parse_opensm_log, parse_sminfo
from topology.errors import IbfabError
from topology.textfile import InputFileError, input_lines, read_input_text

if TYPE_CHECKING:
    from probes.driver import FabricDriver


def _lines(path: str, tool: str, given: bool) -> Iterable[str] | None:
    """The lines of a log at ``path``, read as a stream (a log of gigabytes in the memory of a
    line); None when a usual place is missing, an error when a given one is."""
    try:
        return input_lines(path, tool)
    except InputFileError:
        if given:
            raise
        return None


def _read(path: str, tool: str, given: bool) -> str | None:
    """The text of the config file at ``path`` (bounded: a wrong file is refused); None when a
    usual place is missing, an error when a given one is."""
    try:
        return read_input_text(path, tool, max_bytes=_MAX_CONF_BYTES)
    except InputFileError:
        if given:
            raise
        return None


_MAX_CONF_BYTES = 16 << 20  # opensm.conf is ~40 KB


def learn_subnet_manager(
    sminfo_from: FabricDriver | None = None,
    *,
    log_path: str | None = None,
    conf_path: str | None = None,
    look_locally: bool = False,
    ibdiagnet: str | None = None,
) -> SubnetManager:
    """Ask ``sminfo`` where ``sminfo_from`` runs tools, read the given log/config (or, with
    ``look_locally``, OpenSM's and UFM's usual files on this machine) and the ibdiagnet run."""
    notes: list[str] = []
    sources: dict[str, str] = {}
    lid = guid = state = None
    if sminfo_from is not None:
        try:
            found = parse_sminfo(sminfo_from.run_tool(["sminfo"], 20).stdout)
        except IbfabError as exc:
            notes.append(f"sminfo: {exc.one_line()}")
            found = None
        if found is not None:
            lid, guid, state = found
            where = "" if sminfo_from.here else f" ({sminfo_from.label})"
            sources["master"] = f"sminfo{where}"
    version = engine = None
    logs: Sequence[str] = [log_path] if log_path else [OPENSM_LOG, UFM_OPENSM_LOG] if look_locally else []
    for p in logs:
        lines = _lines(p, "opensm log", bool(log_path))
        if lines is None:
            continue
        version, engine = parse_opensm_log(lines)
        if version:
            sources["version"] = f"OpenSM log {p}"
        if engine:
            sources["engine"] = f"OpenSM log {p}"
        if not (version or engine):
            notes.append(f"OpenSM log {p}: names neither a version nor an engine")
        break
    conf: dict[str, str] = {}
    confs: Sequence[str] = (
        [conf_path] if conf_path else [OPENSM_CONF, UFM_OPENSM_CONF] if look_locally else []
    )
    for p in confs:
        text = _read(p, "opensm.conf", bool(conf_path))
        if text is not None:
            conf = parse_opensm_conf(text)
            sources["conf"] = f"opensm.conf {p}"
            break
    switches = None
    if ibdiagnet is not None:
        from fabric.app.discovery.ibdiagnet import ibdiagnet_state

        st, db_csv = ibdiagnet_state(ibdiagnet)
        switches = SwitchAr(f"ibdiagnet AR_INFO ({db_csv})", st.ar, st.ar_section_present)
        master = st.master_sm
        if master is not None and guid is None:
            guid, state = master.port_guid, "SMINFO_MASTER"
            sources["master"] = f"ibdiagnet SM_INFO ({db_csv})"
    return SubnetManager(lid, guid, state, version, engine, conf, tuple(notes), sources, switches)


def probe_subnet_manager(
    driver: FabricDriver,
    log_path: str | None = None,
    conf_path: str | None = None,
    ibdiagnet: str | None = None,
) -> SubnetManager:
    """The SM of the fabric ``driver`` reaches: ``sminfo`` there and the SM's log/config (the one
    the driver knows, a lab's own OpenSM log; on this machine the given files or the usual places)."""
    return learn_subnet_manager(
        driver,
        log_path=log_path or driver.sm_log(),
        conf_path=conf_path,
        look_locally=driver.here,
        ibdiagnet=ibdiagnet,
    )
