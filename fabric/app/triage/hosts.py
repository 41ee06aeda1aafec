"""Host ranges as the command line gives them (``dgx-[0001-0004]``)."""

from __future__ import annotations

from probes.inventory import expand_hosts


def expand_range(text: str, option: str = "--hosts") -> list[str]:
    """``dgx-[0001-0004],login`` -> the host names; a UsageError naming ``option`` when malformed."""
    return expand_hosts(text, option)


__all__ = ["expand_range"]
