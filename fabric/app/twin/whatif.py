"""``ibfab whatif isolate`` on the twin: the SM's own tables before and after, not an estimate."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from fabric.advise.whatif import RouteFn
from fabric.app.discovery.discover import Discovery
from fabric.app.twin.build import running_twin, twin_name
from fabric.app.twin.check import check_isolation
from topology.model import Guid, Link, PortRef
from topology.route_pairs import PairRoutes, bind_tables
from topology.routes import RouteError
from topology.twin_net import topology_key


def _route(routes: PairRoutes, src: Guid, dst: Guid) -> Sequence[Link] | None:
    try:
        return routes.route(src, dst)
    except RouteError:  # the tables leave the pair without a route (the check says so, as a STOP)
        return None


def twin_routes(d: Discovery, ports: Sequence[PortRef]) -> tuple[RouteFn, RouteFn, str] | None:
    """Route functions over the twin's tables before and after isolating ``ports``, with where they
    came from; None when no twin of this very topology is up with a known engine."""
    twin = running_twin(twin_name(d.fabric))
    if twin is None or twin.key != topology_key(d.fabric) or not twin.engine.known:
        return None
    check = check_isolation(d, ports, twin.engine)
    if check.tables_before is None or check.tables_after is None or check.fabric_after is None:
        return None
    before = functools.partial(_route, PairRoutes(bind_tables(d.fabric, check.tables_before)))
    after = functools.partial(_route, PairRoutes(bind_tables(check.fabric_after, check.tables_after)))
    where = f"twin {twin.name} ran it: its OpenSM ({check.after.engine or twin.routing}) re-routed"
    return before, after, where
