"""``ibfab topology cable NODE/PORT``: one cable, its two ends and the modules in them.

Registered under the ``topology`` group by :mod:`fabric.cli.main`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click

from fabric.cli.options import discover_from, source_options

_PORT = re.compile(r"^(?P<node>.+)[/:](?P<port>\d+)$")


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
    from fabric.advise.candidates import resolve_port
    from fabric.app.cables import cable_detail, read_inventory, stored_inventory
    from fabric.present.cables import render_cable
    from fabric.store import Store, default_db_path
    from topology.errors import UsageError

    m = _PORT.match(port.strip())
    if m is None:
        raise UsageError(f"{port!r}: expected NODE/PORT, e.g. leaf-su01-r0/5 or 0x0c42a10300a00000/5")
    run = opts.get("ibdiagnet_dir")
    d = discover_from(opts, db)
    ref = resolve_port(d.fabric, d.classification, f"{m['node']}:{m['port']}")
    if run:
        inv = read_inventory(run)
    else:
        path = db or str(default_db_path())
        inv = None
        if Path(path).exists():
            with Store.open(path, create=False) as store:
                inv = stored_inventory(store)
    detail = cable_detail(d, ref, inv)
    if as_json:
        click.echo(json.dumps(detail.to_dict(), indent=1))
        return
    click.echo(render_cable(detail))
