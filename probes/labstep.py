"""The lab's simulated traffic as a command a scheduler can launch on a node (a Slurm job step).

No RDMA runs here, so a lab sweep through Slurm launches this in place of ``ib_write_bw``: the
sweep writes each round (its probes, their routes, the ports' drop rates read from the ibsim
console) to a round file on a filesystem the nodes share; the client step computes the whole
round with :func:`probes.labtraffic.simulate_round` and prints its own pair's record as one JSON
line, marked ``lab-simulated`` and naming the node it ran on; the server step only says it is
ready and waits to be cancelled, like an ``ib_write_bw`` server. Everything else about the sweep
(allocation, steps, gathering, re-tests, localization) is the real thing.

    python -m probes.labstep client ROUND_FILE CLIENT_GUID SERVER_GUID
    python -m probes.labstep serve SECONDS
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from probes.labtraffic import BACKEND, PortKey, simulate_round
from probes.pairs import Endpoint, Probe
from topology.errors import IbfabError, ParseError
from topology.model import Guid, Link, PortRef

FORMAT = "ibfab-labstep/1"


def _ep(e: Endpoint) -> dict[str, Any]:
    return {"host": e.host, "device": e.device, "guid": e.guid, "leaf": e.leaf, "rail": e.rail}


def _link(lk: Link) -> list[Any]:
    return [lk.a.guid, lk.a.port, lk.b.guid, lk.b.port, lk.width, lk.speed]


def round_document(
    probes: Sequence[Probe],
    paths: Mapping[tuple[Guid, Guid], Sequence[Link]],
    error_rates: Mapping[PortKey, int],
    attempt: int,
) -> dict[str, Any]:
    """What a client step needs to compute its round (JSON-ready)."""
    return {
        "format": FORMAT,
        "attempt": attempt,
        "probes": [{"client": _ep(p.client), "server": _ep(p.server), "round": p.round} for p in probes],
        "paths": [
            [
                p.client.guid,
                p.server.guid,
                [_link(lk) for lk in paths.get((p.client.guid, p.server.guid), ())],
            ]
            for p in probes
        ],
        "error_rates": [[g, port, pct] for (g, port), pct in error_rates.items()],
    }


def _endpoint(d: Mapping[str, Any]) -> Endpoint:
    return Endpoint(str(d["host"]), str(d["device"]), Guid(d["guid"]), d["leaf"], int(d["rail"]))


def client_record(doc: Mapping[str, Any], client: str, server: str, host: str) -> dict[str, Any]:
    """The record the client step prints for its pair of the round in ``doc``. Pure."""
    if doc.get("format") != FORMAT:
        raise IbfabError(f"round file is not {FORMAT}")
    probes = [Probe(_endpoint(p["client"]), _endpoint(p["server"]), int(p["round"])) for p in doc["probes"]]
    paths = {
        (Guid(c), Guid(s)): [
            Link(PortRef(a, int(pa)), PortRef(b, int(pb)), int(w), str(sp)) for a, pa, b, pb, w, sp in links
        ]
        for c, s, links in doc["paths"]
        if links
    }
    rates = {(str(g), int(port)): int(pct) for g, port, pct in doc["error_rates"]}
    results = simulate_round(None, probes, paths, rates, int(doc["attempt"]))
    mine = [r for r in results if r.client.guid == client and r.server.guid == server]
    if not mine:
        raise IbfabError(f"pair {client} -> {server} is not in the round file")
    r = mine[0]
    return {
        "format": FORMAT,
        "backend": BACKEND,
        "role": "client",
        "host": host,
        "client": r.client.label,
        "server": r.server.label,
        "gbps": r.gbps,
        "line_rate_gbps": r.line_rate_gbps,
        "ok": r.ok,
        "error": r.error,
    }


def parse_step_output(text: str, source: str) -> dict[str, Any]:
    """The JSON record a lab step printed (the last line that is one). Pure."""
    for lineno, line in reversed(list(enumerate(text.splitlines(), 1))):
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except ValueError as exc:
                raise ParseError("labstep", source, lineno, line, f"not JSON ({exc})") from exc
            if isinstance(doc, dict) and doc.get("format") == FORMAT:
                return doc
            raise ParseError("labstep", source, lineno, line, f"not an {FORMAT} record")
    raise ParseError("labstep", source, 0, "", "no record printed")


def main(argv: Sequence[str]) -> int:
    host = socket.gethostname()
    if len(argv) == 4 and argv[0] == "client":
        doc = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
        print(json.dumps(client_record(doc, argv[2], argv[3], host)), flush=True)
        return 0
    if len(argv) == 2 and argv[0] == "serve":
        print(json.dumps({"format": FORMAT, "backend": BACKEND, "role": "server", "host": host}), flush=True)
        time.sleep(float(argv[1]))  # until the sweep cancels the step, as an ib_write_bw server waits
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
