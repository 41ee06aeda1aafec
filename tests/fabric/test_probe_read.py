"""`ibfab probe read FILE...`: saved runs judged as live ones (exit 0 healthy, 4 failed, 3
unreadable), every real capture and every built form, against a fabric or none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.app.triage.read import FAILED, HEALTHY, read_probe
from fabric.cli.main import main
from tests.conftest import realdata_files
from tests.ncclforms import FORMS
from topology.generate import generate, to_ibnetdiscover


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture(scope="module")
def rail_small(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("fabric") / "rail-small.topo"
    path.write_text(to_ibnetdiscover(generate("rail-small")))
    return str(path)


# Each real capture's state when no fabric is known: nccl-tests' own verdict, read as it wrote it.
REAL_STATES = {
    "nccl-tests": {
        "meta-gcm-all_reduce_perf-mpirun-not-enough-slots-failure.txt": FAILED,
        "nccl-issue1698-roce-completion-status12-vendor129-excerpt.txt": FAILED,
        "nccl-issue928-ib-completion-error4-vendor81-excerpt.txt": FAILED,
        "nccl-tests-issue369-gh200-2nodes-wrong-out-of-bounds-FAILED.txt": FAILED,
        "nccl-tests-issue369-gh200-2x4-cuda-busy-failure.txt": FAILED,
    },
    "ib_write_bw": {
        "perftest-issue132-client-modify-qp-rts-error.txt": FAILED,
        "perftest-issue132-server-rdmacm-read-keys-error.txt": FAILED,
        "perftest-pr228-couldnt-connect-socket-error.txt": FAILED,
    },
}
CASES = [(tool, p) for tool in REAL_STATES for p in realdata_files(tool)]


@pytest.mark.parametrize(("tool", "path"), CASES, ids=[p.name for _, p in CASES])
def test_every_real_capture_is_read_never_unreadable(tool: str, path: Path) -> None:
    reading = read_probe(str(path))
    assert reading.state == REAL_STATES[tool].get(path.name, HEALTHY), reading
    assert (reading.nccl is not None) == (tool == "nccl-tests")


def test_a_healthy_run_against_the_fabric_exits_0(rail_small: str) -> None:
    code, out, _ = run(
        "probe", "read", str(FORMS / "all_reduce_perf-2nodes-16xH100-ib-info.txt"), "--input", rail_small
    )
    assert code == 0
    assert "healthy" in out and "busbw: normal: 375.9 GB/s at 8 GiB, 94% of the 400.0 GB/s bound" in out
    assert "each node sends through 8 HCA(s) x 400 Gb/s = 400.0 GB/s" in out and "n=16" in out


def test_a_run_over_sockets_exits_4_with_its_lines(rail_small: str) -> None:
    path = str(FORMS / "all_reduce_perf-2nodes-16xH100-socket-fallback.txt")
    code, out, err = run("probe", "read", path, "--input", rail_small)
    assert code == 4 and "1 of 1 run(s) failed" in err
    assert "FAILED: dgx-[0001-0002] ran over Socket (eth0), not InfiniBand" in out
    assert "dgx-0001:40011 NET/IB : No device found." in out and "busbw: LOW" in out


def test_too_few_hcas_name_the_missing_ones(rail_small: str) -> None:
    path = str(FORMS / "all_reduce_perf-2nodes-16xH100-4-of-8-hcas-warn-mid-row.txt")
    code, out, _ = run("probe", "read", path, "--input", rail_small, "--json")
    [reading] = json.loads(out)["readings"]
    assert code == 4 and reading["state"] == "failed"
    [fewer] = [f for f in reading["nccl"]["findings"] if f["failed"]]
    assert fewer["kind"] == "fewer_hcas" and fewer["missing"] == ["mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"]
    assert reading["nccl"]["busbw"]["verdict"] == "low"
    assert reading["nccl"]["busbw"]["model"]["bound_gbs"] == 400.0
    assert reading["nccl"]["nccl_log"]["warns"][0]["location"] == "transport/net_ib.cc:253"


def test_text_and_json_of_one_run_are_judged_alike(rail_small: str) -> None:
    paths = [str(FORMS / f"all_reduce_perf-2nodes-16xH100-ib-info.{ext}") for ext in ("txt", "json")]
    code, out, _ = run("probe", "read", *paths, "--input", rail_small, "--json")
    text, report = json.loads(out)["readings"]
    assert code == 0
    assert text["nccl"]["busbw"]["verdict"] == report["nccl"]["busbw"]["verdict"] == "normal"
    assert text["nccl"]["busbw"]["best_size"] == report["nccl"]["busbw"]["best_size"]


def test_without_a_fabric_nothing_is_guessed() -> None:
    code, out, _ = run(
        "probe", "read", str(FORMS / "all_reduce_perf-2nodes-16xH100-4-of-8-hcas-warn-mid-row.txt")
    )
    assert code == 0  # nccl-tests said nothing failed; nothing says how many HCAs the nodes have
    assert "fabric: none known" in out and "busbw: unknown: the fabric does not know these hosts" in out
    code, _, _ = run(
        "probe", "read", str(FORMS / "all_reduce_perf-2nodes-16xH100-4-of-8-hcas-warn-mid-row.txt"),
        "--hcas", "8", "--rate", "400",
    )  # fmt: skip
    assert code == 4


def test_unreadable_files_exit_3_and_the_others_are_still_judged(tmp_path: Path) -> None:
    junk = tmp_path / "junk.txt"
    junk.write_text("total 12\ndrwxr-xr-x 2 root root 4096 .\n")
    cut = tmp_path / "cut.json"
    cut.write_text('{"version":3,"results":[{"size":8')
    good = str(FORMS / "all_reduce_perf-2nodes-16xH100-ib-info.txt")
    code, out, err = run("probe", "read", str(junk), good, str(cut), str(tmp_path / "absent.txt"))
    assert code == 3 and "3 of 4 file(s) unreadable" in err and "\n" not in err.strip()
    assert f"{junk}: UNREADABLE" in out and f"{good}: healthy" in out and "not complete JSON" in out


def test_ib_write_bw_against_a_line_rate() -> None:
    path = str(next(p for p in realdata_files("ib_write_bw") if "8M-hdr" in p.name))
    code, out, _ = run("probe", "read", path, "--line-rate", "200")
    assert code == 0 and "bandwidth: normal" in out
    code, out, _ = run("probe", "read", path, "--line-rate", "400")  # HDR numbers on an NDR link
    assert code == 4 and "bandwidth: SLOW" in out


def test_hand_given_and_fabric_given_are_one_choice(rail_small: str) -> None:
    code, _, err = run(
        "probe", "read", str(FORMS / "reduce_scatter_perf-2nodes-per-rail-v1.json"), "--hcas", "8"
    )
    assert code == 2 and "--hcas and --rate together" in err
    code, _, err = run(
        "probe", "read", str(FORMS / "reduce_scatter_perf-2nodes-per-rail-v1.json"),
        "--hcas", "8", "--rate", "400", "--input", rail_small,
    )  # fmt: skip
    assert code == 2 and "not both" in err
