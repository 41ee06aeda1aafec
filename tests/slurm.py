"""A real Slurm cluster on loopback for tests: one slurmctld and N ``slurmd -N nodeK``.

Each node is a slurmd of its own
(``NodeAddr=127.0.0.1K``, its own port) started under ``unshare --uts`` so its jobs see their own
``hostname``; config, state, spools, PID files and logs live in a private directory; ports are
picked free. ``SLURM_CONF`` is given only to the processes the fixture starts and to the clients
a test runs (``cluster.env``), never exported to the test process.

Every process the cluster starts carries ``IBFAB_SLURM_TEST=<directory>`` in its environment, and
every job step inherits ``SLURM_CONF=<directory>/slurm.conf`` from its client, so
:meth:`SlurmCluster.ours` finds anything that belongs to this cluster by reading
``/proc/*/environ``. Teardown stops the recorded daemon PIDs only, then checks nothing of ours is
left. Use :func:`start_slurm` (a context manager) or the ``slurm`` fixture (import it and
``slurm_cluster`` into a test module); the session cluster is checked clean after every test.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.servers import free_port

SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
PARTITION = "ibfab"
MARKER = "IBFAB_SLURM_TEST"


@dataclass
class SlurmCluster:
    directory: Path
    nodes: tuple[str, ...]
    addresses: dict[str, str]
    ctld_pid: int
    node_pids: dict[str, int]
    _procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    @property
    def conf(self) -> Path:
        return self.directory / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """What a Slurm client needs to talk to this cluster (pass it to the commands, not os.environ)."""
        return {"SLURM_CONF": str(self.conf)}

    @property
    def pids(self) -> set[int]:
        return {self.ctld_pid, *self.node_pids.values()}

    def client(
        self, *argv: str, timeout: float = 30.0, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command against this cluster (test-side checks only)."""
        return subprocess.run(
            list(argv),
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )

    def states(self) -> dict[str, str]:
        out = self.client("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout
        return dict(line.split(None, 1) for line in out.splitlines() if line.strip())

    def wait_idle(self, nodes: tuple[str, ...] | None = None, timeout: float = 30.0) -> None:
        """Until every (given) node is plain ``idle`` (``idle*`` right after a resume is not enough)."""
        wanted = nodes or self.nodes
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = self.states()
            if all(states.get(n) == "idle" for n in wanted):
                return
            time.sleep(0.1)
        raise RuntimeError(f"slurm nodes not idle after {timeout:g} s: {states}; {self.log_tail()}")

    def jobs(self) -> list[str]:
        out = self.client("squeue", "-h", "-o", "%i %j %T", check=False).stdout
        return [line for line in out.splitlines() if line.strip()]

    def ours(self) -> list[int]:
        """PIDs of live processes that carry this cluster's directory in their environment."""
        needle = str(self.directory).encode()
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                if needle in (proc / "environ").read_bytes() and _alive(int(proc.name)):
                    found.append(int(proc.name))
            except OSError:
                continue
        return sorted(found)

    def strays(self) -> list[int]:
        """Our processes other than the daemons and slurmctld's own helper (job steps, slurmstepd, srun).

        slurmctld forks ``slurmscriptd`` at start and keeps it for its life; it goes with slurmctld.
        """
        return [p for p in self.ours() if p not in self.pids and _parent(p) != self.ctld_pid]

    def kill_node(self, node: str) -> int:
        """SIGKILL one node's slurmd by the PID recorded at start (a node that dies); returns it."""
        pid = self.node_pids[node]
        os.kill(pid, signal.SIGKILL)
        proc = self._procs.get(pid)
        if proc is not None:
            proc.wait(10)
        return pid

    def log_tail(self, lines: int = 5) -> str:
        log = self.directory / "slurmctld.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return " | ".join(text.splitlines()[-lines:])


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _config(
    directory: Path, nodes: tuple[str, ...], addresses: dict[str, str], ports: dict[str, int], cpus: int = 2
) -> str:
    ctld_port = free_port()
    lines = [
        "ClusterName=ibfabtest",
        f"SlurmctldHost={socket.gethostname()}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        "AuthType=auth/none",
        "CredType=cred/none",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={directory}/state",
        f"SlurmdSpoolDir={directory}/spool/%n",
        f"SlurmctldPidFile={directory}/slurmctld.pid",
        f"SlurmdPidFile={directory}/slurmd-%n.pid",
        f"SlurmctldLogFile={directory}/slurmctld.log",
        f"SlurmdLogFile={directory}/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "MpiDefault=none",
        "MailProg=/bin/true",
        f"PlugStackConfig={directory}/plugstack.conf",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "TopologyPlugin=topology/tree",
        # A dead slurmd is noticed within seconds, not minutes; launches to it fail fast.
        "SlurmdTimeout=10",
        "MessageTimeout=5",
        "KillWait=2",
        # More CPUs than the machine has (a GPU node's one rank per GPU): slurmd reports the config's.
        *(["SlurmdParameters=config_overrides"] if cpus != 2 else []),
        *(
            f"NodeName={n} NodeHostname=localhost NodeAddr={addresses[n]} Port={ports[n]} CPUs={cpus} State=UNKNOWN"
            for n in nodes
        ),
        f"PartitionName={PARTITION} Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP",
    ]
    return "\n".join(lines) + "\n"


def _topology(nodes: tuple[str, ...]) -> str:
    # Two leaves of two nodes under one spine: what `--switches=1` and placement can see.
    half = (len(nodes) + 1) // 2
    leaves = [nodes[:half], nodes[half:]]
    lines = [f"SwitchName=leaf{i + 1} Nodes={','.join(ns)}" for i, ns in enumerate(leaves) if ns]
    lines.append(f"SwitchName=spine Switches=leaf[1-{len(lines)}]")
    return "\n".join(lines) + "\n"


@contextmanager
def start_slurm(directory: Path, nodes: int = 4, cpus: int = 2) -> Iterator[SlurmCluster]:
    """Start slurmctld and ``nodes`` slurmd on loopback, wait until all are idle, stop them by PID.
    Each node has ``cpus`` CPUs (more than the machine's: slurmd takes the config's word)."""
    if not (os.path.exists(SLURMCTLD) and os.path.exists(SLURMD) and shutil.which("srun")):
        pytest.skip("slurmctld, slurmd and slurm-client are not all installed")
    if os.geteuid() != 0:
        pytest.skip("slurmd needs root")
    if not 1 <= nodes <= 9:
        raise ValueError("1 to 9 nodes (NodeAddr 127.0.0.11 ... 127.0.0.19)")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "state").mkdir(exist_ok=True)
    (directory / "spool").mkdir(exist_ok=True)
    (directory / "plugstack.conf").write_text("")
    names = tuple(f"node{k}" for k in range(1, nodes + 1))
    addresses = {n: f"127.0.0.1{k}" for k, n in enumerate(names, 1)}
    ports = {n: free_port(addresses[n]) for n in names}
    (directory / "slurm.conf").write_text(_config(directory, names, addresses, ports, cpus))
    (directory / "topology.conf").write_text(_topology(names))
    env = {**os.environ, "SLURM_CONF": str(directory / "slurm.conf"), MARKER: str(directory)}
    procs: dict[int, subprocess.Popen[bytes]] = {}

    def spawn(argv: list[str], log: str) -> int:
        with open(directory / log, "wb") as out:
            proc = subprocess.Popen(
                argv,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        procs[proc.pid] = proc
        return proc.pid

    conf = str(directory / "slurm.conf")
    cluster: SlurmCluster | None = None
    try:
        ctld = spawn([SLURMCTLD, "-D", "-c", "-f", conf], "slurmctld.out")
        node_pids = {
            # unshare execs sh, which execs slurmd: the PID we record is slurmd's.
            n: spawn(
                ["unshare", "--uts", "sh", "-c", f'hostname {n} && exec {SLURMD} -D -N {n} -f "$SLURM_CONF"'],
                f"{n}.out",
            )
            for n in names
        }
        cluster = SlurmCluster(directory, names, addresses, ctld, node_pids, procs)
        cluster.wait_idle(timeout=60)
        yield cluster
    finally:
        _stop_all(procs)
        if cluster is not None:
            left = _wait_gone(cluster, 10.0)
            if left:
                for pid in left:  # ours by the marker; never leave them behind, but say so
                    _kill(pid, signal.SIGKILL)
                raise AssertionError(f"slurm test cluster left processes running: {left}")


def _kill(pid: int, sig: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, sig)


def _stop_all(procs: dict[int, subprocess.Popen[bytes]]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 10
    for proc in procs.values():
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _wait_gone(cluster: SlurmCluster, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    left = cluster.ours()
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = cluster.ours()
    return left


def check_clean(cluster: SlurmCluster, timeout: float = 15.0) -> None:
    """No job is queued or running and no step process is left; raise (after cleaning up) if not."""
    deadline = time.monotonic() + timeout
    jobs, strays = cluster.jobs(), cluster.strays()
    while (jobs or strays) and time.monotonic() < deadline:
        time.sleep(0.1)
        jobs, strays = cluster.jobs(), cluster.strays()
    if jobs or strays:
        cluster.client("scancel", "--user", "root", check=False)
        raise AssertionError(f"left behind on the slurm cluster: jobs {jobs}, processes {strays}")


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One 4-node cluster for the whole session (start-up costs about a second of 2 CPUs)."""
    with start_slurm(tmp_path_factory.mktemp("slurm"), nodes=4) as cluster:
        yield cluster


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The session cluster, all nodes idle before the test, and no job or step left after it."""
    slurm_cluster.wait_idle()
    yield slurm_cluster
    check_clean(slurm_cluster)
    # Leave it as found for the next test; a drain the test forgot to lift is its failure.
    drained = {n: s for n, s in slurm_cluster.states().items() if s.rstrip("*") != "idle"}
    for n in drained:
        slurm_cluster.client("scontrol", "update", f"NodeName={n}", "State=RESUME", check=False)
    if drained:
        slurm_cluster.wait_idle()
        raise AssertionError(f"the test left slurm nodes not idle: {drained}")
