"""The routes room: forwarding tables read from every source, stored beside their topology
snapshot, judged (``ibfab routes``, ``ibfab routes check``).

* :mod:`fabric.app.routes.tables`: where the tables come from (a file, dump_fts where tools run,
  an ibdiagnet run, a stored snapshot);
* :mod:`fabric.app.routes.lanes`: the SL2VL tables and the SM's path records (files, or live);
* :mod:`fabric.app.routes.check`: judging them with the health flags, isolations and the SM's
  word; storing them with their topology snapshot.

The analysis is pure and lives in topology (lft, sl2vl, route_walk, route_checks, credit_loops,
credit_loops_vl, route_balance, route_engine); the words are fabric.present.routes'.
"""

from __future__ import annotations

from fabric.app.routes.check import RoutesCheck, check_routes_of, save_routes, sm_routing, tables_summary
from fabric.app.routes.lanes import lanes_summary, read_lanes, stored_lanes
from fabric.app.routes.tables import TablesRead, read_tables, stored_tables

__all__ = [
    "RoutesCheck",
    "TablesRead",
    "check_routes_of",
    "lanes_summary",
    "read_lanes",
    "read_tables",
    "save_routes",
    "sm_routing",
    "stored_lanes",
    "stored_tables",
    "tables_summary",
]
