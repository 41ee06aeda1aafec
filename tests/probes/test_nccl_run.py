"""nccl-tests runs: plans, judging real captures, expectations, and the launcher path for real:
Open MPI's mpirun (and Slurm's srun) on a head host behind a real sshd. No GPU or RDMA here, so
every launch fails, and must be reported as the failure it is, in one line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.store import Store
from probes.nccl import NcclTestOptions
from probes.nccl_run import NcclJob, expectation, judge, plan_nccl
from probes.transport import CommandResult
from tests.conftest import realdata_files
from tests.sshd import Sshd, sshd_server
from topology.errors import UsageError

__all__ = ["sshd_server"]

OPTS = NcclTestOptions("all_reduce_perf", min_bytes="8", max_bytes="8G", env={"NCCL_DEBUG": "WARN"})


def test_mpirun_plan_writes_a_hostfile_and_runs_all_gpus() -> None:
    plan = plan_nccl(["dgx-0001", "dgx-0002"], OPTS, hostfile_path="/tmp/h.hosts")
    assert plan.hostfile == "dgx-0001 slots=8\ndgx-0002 slots=8\n"
    (job,) = plan.jobs
    assert job.label == "all" and job.nics_per_node == 8
    assert job.argv[:5] == ("mpirun", "-np", "16", "--hostfile", "/tmp/h.hosts")
    assert "ppr:8:node" in job.argv and job.argv[9:11] == ("-x", "NCCL_DEBUG=WARN")
    assert job.argv[-9:] == ("all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1")


def test_per_rail_plan_pins_one_gpu_and_one_hca_per_run() -> None:
    hcas = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    plan = plan_nccl(["dgx-0001", "dgx-0002"], OPTS, per_rail=True, rail_hcas=hcas)
    assert plan.hostfile == "dgx-0001 slots=1\ndgx-0002 slots=1\n"
    assert [j.label for j in plan.jobs][:2] == ["rail 0 (mlx5_0)", "rail 1 (mlx5_3)"]
    job = plan.jobs[5]
    assert (job.rail, job.hca, job.nics_per_node) == (5, "mlx5_9", 1)
    assert "-np" in job.argv and job.argv[job.argv.index("-np") + 1] == "2"
    assert "NCCL_IB_HCA==mlx5_9" in job.argv and "CUDA_VISIBLE_DEVICES=5" in job.argv


def test_split_plan_uses_nccl_tests_split_and_srun_takes_the_node_list() -> None:
    plan = plan_nccl(["n1", "n2"], OPTS, launcher="srun", split=True, gpus_per_node=4)
    assert plan.hostfile is None and plan.hostfile_path is None
    (job,) = plan.jobs
    assert job.argv[:4] == ("srun", "--nodes=2", "--nodelist=n1,n2", "--ntasks-per-node=4")
    assert "--export=ALL,NCCL_DEBUG=WARN,NCCL_TESTS_SPLIT=MOD 4" in job.argv
    assert job.nics_per_node == 1


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"launcher": "ssh"}, "launcher must be one of"),
        ({"per_rail": True, "split": True}, "one of --per-rail and --split"),
        ({"per_rail": True, "rail_hcas": ["mlx5_0"]}, "names 1 HCAs for 8 GPUs"),
        ({"gpus_per_node": 0}, "GPUs per node"),
    ],
)
def test_bad_plans_are_usage_errors(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        plan_nccl(["n1"], OPTS, **kwargs)  # type: ignore[arg-type]


def test_expectation_at_ndr_is_nvidias_figure() -> None:
    assert expectation(400.0) == (46.0, 48.0, 45.0)
    assert expectation(200.0) == (23.0, 24.0, 22.5)


# -- judging real captures ----------------------------------------------------------------------
_AVG = {
    "deepops-all_reduce_perf-2x-dgxa100-8xhdr-k8s-old-format.txt": 53.7098,
    "oci-hpc-all_reduce_perf-2nodes-16xH100-nccl2.23.4.txt": 464.075,
    "superbench-all_reduce_perf-1node-8xA100-old-format.txt": 68.4048,
}


@pytest.mark.parametrize("path", realdata_files("nccl-tests"), ids=lambda p: p.name)
def test_judge_every_real_capture(path: Path) -> None:
    job = NcclJob("all", None, None, ("mpirun", "-np", "16"), 8)
    text = path.read_text()
    run = judge(job, CommandResult("head", job.argv, 0, text, "", 1.5), "all_reduce_perf", 100.0)
    failing = ("failure", "FAILED", "completion", "not-enough-slots")
    if any(word in path.name for word in failing):
        assert not run.ok and run.error and "\n" not in run.error
        assert run.busbw_per_nic is None
    else:
        assert run.ok, run.error
        assert run.result is not None and run.result.rows
        assert run.busbw_per_nic is not None
    if path.name in _AVG:
        assert run.busbw_per_nic == pytest.approx(_AVG[path.name] / 8)
    assert run.output == text  # nothing on stderr: kept as it came


def test_judge_names_the_real_failures() -> None:
    files = {p.name: p for p in realdata_files("nccl-tests")}
    job = NcclJob("all", None, None, ("mpirun",), 8)

    def error(name: str, rc: int = 1) -> str | None:
        text = files[name].read_text()
        return judge(job, CommandResult("head", (), rc, text, "", 1.0), "all_reduce_perf", 0.0).error

    assert error("meta-gcm-all_reduce_perf-mpirun-not-enough-slots-failure.txt") == (
        "Open MPI: not enough slots for 16 processes (check the hostfile's slots)"
    )
    assert "4 out-of-bounds values" in str(
        error("nccl-tests-issue369-gh200-2nodes-wrong-out-of-bounds-FAILED.txt")
    )
    assert "vendor err 81" in str(error("nccl-issue928-ib-completion-error4-vendor81-excerpt.txt"))
    # srun's own line says only that a rank exited (as real srun prints it, tests/integration/
    # test_triage_slurm.py): the ranks' lines say why
    busy = files["nccl-tests-issue369-gh200-2x4-cuda-busy-failure.txt"].read_text()
    srun_said = "srun: error: gpu-1-7: task 4: Exited with exit code 1\n"
    run = judge(job, CommandResult("head", (), 1, busy, srun_said, 1.0), "all_reduce_perf", 0.0)
    assert str(run.error).startswith(
        "gpu-1-1: Test CUDA failure common.cu:1304 'CUDA-capable device(s) is/are busy or unavailable'"
    )
    # A clean table but a non-zero exit is not a success.
    ok_text = files["superbench-all_reduce_perf-1node-8xA100-old-format.txt"].read_text()
    run = judge(job, CommandResult("head", (), 137, ok_text, "Killed\n", 1.0), "all_reduce_perf", 0.0)
    assert run.error == "exit 137 after the results table: Killed"


# -- the launcher for real, on a head host behind sshd ------------------------------------------
def _inventory(server: Sshd, tmp_path: Path) -> tuple[Path, Path]:
    inv = tmp_path / "hosts.txt"
    entries = (("cn0001", 2), ("cn0002", 3), ("localhost", 2))
    inv.write_text(
        "".join(
            f"{n} address=127.0.0.{i} user={server.user} port={server.port} key_file={server.user_key}\n"
            for n, i in entries
        )
    )
    return inv, server.write_known_hosts(tmp_path / "known_hosts")


def _probe(inv: Path, known: Path, *args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(
        main, ["probe", "nccl", "--inventory", str(inv), "--known-hosts", str(known), *args]
    )
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.sshd
def test_real_mpirun_that_cannot_reach_the_nodes_is_one_line_and_stored(
    sshd_server: Sshd, tmp_path: Path
) -> None:
    inv, known = _inventory(sshd_server, tmp_path)
    before = set(Path("/tmp").glob("ibfab-nccl-*.hosts"))
    rc, out, err = _probe(inv, known, "--hosts", "cn[0001-0002]", "--allow-run-as-root", "--line-rate", "400")
    assert rc == 4
    # Open MPI's orted could not be started: the node names do not resolve on the head host.
    assert err.count("\n") == 1 and err.startswith("ibfab: error: mpirun on ssh cn0001 failed (exit ")
    assert "ORTE was unable to reliably start one or more daemons." in err
    assert "ssh: Could not resolve hostname cn000" in err
    assert (
        "expected at 400 Gb/s (--line-rate): 46-48 GB/s busbw per NIC; below expectation under 45 GB/s" in out
    )
    assert "== all: FAILED" in out and "verdict" not in out  # nothing measured, nothing judged
    assert set(Path("/tmp").glob("ibfab-nccl-*.hosts")) == before  # hostfile removed from the head host
    with Store.open() as store:
        (sweep,) = store.list_sweeps()
        stored = store.load_sweep(sweep.id)
        (row,) = stored.results
        assert row.capture_id is not None
        cap = store.load_capture(row.capture_id)
    assert sweep.pattern == "nccl" and sweep.source == "nccl all_reduce_perf mpirun via cn0001: cn[0001-0002]"
    assert (row.client_host, row.client_device, row.ok, row.gbps, row.line_rate_gbps) == (
        "cn[0001-0002]", "all", False, None, 400.0
    )  # fmt: skip
    assert cap.tool == "nccl-tests" and cap.argv[:5] == ("mpirun", "-np", "16", "--hostfile", cap.argv[4])
    assert "ORTE was unable to reliably start" in cap.text and "--allow-run-as-root" in cap.argv


@pytest.mark.sshd
def test_real_mpirun_on_one_node_finds_no_nccl_tests_binary(sshd_server: Sshd, tmp_path: Path) -> None:
    inv, known = _inventory(sshd_server, tmp_path)
    rc, out, _ = _probe(
        inv, known, "--hosts", "localhost", "--gpus-per-node", "2", "--allow-run-as-root", "--json"
    )
    assert rc == 4
    doc = json.loads(out)
    (run,) = doc["runs"]
    assert run["error"] == (
        "mpirun was unable to find the specified executable file, and therefore did not launch the job."
    )
    assert run["exit_code"] != 0 and run["avg_busbw"] is None and run["verdict"] is None
    assert run["argv"][:3] == ["mpirun", "-np", "2"]


@pytest.mark.sshd
def test_real_mpirun_refuses_root_without_the_flag(sshd_server: Sshd, tmp_path: Path) -> None:
    if sshd_server.user != "root":
        pytest.skip("the refusal only happens as root")
    inv, known = _inventory(sshd_server, tmp_path)
    rc, _, err = _probe(inv, known, "--hosts", "localhost", "--gpus-per-node", "1")
    assert rc == 4 and err.strip().endswith("mpirun has detected an attempt to run as root.")


@pytest.mark.sshd
def test_missing_launcher_and_real_srun_without_slurm(sshd_server: Sshd, tmp_path: Path) -> None:
    inv, known = _inventory(sshd_server, tmp_path)
    rc, _, err = _probe(inv, known, "--hosts", "cn0001", "--mpirun", "/opt/none/mpirun")
    assert rc == 4 and err.count("\n") == 1
    assert "(exit 127): bash: line 1: /opt/none/mpirun: No such file or directory" in err
    rc, out, err = _probe(
        inv, known, "--hosts", "cn[0001-0002]", "--launcher", "srun", "--per-rail", "--gpus-per-node", "2"
    )
    assert rc == 4 and err.count("\n") == 1 and "srun on ssh cn0001 failed (exit 1): srun: error:" in err
    assert "== rail 0 (mlx5_0): FAILED" in out and "== rail 1 (mlx5_1): FAILED" in out
    with Store.open() as store:
        rows = store.load_sweep(store.list_sweeps()[-1].id).results
    assert [r.client_device for r in rows] == ["mlx5_0", "mlx5_1"] and not any(r.ok for r in rows)


@pytest.mark.sshd
def test_unreachable_head_host_is_a_transport_error(sshd_server: Sshd, tmp_path: Path) -> None:
    inv, known = _inventory(sshd_server, tmp_path)
    inv.write_text(inv.read_text().replace(f"port={sshd_server.port}", "port=1", 1))
    t0 = time.monotonic()
    rc, _, err = _probe(inv, known, "--hosts", "cn0001")
    assert rc == 7 and err.count("\n") == 1 and "cn0001" in err
    assert time.monotonic() - t0 < 60
