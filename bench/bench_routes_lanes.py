"""Benchmark: credit loops per virtual lane on a 2,048-HCA fabric, whole process.

The fabric and its minhop tables are bench_routes.py's 2k (an 8-unit rail fabric, 160 switches;
dump_lfts text). Beside them, in the tools' own forms: ``smpquery sl2vl <lid> <port>`` output for
every switch port cabled to another switch (every in port; SL n to VL n, SL 15 to VL 7, as ibsim
starts them), and ``saquery -p`` records for every host route judged (rail all-to-all: 8 x 256 x
255 = 522,240 pairs; SL (slid + dlid) mod 8). ``ibfab routes check --input --tables --sl2vl
--path-records`` is timed, best of 3, beside the same check without lanes (the one-lane run,
the baseline) in the same run; wall and CPU seconds and peak memory of each process. Then the
same tables and lanes stored (``ibfab routes --save --sl2vl --path-records``) and judged from the
snapshot alone (``routes check --snapshot latest``: the lanes read back from the store).

At 16,384 HCAs every host route would be 33.5 million pairs (a path record file of about 20 GB);
more than MAX_ROUTES (4 million) is judged in one lane, said so, so that size is not run here.

Run: .venv/bin/python bench/bench_routes_lanes.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_routes import IBFAB, build, ibfab, timed


def lanes_files(topo: Path, folder: Path) -> tuple[Path, Path]:
    sl2vl, paths = folder / "2k.sl2vl", folder / "2k.pathrecords"
    if sl2vl.is_file() and paths.is_file():
        return sl2vl, paths
    from topology.classify import Role, classify
    from topology.ibnetdiscover import read_ibnetdiscover

    start = time.perf_counter()
    fabric = read_ibnetdiscover(topo)
    switches = {n.guid for n in fabric.switches()}
    row = "|" + "|".join(f"{v:2d}" for v in (*range(15), 7)) + "|\n"
    with sl2vl.open("w") as fh:
        for n in fabric.switches():
            for port, far, _ in fabric.neighbours(n.guid):
                if far.guid not in switches:
                    continue
                fh.write(f"# SL2VL table: Lid {n.lid}\n#                 SL: |")
                fh.write("".join(f"{i:2d}|" for i in range(16)) + "\n")
                fh.writelines(f"ports: in {i:2d}, out {port:2d}: {row}" for i in range(n.nports + 1))
    cls = classify(fabric)
    hosts: dict[int, list[int]] = {}
    for n in fabric.hcas():
        c = cls.nodes.get(n.guid)
        if n.lid is not None and c is not None and c.role is Role.COMPUTE and c.rail is not None:
            hosts.setdefault(c.rail, []).append(n.lid)
    with paths.open("w") as fh:
        for lids in hosts.values():
            for a in lids:
                for b in lids:
                    if a != b:
                        fh.write(_record(a, b, (a + b) % 8))
    took = time.perf_counter() - start
    print(
        f"  (made {sl2vl.name} {sl2vl.stat().st_size / 1e6:.0f} MB, {paths.name} "
        f"{paths.stat().st_size / 1e6:.0f} MB in {took:.0f} s)"
    )
    return sl2vl, paths


def _record(slid: int, dlid: int, sl: int) -> str:
    """One record as saquery prints it (dump_path_record: 16 fields, tab-indented)."""
    return (
        "PathRecord dump:\n"
        "\t\tservice_id..............0x0000000000000000\n"
        f"\t\tdgid....................fe80::1070:fd03:b0:{dlid:x}\n"
        f"\t\tsgid....................fe80::1070:fd03:b0:{slid:x}\n"
        f"\t\tdlid....................{dlid}\n"
        f"\t\tslid....................{slid}\n"
        "\t\thop_flow_raw............0x0\n"
        "\t\ttclass..................0x0\n"
        "\t\tnum_path_revers.........0x80\n"
        "\t\tpkey....................0xFFFF\n"
        "\t\tqos_class...............0x0\n"
        f"\t\tsl......................0x{sl:X}\n"
        "\t\tmtu.....................0x84\n"
        "\t\trate....................0x91\n"
        "\t\tpkt_life................0x92\n"
        "\t\tpreference..............0x0\n"
        "\t\tresv2...................0x000000000000\n"
    )


def best(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, set[int]]:
    runs = [timed(argv, env=env) for _ in range(3)]
    return min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs), {r[3] for r in runs}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", metavar="DIR", help="Keep (and reuse) the generated files here.")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, IBFAB_DATA_DIR=str(Path(tmp) / "data"), IBFAB_LAB_DIR=str(Path(tmp) / "labs"))
        print("== 2k with lanes")
        topo, dump = build("2k", folder)
        sl2vl, paths = lanes_files(topo, folder)
        one = best(ibfab(topo, dump), env)
        per_vl = best([*ibfab(topo, dump), "--sl2vl", str(sl2vl), "--path-records", str(paths)], env)
        for what, (wall, cpu, rss, codes) in (("one lane (baseline)", one), ("per VL", per_vl)):
            print(f"  {what}: wall {wall:.2f} s, cpu {cpu:.2f} s, peak {rss:.0f} MiB, exit {sorted(codes)}")
        print(
            f"  per VL / one lane: wall {per_vl[0] / one[0]:.1f}x, cpu {per_vl[1] / max(one[1], 1e-9):.1f}x"
        )
        # the same tables and lanes stored (routes --save), then judged from the snapshot alone
        db = str(Path(tmp) / "bench.db")
        lanes = ["--sl2vl", str(sl2vl), "--path-records", str(paths)]
        save = timed(
            [str(IBFAB), "routes", "--db", db, "--input", str(topo), "--tables", str(dump), *lanes, "--save"],
            env=env,
        )
        size = sum(f.stat().st_size for f in Path(tmp).glob("bench.db*"))
        stored = best([str(IBFAB), "routes", "check", "--db", db, "--snapshot", "latest"], env)
        print(
            f"  routes --save with lanes: wall {save[0]:.2f} s, cpu {save[1]:.2f} s, peak {save[2]:.0f} MiB, "
            f"exit {save[3]}; store {size / 1e6:.1f} MB"
        )
        print(
            f"  per VL from the stored snapshot: wall {stored[0]:.2f} s, cpu {stored[1]:.2f} s, "
            f"peak {stored[2]:.0f} MiB, exit {sorted(stored[3])}"
        )


if __name__ == "__main__":
    main()
