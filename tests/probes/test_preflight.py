"""HCA preflight: the sysfs dump script, its parser, the local path, and ``ibfab hca``."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from probes.inventory import HostEntry
from probes.preflight import (
    HCA_SCRIPT,
    HostHcas,
    NoRdmaDevice,
    dump_sysfs,
    local_hcas,
    parse_sysfs_dump,
    preflight_hosts,
    read_sysfs,
    remote_hca_argv,
)
from probes.runner import LocalTransport
from tests.conftest import REALDATA
from topology.errors import ParseError

IBSTATUS = REALDATA / "ibstat" / "gpud-ibstatus-a100-8xhdr-azure.txt"


def make_sysfs(root: Path, devices: dict[str, dict[str, object]] | None = None) -> Path:
    """A /sys/class/infiniband look-alike: two HCAs, one port up at NDR, one down, one up at HDR."""
    devices = devices or {
        "mlx5_0": {
            "node_guid": "b859:9f03:00a1:2b3c",
            "node_desc": "dgx-01 HCA-1",
            "ports": {"1": ("4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", "InfiniBand", "0x1a")},
        },
        "mlx5_1": {
            "node_guid": "b859:9f03:00a1:2b3d",
            "node_desc": "dgx-01 HCA-2",
            "ports": {
                "1": ("1: DOWN", "3: Disabled", "40 Gb/sec (4X QDR)", "InfiniBand", "0x0"),
                "2": ("4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)", "InfiniBand", "0x22"),
            },
        },
    }
    for dev, info in devices.items():
        d = root / dev
        d.mkdir(parents=True)
        (d / "node_guid").write_text(f"{info['node_guid']}\n")
        (d / "node_desc").write_text(f"{info['node_desc']}\n")
        ports = info["ports"]
        assert isinstance(ports, dict)
        for port, values in ports.items():
            p = d / "ports" / port
            p.mkdir(parents=True)
            for name, value in zip(("state", "phys_state", "rate", "link_layer", "lid"), values, strict=True):
                (p / name).write_text(f"{value}\n")
    return root


def run_script(root: Path) -> str:
    done = subprocess.run(remote_hca_argv(str(root)), capture_output=True, text=True, check=True, timeout=10)
    return done.stdout


def test_script_output_parses_into_ports(tmp_path: Path) -> None:
    root = make_sysfs(tmp_path / "ib")
    text = run_script(root)
    ports = parse_sysfs_dump(text, "dgx-01")
    assert [(p.device, p.port, p.state, p.phys_state, p.rate_gbps, p.lid, p.up) for p in ports] == [
        ("mlx5_0", 1, "ACTIVE", "LinkUp", 400.0, 26, True),
        ("mlx5_1", 1, "DOWN", "Disabled", 40.0, 0, False),
        ("mlx5_1", 2, "ACTIVE", "LinkUp", 200.0, 34, True),
    ]
    assert ports[0].guid == "0xb8599f0300a12b3c" and ports[2].guid == "0xb8599f0300a12b3d"
    assert ports[0].node_desc == "dgx-01 HCA-1" and ports[0].link_layer == "InfiniBand"
    assert {p.host for p in ports} == {"dgx-01"}
    # the Python reader for this machine prints exactly what the remote script prints
    assert dump_sysfs(root) == text
    assert read_sysfs("dgx-01", root) == ports


def test_script_takes_the_root_as_an_argument_not_as_code(tmp_path: Path) -> None:
    victim = tmp_path / "pwned"
    argv = remote_hca_argv(f"/nonexistent; touch {victim}")
    assert argv[2] == HCA_SCRIPT
    assert run_script(Path(argv[4])) == "no-rdma\n"
    assert not victim.exists()


def test_sysfs_values_as_ibstatus_printed_them_on_a_real_a100(tmp_path: Path) -> None:
    # ibstatus is a shell script that cats these sysfs files; rebuild the tree from its output.
    blocks = re.findall(
        r"Infiniband device '(\S+)' port (\d+) status:\n(.*?)(?:\n\n|\Z)", IBSTATUS.read_text(), re.DOTALL
    )
    assert len(blocks) == 9
    devices: dict[str, dict[str, object]] = {}
    for dev, port, body in blocks:
        f = dict(re.findall(r"^\s+([a-z_ ]+):\s+(.*?)\s*$", body, re.MULTILINE))
        values = (f["state"], f["phys state"], f["rate"], f["link_layer"], f["base lid"])
        devices[dev] = {"node_guid": "0015:5dff:fd34:11eb", "node_desc": "a100", "ports": {port: values}}
    ports = parse_sysfs_dump(run_script(make_sysfs(tmp_path / "ib", devices)), "a100-vm")
    assert len(ports) == 9
    assert all(p.up and p.rate_gbps == 200.0 and p.link_layer == "InfiniBand" for p in ports[:8])
    # the ninth is the VM's Ethernet function: up, 40 Gb/s QDR-rated, no LID
    last = ports[8]
    assert (last.device, last.link_layer, last.rate_gbps, last.lid, last.up) == (
        "mlx5_8",
        "Ethernet",
        40.0,
        0,
        True,
    )
    assert (ports[0].device, ports[0].lid) == ("mlx5_0", 0x33BF)
    assert (ports[1].device, ports[1].lid) == ("mlx5_1", 0x33BE)


def test_empty_or_missing_sysfs_is_no_rdma_device_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert run_script(tmp_path / "empty") == "end\n"
    assert parse_sysfs_dump("end\n", "h") == []
    assert parse_sysfs_dump("no-rdma\n", "h") == []
    # this machine has no /sys/class/infiniband at all
    assert run_script(Path("/sys/class/infiniband")) == "no-rdma\n"


@pytest.mark.parametrize(
    ("text", "lineno", "problem"),
    [
        ("port 1\n", 1, "expected a 'device' line first"),
        ("device mlx5_0\nnode_guid zz:top\n", 2, "bad node_guid"),
        ("device mlx5_0\nport one\n", 2, "port number is not a number"),
        ("device mlx5_0\nport 1\nstate 4: ACTIVE\nend\n", 2, "port misses phys_state, rate, link_layer, lid"),
        ("device mlx5_0\ncolour blue\n", 2, "unexpected key 'colour'"),
        ("device m\nport 1\nstate x\nphys_state y\nrate 0\nlink_layer IB\nlid zz\n", 2, "bad lid 'zz'"),
    ],
)
def test_bad_dump_is_a_parse_error_with_line_number(text: str, lineno: int, problem: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_sysfs_dump(text, "h1")
    assert (info.value.lineno, info.value.problem, info.value.source) == (
        lineno,
        problem,
        "h1:/sys/class/infiniband",
    )


def test_local_hcas_on_this_machine_is_a_clean_no_rdma_device() -> None:
    with pytest.raises(NoRdmaDevice, match=r"^no RDMA device found on this host"):
        local_hcas()


def test_local_hcas_reads_a_given_sysfs_tree(tmp_path: Path) -> None:
    ports = local_hcas("me", make_sysfs(tmp_path / "ib"))
    assert [(p.device, p.port) for p in ports] == [("mlx5_0", 1), ("mlx5_1", 1), ("mlx5_1", 2)]
    (tmp_path / "none").mkdir()
    with pytest.raises(NoRdmaDevice, match=f"^no RDMA device found on {tmp_path / 'none'}$"):
        local_hcas("me", tmp_path / "none")


def test_preflight_hosts_over_local_transport_summarises_per_host(tmp_path: Path) -> None:
    root = make_sysfs(tmp_path / "ib")
    reports = preflight_hosts(
        [HostEntry("b"), HostEntry("a")], lambda e: LocalTransport(e.name), sysfs_root=str(root)
    )
    assert [r.host for r in reports] == ["a", "b"]
    assert reports[0].problem is None
    assert reports[0].summary() == (
        "mlx5_0/1 ACTIVE LinkUp 400 Gb/s InfiniBand; mlx5_1/1 DOWN Disabled 40 Gb/s InfiniBand; "
        "mlx5_1/2 ACTIVE LinkUp 200 Gb/s InfiniBand"
    )
    none = preflight_hosts([HostEntry("c")], lambda e: LocalTransport(e.name), sysfs_root=str(tmp_path / "x"))
    assert isinstance(none[0], HostHcas) and none[0].problem == "no RDMA device"


def test_cli_hca_without_device_is_one_line_and_non_zero() -> None:
    done = subprocess.run(
        [str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "ibfab"), "hca"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("ibfab: error: no RDMA device found on this host")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_cli_hca_table_and_json(tmp_path: Path) -> None:
    root = make_sysfs(tmp_path / "ib")
    res = CliRunner().invoke(main, ["hca", "--sysfs-root", str(root), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [(d["device"], d["port"], d["state"], d["rate_gbps"], d["lid"]) for d in data] == [
        ("mlx5_0", 1, "ACTIVE", 400.0, 26),
        ("mlx5_1", 1, "DOWN", 40.0, 0),
        ("mlx5_1", 2, "ACTIVE", 200.0, 34),
    ]
    res = CliRunner().invoke(main, ["hca", "--sysfs-root", str(root)])
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["DEVICE", "PORT", "STATE", "PHYS", "GB/S", "LINK", "LID", "GUID", "DESC"]
    assert lines[2].split() == [
        "mlx5_0", "1", "ACTIVE", "LinkUp", "400", "InfiniBand", "26", "0xb8599f0300a12b3c", "dgx-01", "HCA-1",
    ]  # fmt: skip
