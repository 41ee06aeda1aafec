"""Parse ``ibnetdiscover`` output (the topology file and the ``-p`` ports report) into a Fabric.

Pure functions of text: ``parse_ibnetdiscover(lines, source)`` and the thin file wrapper
``read_ibnetdiscover(path)``. Accepts every variant seen in real captures: old and new headers,
``Non-Chassis Nodes`` grouping lines, ibwarn lines mixed into stdout, CRLF, tabs or spaces,
port labels (``[1](1/1/1)``), ``-f`` suffixes (``s=4 w=2 v=4 e=4``), ``???`` speeds, loopback
cables, and partial files whose links point at nodes that have no record of their own.

Captures as operators save them are read too: a terminal logger's banner, the shell prompt and
command line around the output, CR line ends (stray or doubled), ANSI colour codes, tabs
collapsed to spaces or to nothing. A line that is clearly not ibnetdiscover output (nothing in it
looks like a record, a port line or a header) is skipped, and all of them are counted in one
warning on the Fabric. Nothing that looks like part of a record is guessed at: a broken record
is a ParseError naming the line.

One parser, one set of rules: its line reader (topology.ibnetdiscover_lines, imported when it
runs) reads lines into the builder (topology.ibnetdiscover_build), which makes the Fabric and
pairs port lines into cables; the whole-text entry first tries its inner loop for files in the
tool's canonical spelling (topology.ibnetdiscover_fast), which fills the same builder in bulk and
hands anything else back to the line reader; the value rules both apply live in
topology.ibnetdiscover_common.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from topology._speed import gc_paused
from topology.ibnetdiscover_build import TOOL
from topology.ibnetdiscover_fast import parse_canonical
from topology.model import Fabric
from topology.textfile import read_input_text


def parse_ibnetdiscover(lines: Iterable[str], source: str = "<input>") -> Fabric:
    """Parse ibnetdiscover text (topology file or ``-p`` report) given as lines.

    Raises :class:`ParseError` naming the source, line number and problem for empty, truncated,
    garbled or non-ibnetdiscover input.
    """
    with gc_paused():
        from topology.ibnetdiscover_lines import parse_lines

        return parse_lines(lines, source)


def parse_ibnetdiscover_text(text: str, source: str = "<input>") -> Fabric:
    """Parse ibnetdiscover text given whole: the canonical inner loop when the text allows it
    (``topology.ibnetdiscover_fast``), otherwise the general line parser. Same result, same errors."""
    with gc_paused():
        fabric = parse_canonical(text, source)
        if fabric is not None:
            return fabric
        from topology.ibnetdiscover_lines import parse_lines, text_lines

        return parse_lines(text_lines(text), source)


def read_ibnetdiscover(path: str | Path) -> Fabric:
    """Parse a saved ibnetdiscover file (bounded; UTF-16 or UTF-8, line ends as saved: reading in
    text mode would turn a terminal log's CR CR LF into two line ends, a blank line inside a
    record; see :func:`topology.textfile.decode_input`)."""
    return parse_ibnetdiscover_text(read_input_text(path, TOOL), str(path))
