"""``ibfab topology cable NODE/PORT``: one cable, its two ends and the modules in them.

Registered under the ``topology`` group by :mod:`fabric.cli.main`.
"""

from __future__ import annotations

from typing import Any

import click

from fabric.cli.jsonout import write_json
from fabric.cli.options import discover_in, source_options, source_session


@click.command("cable")
@click.argument("port", metavar="NODE/PORT")
@source_options
@click.option("--json", "as_json", is_flag=True, help="Print the cable as JSON.")
def cable_cmd(port: str, as_json: bool, db: str | None, **opts: Any) -> None:
    """One cable: both ends, the module in each (vendor, part number, serial, length, type,
    temperature, RX/TX power per lane), each port's FEC mode and each node's temperature.

    NODE is a name (leaf-su01-r0, 'dgx-0001 mlx5_0'), a GUID or a LID; NODE:PORT works too. The
    module data is the --ibdiagnet run's when one is given, else the newest kept in the store
    ('ibfab counters collect --ibdiagnet DIR')."""
    from fabric.app.discovery.cables import cable_at
    from fabric.present.cables import render_cable

    run = opts.get("ibdiagnet_dir")
    session = source_session(opts, db)
    detail = cable_at(discover_in(session), port, run, session.store)
    if as_json:
        write_json(detail.to_dict())
        return
    click.echo(render_cable(detail))
