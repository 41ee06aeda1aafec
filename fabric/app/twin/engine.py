"""The site's routing engine for its twin: the evidence read (the SM's log, opensm.conf, an ibdiagnet
run's AR state) and judged by :func:`fabric.advise.twin_engine.choose_engine`."""

from __future__ import annotations

from fabric.advise.twin_engine import EngineChoice, choose_engine
from probes.opensm import parse_opensm_conf, parse_routing_log
from topology.textfile import input_lines, read_input_text

_MAX_CONF_BYTES = 16 << 20


def site_engine(
    engine: str | None = None,
    *,
    sm_log: str | None = None,
    sm_conf: str | None = None,
    ibdiagnet: str | None = None,
) -> EngineChoice:
    """The engine the twin runs: ``engine`` (the operator's), else what the evidence says."""
    log_engine = None
    failed: tuple[str, ...] = ()
    if sm_log is not None:
        _, log_engine, failed = parse_routing_log(input_lines(sm_log, "opensm log"))
    conf_engine = None
    if sm_conf is not None:
        conf = parse_opensm_conf(read_input_text(sm_conf, "opensm.conf", max_bytes=_MAX_CONF_BYTES))
        conf_engine = conf.get("routing_engine")
    switch_ar = None
    ar_source = ""
    if ibdiagnet is not None:
        from fabric.app.discovery.ibdiagnet import ibdiagnet_state

        st, db_csv = ibdiagnet_state(ibdiagnet)
        known = [a.enabled for a in st.ar.values() if a.enabled is not None]
        if st.ar_section_present and known:
            on = sum(known)
            switch_ar = "on" if on == len(known) else "mixed" if on else "off"
            ar_source = f"ibdiagnet AR_INFO ({db_csv})"
    return choose_engine(
        engine,
        log_engine=log_engine,
        log_failed=failed,
        log_source=sm_log or "",
        conf_engine=conf_engine,
        conf_source=sm_conf or "",
        switch_ar=switch_ar,
        ar_source=ar_source,
    )
