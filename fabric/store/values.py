"""Values of the wrong kind: a stored value whose type SQLite reads differently from its column's
(one flipped bit in a record's header turns a blob into text of the same bytes), or text whose
bytes are not UTF-8 (Python cannot read such a row at all).

:func:`mistyped_values` finds them (every value of every table is looked at once, by SQL where it
can); :func:`mend_value` puts back what can be put back without loss (a blob stored as text is
the same bytes: it becomes a blob again) and says what cannot (then the caller sets it aside).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

from fabric.store.salvage import Column, expected_table_columns

# The storage classes a column of each declared type holds in a store (REAL columns take
# integers: SQLite stores a whole float that way; INTEGER columns may hold a fraction).
_ALLOWED: dict[str, tuple[str, ...]] = {
    "INTEGER": ("integer", "real"),
    "REAL": ("real", "integer"),
    "TEXT": ("text",),
    "BLOB": ("blob",),
}


@dataclass(frozen=True, slots=True)
class BadValue:
    """One value that does not read as its column's kind."""

    table: str
    column: str
    rowid: int
    stored: str  # SQLite's typeof(): 'text', 'blob', 'null', ... or 'text' for text not UTF-8
    declared: str
    not_null: bool
    why: str

    @property
    def mendable(self) -> bool:
        """Put back without loss: a blob column holding text, a text column holding UTF-8 bytes."""
        return (self.declared, self.stored) in (("BLOB", "text"), ("TEXT", "blob"))


def mistyped_values(db: sqlite3.Connection, version: int) -> Iterator[BadValue]:
    """Every value of the store whose kind is not its column's, table by table. A table SQLite
    cannot read is skipped here (its pages are damaged: the page check names it)."""
    for table, columns in expected_table_columns(version).items():
        try:
            yield from _table_values(db, table, columns)
        except (sqlite3.DatabaseError, UnicodeDecodeError):
            continue


def _table_values(db: sqlite3.Connection, table: str, columns: tuple[Column, ...]) -> Iterator[BadValue]:
    found: list[BadValue] = []
    for col in columns:
        allowed = _ALLOWED.get(col.type)
        if allowed is None:
            continue
        kinds = ", ".join(f"'{k}'" for k in (*allowed, *(() if col.not_null else ("null",))))
        for rowid, stored, raw in db.execute(
            f'SELECT rowid, typeof("{col.name}"), CAST("{col.name}" AS BLOB) FROM "{table}"'
            f' WHERE typeof("{col.name}") NOT IN ({kinds})'
        ):
            why = f"{table}.{col.name}: stored as {stored} where the column holds {col.type.lower()}"
            if col.type == "TEXT" and stored == "blob" and not _utf8(raw):
                stored = "blob, not UTF-8"
            found.append(BadValue(table, col.name, int(rowid), str(stored), col.type, col.not_null, why))
        if col.type == "TEXT":
            for rowid, raw in db.execute(
                f'SELECT rowid, CAST("{col.name}" AS BLOB) FROM "{table}" WHERE typeof("{col.name}") = \'text\''
            ):
                if not _utf8(raw):
                    why = f"{table}.{col.name}: text that is not UTF-8"
                    found.append(
                        BadValue(table, col.name, int(rowid), "text, not UTF-8", col.type, col.not_null, why)
                    )
    yield from found


def _utf8(raw: object) -> bool:
    if not isinstance(raw, bytes):
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def mend_value(db: sqlite3.Connection, bad: BadValue) -> bool:
    """Put back a value that can be put back without loss; False when it cannot."""
    if not bad.mendable:
        return False
    kind = "BLOB" if bad.declared == "BLOB" else "TEXT"
    db.execute(
        f'UPDATE "{bad.table}" SET "{bad.column}" = CAST("{bad.column}" AS {kind}) WHERE rowid = ?',
        (bad.rowid,),
    )
    return True


def raw_value(db: sqlite3.Connection, bad: BadValue) -> bytes | None:
    """The stored bytes of a bad value (what the quarantine keeps)."""
    row = db.execute(
        f'SELECT CAST("{bad.column}" AS BLOB) FROM "{bad.table}" WHERE rowid = ?', (bad.rowid,)
    ).fetchone()
    return None if row is None else row[0]
