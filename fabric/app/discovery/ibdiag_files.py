"""The files of one ibdiagnet run: ``ibdiagnet2.db_csv`` and, beside it, ``.cables``, ``.pm`` and
``.fdbs`` (the unicast forwarding tables, with ``-r``).

Sites keep ibdiagnet's output directory; files may carry a prefix (``run1-ibdiagnet2.db_csv``).
``path`` may also be the db_csv file itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from topology.errors import UsageError


@dataclass(frozen=True)
class IbdiagFiles:
    db_csv: Path
    cables: Path | None
    pm: Path | None
    fdbs: Path | None = None


def _one(folder: Path, suffix: str) -> Path | None:
    exact = folder / f"ibdiagnet2{suffix}"
    if exact.is_file():
        return exact
    hits = sorted(p for p in folder.glob(f"*ibdiagnet2{suffix}") if p.is_file())
    if len(hits) > 1:
        raise UsageError(
            f"{folder}: several *ibdiagnet2{suffix} files ({', '.join(p.name for p in hits)}); give one"
        )
    return hits[0] if hits else None


def ibdiagnet_files(path: str | Path) -> IbdiagFiles:
    """The files of one ibdiagnet run in ``path`` (a directory, or its db_csv file)."""
    p = Path(path)
    if p.is_file():
        stem = p.name[: -len(".db_csv")] if p.name.endswith(".db_csv") else None
        if stem is None:
            raise UsageError(f"{p}: not an ibdiagnet2.db_csv file")
        sibling = {s: p.with_name(stem + s) for s in (".cables", ".pm", ".fdbs")}
        return IbdiagFiles(p, *(q if q.is_file() else None for q in sibling.values()))
    if not p.is_dir():
        raise UsageError(f"{p}: no such ibdiagnet output directory")
    db_csv = _one(p, ".db_csv")
    if db_csv is None:
        raise UsageError(f"{p}: no ibdiagnet2.db_csv (run ibdiagnet, or give its output directory)")
    return IbdiagFiles(db_csv, _one(p, ".cables"), _one(p, ".pm"), _one(p, ".fdbs"))
