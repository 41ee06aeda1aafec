"""The exporter's memory, threads and scrape time under 1,500 idle clients and 150 half-closers.

A store holds a real capture (default: the 1,407-node Selene storage fabric) with every cabled port
read twice, so the page is tens of MB. ``ibfab exporter`` runs as its own process; its resident
memory, peak memory (VmHWM), threads and open descriptors are read from /proc:

* baseline: after the first scrape, no other client; one scrape's time;
* 1,500 idle clients (connected, never sending): the same figures, and a normal scrape's time
  while they hold on (the server keeps at most ``--max-connections`` and closes the longest idle);
* 150 clients that send a GET, half-close and never read (each used to hold its own copy of the
  page): the same figures again.

Targets (``--strict`` exits 1 when missed): threads never above the baseline's; resident memory
within 64 MiB of the baseline; a scrape under load within 5x the baseline scrape (+1 s).

    .venv/bin/python bench/bench_exporter.py [--capture FILE] [--clients 1500] [--strict]
"""

from __future__ import annotations

import argparse
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fabric.test_exporter_limits import store_with_every_port  # noqa: E402

CAPTURE = (
    ROOT / "tests" / "data" / "realdata" / "ibnetdiscover" / "ufm-sdk-selene-storage-hdr-edr-1407nodes.txt"
)


def status(pid: int) -> dict[str, float]:
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return {
        "rss_mib": int(fields["VmRSS"].split()[0]) / 1024,
        "peak_mib": int(fields["VmHWM"].split()[0]) / 1024,
        "threads": int(fields["Threads"]),
        "fds": len(list(Path(f"/proc/{pid}/fd").iterdir())),
    }


def scrape(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as resp:
        size = len(resp.read())
    return time.perf_counter() - started, size


def line(what: str, s: dict[str, float], took: float | None = None) -> str:
    extra = f", scrape {took:.2f} s" if took is not None else ""
    return (
        f"{what:<34} RSS {s['rss_mib']:7.1f} MiB  peak {s['peak_mib']:7.1f} MiB  "
        f"threads {s['threads']:3.0f}  fds {s['fds']:5.0f}{extra}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capture", type=Path, default=CAPTURE)
    ap.add_argument("--clients", type=int, default=1500)
    ap.add_argument("--half-closers", type=int, default=150)
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.clients + args.half_closers + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))

    with tempfile.TemporaryDirectory(prefix="ibfab-bench-exporter-") as tmp:
        db = Path(tmp) / "ibfab.db"
        store_with_every_port(db, args.capture)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        url = f"http://127.0.0.1:{port}/metrics"
        argv = [sys.executable, "-c", "from fabric.cli import main; main()", "exporter", "--db", str(db)]
        argv += ["--listen", f"127.0.0.1:{port}", "--refresh", "1h"]
        proc = subprocess.Popen(argv, cwd=ROOT, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    took0, size = scrape(url)
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        print("exporter did not start", file=sys.stderr)
                        return 1
                    time.sleep(0.2)
            took0, size = scrape(url)  # the second scrape: nothing left to warm up
            base = status(proc.pid)
            print(f"capture {args.capture.name}: page {size / 2**20:.1f} MiB")
            print(line("baseline (no other client)", base, took0))

            idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(args.clients)]
            time.sleep(1.0)
            took1, _ = scrape(url)
            loaded = status(proc.pid)
            print(line(f"{args.clients} idle clients", loaded, took1))
            for s in idle:
                s.close()

            half = []
            for _ in range(args.half_closers):
                s = socket.create_connection(("127.0.0.1", port))
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n")
                s.shutdown(socket.SHUT_WR)
                half.append(s)
            time.sleep(2.0)
            took2, _ = scrape(url)
            halfs = status(proc.pid)
            print(line(f"{args.half_closers} half-closers, never reading", halfs, took2))
            for s in half:
                s.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)

    worst = max(loaded["rss_mib"], halfs["rss_mib"]) - base["rss_mib"]
    ok = (
        max(loaded["threads"], halfs["threads"]) <= base["threads"]
        and worst < 64
        and max(took1, took2) < 5 * took0 + 1
    )
    print(
        f"RSS above baseline at worst: {worst:+.1f} MiB; threads {base['threads']:.0f} throughout: "
        f"{'within target' if ok else 'MISSED TARGET'}"
    )
    return 0 if ok or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
