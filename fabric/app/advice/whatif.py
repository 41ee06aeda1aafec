"""``ibfab whatif``: estimated collective bandwidth under a change (ports isolated, cables
degraded, AR on/off), routed by the fabric's forwarding tables when they can be read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from fabric.advise.candidates import resolve_port
from fabric.advise.whatif import RouteFn, Scenario, WhatIf, parse_share, what_if
from fabric.app.discovery.discover import Discovery
from probes.inventory import expand_hosts
from topology.errors import UsageError
from topology.lft import read_lfts
from topology.route_pairs import PairRoutes, bind_tables

if TYPE_CHECKING:
    from probes.driver import FabricDriver


def route_function(d: Discovery, driver: FabricDriver, lft: str | None) -> RouteFn | None:
    """Paths from forwarding tables (``lft``, else the SM's dump the driver knows: a lab's
    OpenSM's); None: spread evenly."""
    if lft is None:
        dump = driver.lft_dump()
        lft = str(dump) if dump is not None else None
    if lft is None:
        return None
    return PairRoutes(bind_tables(d.fabric, read_lfts(lft))).route


def run_whatif(
    d: Discovery,
    scenario: Callable[[Discovery], Scenario],
    driver: FabricDriver,
    hosts: str | None = None,
    lft: str | None = None,
) -> WhatIf:
    """The scenario built on ``d`` for the job's ``hosts`` (a host range; all when None), routed
    by the forwarding tables of ``lft`` or the ones ``driver`` knows. Ports isolated where the
    fabric's twin is up (``ibfab lab up --from``, its engine known): the twin runs the isolation
    and its OpenSM's tables before and after route the pairs, not an estimate."""
    host_list = expand_hosts(hosts, "--hosts") if hosts else None
    built = scenario(d)
    if built.isolate and lft is None:
        from fabric.app.twin.whatif import twin_routes

        routed = twin_routes(d, built.isolate)
        if routed is not None:
            before, after, where = routed
            return what_if(d.fabric, d.classification, built, host_list, before, after, where)
    return what_if(d.fabric, d.classification, built, host_list, route_function(d, driver, lft))


ScenarioFor = Callable[[Discovery], Scenario]


def isolate_scenario(ports: Sequence[str]) -> ScenarioFor:
    """``NODE:PORT``... isolated."""
    return lambda d: Scenario(isolate=tuple(resolve_port(d.fabric, d.classification, p) for p in ports))


def degrade_scenario(links: Sequence[str]) -> ScenarioFor:
    """``NODE:PORT=SHARE``...: the cable on that port keeps SHARE of its rate (``50%`` or ``0.5``)."""

    def build(d: Discovery) -> Scenario:
        degrade = {}
        for item in links:
            port, sep, share = item.rpartition("=")
            if not sep:
                raise UsageError(f"{item!r}: expected NODE:PORT=SHARE, e.g. leaf-su01-r3:9=50%")
            degrade[resolve_port(d.fabric, d.classification, port)] = parse_share(share)
        return Scenario(degrade=degrade)

    return build


def ar_scenario(on: bool) -> ScenarioFor:
    """Adaptive routing on or off on the fabric as it is."""
    return lambda d: Scenario(ar=on)
