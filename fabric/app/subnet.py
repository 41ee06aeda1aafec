"""What this machine can learn about the master subnet manager: ``sminfo`` on the fabric, and
the OpenSM log and config where they are readable. Every field it cannot learn stays unknown."""

from __future__ import annotations

from pathlib import Path

from fabric.advise.routing_advice import SubnetManager
from fabric.app.source import Source, run_tool
from probes.opensm import parse_opensm_conf, parse_opensm_log, parse_sminfo
from topology.errors import IbfabError


def probe_subnet_manager(
    lab: str | None = None, log_path: str | None = None, conf_path: str | None = None
) -> SubnetManager:
    """Ask the fabric (``sminfo``) and read the SM's log/config where this machine can see them."""
    notes: list[str] = []
    sm = None
    if lab is not None:
        from fabric import lab as labmod

        log_path = log_path or labmod.opensm_log(lab)
    try:
        out = run_tool(Source("lab", lab) if lab is not None else Source("local"), ["sminfo"], 20).stdout
        sm = parse_sminfo(out)
    except IbfabError as exc:
        notes.append(f"sminfo: {exc.one_line()}")
    version = engine = None
    paths = [log_path] if log_path else ["/var/log/opensm.log"]
    for p in paths:
        try:
            version, engine = parse_opensm_log(Path(p).read_text(errors="replace"))
        except OSError as exc:
            notes.append(f"{p}: {exc.strerror or exc}")
    conf: dict[str, str] = {}
    for p in [conf_path] if conf_path else ["/etc/opensm/opensm.conf"]:
        try:
            conf = parse_opensm_conf(Path(p).read_text(errors="replace"))
        except OSError:
            if conf_path:
                notes.append(f"{p}: not readable")
    engine = engine or conf.get("routing_engine")
    return SubnetManager(
        sm[0] if sm else None,
        sm[1] if sm else None,
        sm[2] if sm else None,
        version,
        engine,
        conf,
        tuple(notes),
    )
