"""Probe sweeps (ib_write_bw / nccl-tests pairs) and their per-pair results."""

from __future__ import annotations

from collections.abc import Iterable

from fabric.store.core import StoreBase
from fabric.store.records import ProbeResultRow, ProbeSweep, StoredSweep
from topology.errors import StoreError

_RESULT_COLUMNS = (
    "client_host, client_device, server_host, server_device, gbps, line_rate_gbps, ok, error, capture_id"
)


class ProbeTables(StoreBase):
    def save_sweep(
        self, started: float, pattern: str, source: str = "", finished: float | None = None
    ) -> int:
        """Open a sweep (``pattern``: "rail-pairs", "circle", ...); returns its id."""
        with self._write() as db:
            cur = db.execute(
                "INSERT INTO probe_sweeps (started, finished, pattern, source) VALUES (?, ?, ?, ?)",
                (started, finished, pattern, source),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def finish_sweep(self, sweep_id: int, finished: float) -> None:
        with self._write() as db:
            if (
                db.execute("UPDATE probe_sweeps SET finished = ? WHERE id = ?", (finished, sweep_id)).rowcount
                == 0
            ):
                raise StoreError(f"{self.path}: no probe sweep {sweep_id}")

    def add_probe_results(self, sweep_id: int, results: Iterable[ProbeResultRow]) -> int:
        """Append results to a sweep (raw output saved first with save_capture); returns how many."""
        rows = [
            (
                sweep_id,
                r.client_host,
                r.client_device,
                r.server_host,
                r.server_device,
                r.gbps,
                r.line_rate_gbps,
                r.ok,
                r.error,
                r.capture_id,
            )
            for r in results
        ]
        with self._write() as db:
            if db.execute("SELECT 1 FROM probe_sweeps WHERE id = ?", (sweep_id,)).fetchone() is None:
                raise StoreError(f"{self.path}: no probe sweep {sweep_id}")
            db.executemany(
                f"INSERT INTO probe_results (sweep_id, {_RESULT_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        return len(rows)

    def load_sweep(self, sweep_id: int) -> StoredSweep:
        with self._read() as db:
            head = db.execute(
                "SELECT id, started, finished, pattern, source FROM probe_sweeps WHERE id = ?", (sweep_id,)
            ).fetchone()
            if head is None:
                raise StoreError(f"{self.path}: no probe sweep {sweep_id}")
            rows = db.execute(
                f"SELECT {_RESULT_COLUMNS} FROM probe_results WHERE sweep_id = ? ORDER BY id", (sweep_id,)
            ).fetchall()
        results = tuple(
            ProbeResultRow(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), r[7], r[8]) for r in rows
        )
        return StoredSweep(ProbeSweep(*head), results)

    def list_sweeps(self) -> list[ProbeSweep]:
        """Every sweep, oldest first."""
        with self._read() as db:
            rows = db.execute(
                "SELECT id, started, finished, pattern, source FROM probe_sweeps ORDER BY id"
            ).fetchall()
        return [ProbeSweep(*r) for r in rows]
