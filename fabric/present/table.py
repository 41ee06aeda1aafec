"""Plain-text tables for the terminal (no colour needed, readable when piped)."""

from __future__ import annotations

from collections.abc import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], max_width: int = 60) -> str:
    """Left-aligned columns; cells longer than ``max_width`` are cut with an ellipsis."""

    def cell(v: object) -> str:
        s = "-" if v is None else str(v)
        return s if len(s) <= max_width else s[: max_width - 1] + "…"

    cells = [[cell(v) for v in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in cells:
        for i, v in enumerate(r):
            widths[i] = max(widths[i], len(v))
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(headers)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(widths[i]) for i, v in enumerate(r)).rstrip() for r in cells]
    return "\n".join(lines)


def ellipsis(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ending in … when cut (never silently)."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"
