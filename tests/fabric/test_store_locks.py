"""A store opened a second time in the same process keeps the first connection's locks.

POSIX locks belong to the process and the file: closing any descriptor of the store drops every
lock this process holds on it, SQLite's included. A second ``Store.open`` that read the file's
header with open()/close() did that, so the next process to close its connection found itself
alone, checkpointed and deleted the WAL under the first connection, whose next write failed with
"disk I/O error" (a daemon's every job failed so while a reader polled its store)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from fabric.store import Store


def test_a_second_open_in_the_same_process_leaves_the_first_connections_locks(tmp_path: Path) -> None:
    path = tmp_path / "ibfab.db"
    with Store.open(path) as first:
        first.add_schedule("a", "counters", interval_seconds=60)
        with Store.open(path) as second:  # another thread's job, the daemon's reader
            assert [s.name for s in second.list_schedules()] == ["a"]
        # another process opens and closes the store: alone, it would checkpoint and remove the WAL
        script = "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute('SELECT 1 FROM meta'); db.close()"
        subprocess.run([sys.executable, "-c", script, str(path)], check=True)
        assert path.with_name(path.name + "-wal").exists()  # the first connection still holds it
        first.add_schedule("b", "counters", interval_seconds=60)  # was: disk I/O error
    with sqlite3.connect(path) as db:
        assert [r[0] for r in db.execute("SELECT name FROM schedules ORDER BY name")] == ["a", "b"]
