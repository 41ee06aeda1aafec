"""Hosts for people: folded command output (and as JSON), folded preflight lines, this machine's
HCA table."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence

from fabric.present.table import table
from probes.fanout import FoldedResult
from probes.output import text_chunks
from probes.preflight import HcaPort
from probes.transport import CommandResult


def render_folded(folded: Sequence[FoldedResult]) -> Iterator[str]:
    """Headers per group of identical hosts, then their output (stderr lines marked ``!``), a
    piece at a time: up to 64 MiB of output per host is decoded and written piece by piece, never
    held as one text (its invalid bytes as U+FFFD would triple it)."""
    for f in folded:
        n = f"{f.count} host" + ("s" if f.count != 1 else "")
        status = f"exit {f.exit_code}" if f.failure is None else f"{f.failure.value}: {f.message}"
        yield f"== {f.hosts} ({n}): {status}\n"
        yield from _ended(text_chunks(f.stdout_bytes))
        yield from _ended(_marked(text_chunks(f.stderr_bytes), "! "))


def results_json(results: Sequence[CommandResult]) -> Iterator[str]:
    """``{"results": [...]}`` as ``json.dumps(..., indent=2)`` writes it, a piece at a time: each
    host's stdout and stderr are decoded and escaped a megabyte at a time, never whole."""
    yield '{\n  "results": ['
    for k, r in enumerate(results):
        fields: dict[str, object] = {
            "host": r.host,
            "argv": list(r.argv),
            "exit_code": r.exit_code,
            "stdout": r.stdout_bytes,
            "stderr": r.stderr_bytes,
            "duration": round(r.duration, 4),
            "failure": r.failure.value if r.failure else None,
            "message": r.message,
        }
        yield ("," if k else "") + "\n    {"
        for j, (name, value) in enumerate(fields.items()):
            yield ("," if j else "") + f"\n      {json.dumps(name)}: "
            if isinstance(value, bytes):
                yield '"'
                for text in text_chunks(value):
                    yield json.dumps(text)[1:-1]
                yield '"'
            else:
                yield json.dumps(value, indent=2).replace("\n", "\n      ")
        yield "\n    }"
    yield "\n  ]\n}\n" if results else "]\n}\n"


def _ended(pieces: Iterable[str]) -> Iterator[str]:
    """``pieces``, with a newline after the last one unless it ends with one."""
    last = ""
    for piece in pieces:
        if piece:
            last = piece
            yield piece
    if last and not last.endswith("\n"):
        yield "\n"


def _marked(pieces: Iterable[str], mark: str) -> Iterator[str]:
    """Every line of ``pieces`` begun with ``mark`` (lines may run across pieces)."""
    at_start = True
    for piece in pieces:
        if not piece:
            continue
        body = piece.replace("\n", "\n" + mark)
        if at_start:
            body = mark + body
        at_start = body.endswith("\n" + mark)
        yield body[: -len(mark)] if at_start else body


def render_preflight(groups: Sequence[tuple[str, int, bool, str]]) -> str:
    """``dgx-[0001-0004] (4): ok: 8 ports: 8 up at 400 Gb/s InfiniBand`` per group of identical hosts."""
    return "\n".join(
        f"{hosts} ({count}): {'ok' if fine else 'FAIL'}: {summary}" for hosts, count, fine, summary in groups
    )


def render_hca_ports(ports: Sequence[HcaPort]) -> str:
    rows = [
        (
            p.device,
            p.port,
            p.state,
            p.phys_state,
            f"{p.rate_gbps:g}",
            p.link_layer,
            p.lid,
            p.guid,
            p.node_desc,
        )
        for p in ports
    ]
    return table(("DEVICE", "PORT", "STATE", "PHYS", "GB/S", "LINK", "LID", "GUID", "DESC"), rows)
