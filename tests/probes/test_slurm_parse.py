"""Slurm's text read as records: captures of the real 4-node test cluster (Slurm 22.05.8) in
tests/data/slurm, taken with the command lines probes.slurm runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.slurm import why_unavailable
from probes.slurm_parse import (
    parse_comments,
    parse_granted,
    parse_jobs,
    parse_nodes,
    parse_reasons,
    parse_reservations,
    parse_steps,
    salloc_refusal,
    step_failure,
    task_output,
)
from probes.transport import FailureKind
from topology.errors import ParseError

DATA = Path(__file__).parents[1] / "data" / "slurm"


def text(name: str) -> str:
    return (DATA / name).read_text()


def test_idle_nodes_are_idle_with_their_addresses() -> None:
    nodes = parse_nodes(text("scontrol-show-node-idle.txt"))
    assert [(n.name, n.address, n.partitions) for n in nodes] == [
        (f"node{k}", f"127.0.0.1{k}", ("ibfab",)) for k in range(1, 5)
    ]
    assert all(n.idle and n.usable and not n.drained and n.reason is None for n in nodes)
    assert [why_unavailable(n, "ibfab", None, None) for n in nodes] == [None] * 4


def test_a_drain_an_allocation_and_a_reason_with_spaces_and_equals() -> None:
    nodes = {n.name: n for n in parse_nodes(text("scontrol-show-node-drain-alloc.txt"))}
    drained = nodes["node2"]
    assert drained.state == "IDLE" and drained.flags == {"DRAIN"} and drained.drained and not drained.idle
    assert drained.reason == "ibfab: cable leaf-01/3 - dgx-0002/1: symbol errors 1.2e-9 BER x=y"
    assert (drained.reason_user, drained.reason_time) == ("root", "2026-11-25T08:21:57")
    assert why_unavailable(drained, None, None, None) == f"idle+drain: {drained.reason}"
    # The OS field holds spaces and '#'; it does not leak into the next key.
    assert nodes["node3"].state == "ALLOCATED" and nodes["node3"].usable and not nodes["node3"].idle
    assert why_unavailable(nodes["node3"], None, None, None) == "allocated (running another job)"
    assert why_unavailable(nodes["node1"], "gpu", None, None) == "not in partition gpu"
    assert why_unavailable(nodes["node1"], None, "maint-ib", None) == "reserved (maint-ib)"
    assert why_unavailable(nodes["node1"], None, "maint-ib", "maint-ib") is None
    assert why_unavailable(None, None, None, None) == "not a Slurm node"


def test_a_resumed_node_not_answering_and_nodes_finishing_a_job() -> None:
    nodes = {n.name: n for n in parse_nodes(text("scontrol-show-node-resumed.txt"))}
    assert nodes["node2"].flags == {"NOT_RESPONDING"} and not nodes["node2"].usable
    assert nodes["node3"].flags == {"COMPLETING"} and nodes["node3"].usable and nodes["node3"].reason is None


def test_a_dead_node_is_down_and_not_responding() -> None:
    (n,) = parse_nodes(text("scontrol-show-node-down.txt"))
    assert (n.state, n.flags, n.reason) == ("DOWN", frozenset({"NOT_RESPONDING"}), "Not responding")
    assert why_unavailable(n, None, None, None) == "down+not_responding: Not responding"
    (d,) = parse_reasons(text("sinfo-R-down.txt"))
    assert (d.node, d.state, d.reason) == ("node4", "down*", "Not responding")


def test_sinfo_reasons() -> None:
    assert parse_reasons(text("sinfo-R-none.txt")) == []
    (d,) = parse_reasons(text("sinfo-R-drain.txt"))
    assert (d.node, d.state, d.user) == ("node2", "drained", "root")
    assert d.reason == "ibfab: cable leaf-01/3 - dgx-0002/1: symbol errors 1.2e-9 BER x=y"


def test_reservations() -> None:
    assert parse_reservations(text("scontrol-show-reservation-none.txt")) == []
    (r,) = parse_reservations(text("scontrol-show-reservation-maint.txt"))
    assert (r.name, r.nodes, r.state, r.partition) == ("maint-ib", "node[3-4]", "ACTIVE", None)
    assert r.flags == {"MAINT", "SPEC_NODES"}


def test_salloc_granted_and_refused() -> None:
    assert parse_granted(text("salloc-granted.txt")) == "2"
    refused = text("salloc-drained-immediate.txt")
    assert parse_granted(refused) is None
    assert salloc_refusal(refused) == (
        "Required node not available (down, drained or reserved); "
        "Unable to allocate resources: Connection timed out"
    )
    assert salloc_refusal(text("salloc-bad-reservation.txt")) == (
        "Job submit/allocate failed: Requested reservation is invalid"
    )


def test_jobs_and_steps() -> None:
    (job,) = parse_jobs(text("squeue-job.txt"))
    assert (job.job_id, job.name, job.state, job.nodes) == ("2", "ibfab-sweep", "RUNNING", "node[3-4]")
    (step,) = parse_steps(text("squeue-steps.txt"))
    assert (step.step_id, step.name, step.nodes) == ("1.0", "ibfab-sweep/0/0/server", "node3")


def test_srun_launch_failures_are_not_task_failures() -> None:
    dead = text("srun-dead-node.txt")
    assert step_failure(dead) == (
        FailureKind.UNREACHABLE,
        "Task launch for StepId=2.2 failed on node node4: Communication connection failure",
    )
    outside = step_failure(text("srun-not-in-allocation.txt"))
    assert outside == (
        FailureKind.UNREACHABLE,
        "Unable to create step for job 2: Requested node configuration is not available",
    )
    task = text("srun-task-exit-3.txt").split("# stderr\n")[1].split("# exit")[0]
    assert step_failure(task) is None  # the task ran: its exit code is the tool's answer
    assert task_output(task) == "err\n"


def test_bad_text_is_a_parse_error_naming_the_line() -> None:
    with pytest.raises(ParseError, match=r"scontrol show node:2: .*expected NodeName"):
        parse_nodes(text("scontrol-show-node-idle.txt").splitlines()[0] + "\nsomething else\n")
    with pytest.raises(ParseError, match=r"sinfo -R:1"):
        parse_reasons("node1|idle\n")


def test_job_comments_keep_everything_after_the_id() -> None:
    text = "12|ibfab-request:0a1b2c3d\n13|\n14|a | b\n"
    assert parse_comments(text) == {"12": "ibfab-request:0a1b2c3d", "13": "", "14": "a | b"}
    with pytest.raises(ParseError, match=r"expected %i\|%k"):
        parse_comments("JOBID|COMMENT\n")
