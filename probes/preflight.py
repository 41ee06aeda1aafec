"""HCA preflight: which RDMA devices and ports a host has, and in what state.

Remote hosts run a fixed POSIX sh script that dumps ``/sys/class/infiniband`` as ``key value``
lines (the sysfs root is a positional argument, never spliced into the script);
:func:`parse_sysfs_dump` turns that into :class:`HcaPort` records. This machine is read with
pyverbs when it is importable, else from the same sysfs files. No device is a clean answer
(:class:`NoRdmaDevice` locally, an empty list remotely), not a crash.

>>> ports = parse_sysfs_dump(SAMPLE_DUMP, "dgx-01")
>>> [(p.device, p.port, p.state, p.rate_gbps, p.lid) for p in ports]
[('mlx5_0', 1, 'ACTIVE', 400.0, 26)]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from probes.fanout import fan_out
from probes.inventory import HostEntry
from probes.transport import CommandResult, FailureKind, Transport
from topology.errors import IbfabError, ParseError
from topology.model import Guid, normalise_guid

SYSFS_ROOT = "/sys/class/infiniband"
TOOL = "hca-sysfs"
NO_RDMA = "no RDMA device"

# Fixed content: the only input is $1, the sysfs root, used as a quoted path.
HCA_SCRIPT = r"""d="${1:-/sys/class/infiniband}"
if [ ! -d "$d" ]; then echo "no-rdma"; exit 0; fi
for dev in "$d"/*; do
  [ -d "$dev" ] || continue
  printf 'device %s\n' "${dev##*/}"
  printf 'node_guid %s\n' "$(cat "$dev/node_guid" 2>/dev/null)"
  printf 'node_desc %s\n' "$(cat "$dev/node_desc" 2>/dev/null)"
  for p in "$dev"/ports/*; do
    [ -d "$p" ] || continue
    printf 'port %s\n' "${p##*/}"
    for f in state phys_state rate link_layer lid; do
      printf '%s %s\n' "$f" "$(cat "$p/$f" 2>/dev/null)"
    done
  done
done
echo end
"""

SAMPLE_DUMP = """device mlx5_0
node_guid b859:9f03:00a1:2b3c
node_desc dgx-01 HCA-1
port 1
state 4: ACTIVE
phys_state 5: LinkUp
rate 400 Gb/sec (4X NDR)
link_layer InfiniBand
lid 0x1a
end
"""

_PORT_FIELDS = ("state", "phys_state", "rate", "link_layer", "lid")
# From the start of a number only: a search from every digit of a long run is quadratic in it.
_RATE_RE = re.compile(r"(?<![\d.])([\d.]++)\s*+Gb/sec")
# ibv_port_state / phys state / link speed and width enums, as sysfs spells them.
_STATE = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
_PHYS = {
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "Phy Test",
}
_SPEED_GBPS = {1: 2.5, 2: 5.0, 4: 10.0, 8: 10.0, 16: 14.0, 32: 25.0, 64: 50.0, 128: 100.0, 256: 200.0}
_WIDTH = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}
_LINK_LAYER = {0: "InfiniBand", 1: "InfiniBand", 2: "Ethernet"}


class NoRdmaDevice(IbfabError):
    """This host has no RDMA device (or no RDMA support in its kernel)."""

    def __init__(self, where: str = "this host", detail: str = "") -> None:
        super().__init__(f"{NO_RDMA} found on {where}" + (f" ({detail})" if detail else ""))


@dataclass(frozen=True, slots=True)
class HcaPort:
    host: str
    device: str
    port: int
    state: str  # ACTIVE, DOWN, INIT, ARMED
    phys_state: str  # LinkUp, Polling, Disabled, ...
    rate_gbps: float
    link_layer: str  # InfiniBand or Ethernet
    lid: int
    guid: Guid | None  # node GUID of the device
    node_desc: str = ""

    @property
    def up(self) -> bool:
        return self.state == "ACTIVE" and self.phys_state == "LinkUp"


@dataclass(frozen=True, slots=True)
class HostHcas:
    """Preflight answer of one host: its ports, or why we do not know them."""

    host: str
    ports: tuple[HcaPort, ...]
    result: CommandResult

    @property
    def problem(self) -> str | None:
        """None when the host answered with at least one port up; else one line saying what is wrong."""
        r = self.result
        if r.failure is not None:
            return r.message
        if r.exit_code != 0:
            last = next((ln for ln in reversed(r.stderr.splitlines()) if ln.strip()), "")
            return f"preflight exited {r.exit_code}" + (f": {last.strip()}" if last else "")
        if not self.ports:
            return NO_RDMA
        if not any(p.up for p in self.ports):
            return "no port is ACTIVE/LinkUp"
        return None

    def summary(self) -> str:
        """Host-independent one-liner, so identical hosts fold: ``2 ports: 2 up at 400 Gb/s InfiniBand``."""
        problem = self.problem
        if problem is not None and (self.result.failure is not None or not self.ports):
            return problem
        parts = []
        for p in self.ports:
            rate = f"{p.rate_gbps:g} Gb/s"
            parts.append(f"{p.device}/{p.port} {p.state} {p.phys_state} {rate} {p.link_layer}")
        return "; ".join(parts)


def remote_hca_argv(sysfs_root: str = SYSFS_ROOT) -> list[str]:
    """argv that prints the sysfs dump on any POSIX host (the script is fixed text)."""
    return ["sh", "-c", HCA_SCRIPT, "ibfab-preflight", sysfs_root]


def parse_sysfs_dump(text: str, host: str, source: str | None = None) -> list[HcaPort]:
    """Parse the output of :data:`HCA_SCRIPT`; ``no-rdma`` or no devices gives ``[]``."""
    src = source or f"{host}:{SYSFS_ROOT}"
    ports: list[HcaPort] = []
    device: str | None = None
    guid: Guid | None = None
    desc = ""
    port: dict[str, str] | None = None
    port_no = 0
    port_line = (0, "")

    def flush() -> None:
        if port is None or device is None:
            return
        missing = [f for f in _PORT_FIELDS if f not in port]
        if missing:
            raise ParseError(TOOL, src, port_line[0], port_line[1], f"port misses {', '.join(missing)}")
        ports.append(_port_record(host, device, port_no, port, guid, desc, src, port_line))

    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        key, _, value = line.partition(" ")
        value = value.strip()
        if key == "no-rdma" or key == "end":
            continue
        if key == "device":
            flush()
            device, guid, desc, port = value, None, "", None
        elif device is None:
            raise ParseError(TOOL, src, lineno, line, "expected a 'device' line first")
        elif key == "node_guid":
            guid = _guid(value, src, lineno, line)
        elif key == "node_desc":
            desc = value
        elif key == "port":
            flush()
            if not value.isdigit():
                raise ParseError(TOOL, src, lineno, line, "port number is not a number")
            port, port_no, port_line = {}, int(value), (lineno, line)
        elif key in _PORT_FIELDS and port is not None:
            port[key] = value
        else:
            raise ParseError(TOOL, src, lineno, line, f"unexpected key {key!r}")
    flush()
    return ports


def read_sysfs(host: str = "localhost", root: str | Path = SYSFS_ROOT) -> list[HcaPort]:
    """Read the HCA ports of this machine from sysfs; ``[]`` when there is none."""
    return parse_sysfs_dump(dump_sysfs(root), host, str(root))


def dump_sysfs(root: str | Path = SYSFS_ROOT) -> str:
    """The same text :data:`HCA_SCRIPT` prints, produced in Python for this machine."""
    base = Path(root)
    if not base.is_dir():
        return "no-rdma\n"
    lines: list[str] = []
    for dev in sorted(p for p in base.iterdir() if p.is_dir()):
        lines += [
            f"device {dev.name}",
            f"node_guid {_cat(dev / 'node_guid')}",
            f"node_desc {_cat(dev / 'node_desc')}",
        ]
        ports_dir = dev / "ports"
        ports = sorted(p for p in ports_dir.iterdir() if p.is_dir()) if ports_dir.is_dir() else []
        for p in ports:
            lines.append(f"port {p.name}")
            lines += [f"{f} {_cat(p / f)}" for f in _PORT_FIELDS]
    lines.append("end")
    return "\n".join(lines) + "\n"


def local_hcas(host: str = "localhost", sysfs_root: str | Path = SYSFS_ROOT) -> list[HcaPort]:
    """HCA ports of this machine via pyverbs (when importable), else sysfs; NoRdmaDevice when none."""
    ports: list[HcaPort] | None = None
    if str(sysfs_root) == SYSFS_ROOT:
        ports = _pyverbs_ports(host)
    if ports is None:
        ports = read_sysfs(host, sysfs_root)
    if not ports:
        where = "this host" if str(sysfs_root) == SYSFS_ROOT else str(sysfs_root)
        raise NoRdmaDevice(where)
    return ports


def preflight_hosts(
    hosts: Iterable[HostEntry],
    transport_factory: Callable[[HostEntry], Transport],
    concurrency: int = 16,
    timeout: float = 30.0,
    sysfs_root: str = SYSFS_ROOT,
    workers: int | None = None,
) -> list[HostHcas]:
    """Run the sysfs dump on every host; one :class:`HostHcas` per host, sorted by name."""
    results = fan_out(
        hosts, remote_hca_argv(sysfs_root), transport_factory, concurrency, timeout, workers=workers
    )
    out = []
    for r in results:
        ports: Sequence[HcaPort] = ()
        if r.ok:
            try:
                ports = parse_sysfs_dump(r.stdout, r.host)
            except ParseError as exc:
                r = replace(
                    r, failure=FailureKind.ERROR, message=f"unreadable preflight output: {exc.problem}"
                )
        out.append(HostHcas(r.host, tuple(ports), r))
    return out


def _pyverbs_ports(host: str) -> list[HcaPort] | None:
    """Ports seen by libibverbs, or None when pyverbs is not installed."""
    try:
        from pyverbs import device as verbs
        from pyverbs.pyverbs_error import PyverbsError
    except ImportError:
        return None
    try:
        devices = verbs.get_device_list()
    except PyverbsError as exc:
        # libibverbs says "Failed to get devices list" when the kernel has no RDMA at all.
        raise NoRdmaDevice("this host", f"libibverbs: {exc}") from exc
    ports: list[HcaPort] = []
    for dev in devices:
        name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        try:
            with verbs.Context(name=name) as ctx:
                attr = ctx.query_device()
                guid = normalise_guid(verbs.guid_format(attr.node_guid).replace(":", ""))
                desc = _cat(Path(SYSFS_ROOT) / name / "node_desc")
                for port_no in range(1, attr.phys_port_cnt + 1):
                    pa = ctx.query_port(port_no)
                    rate = _WIDTH.get(pa.active_width, 0) * _SPEED_GBPS.get(pa.active_speed, 0.0)
                    ports.append(
                        HcaPort(
                            host,
                            name,
                            port_no,
                            _STATE.get(pa.state, str(pa.state)),
                            _PHYS.get(pa.phys_state, str(pa.phys_state)),
                            rate,
                            _LINK_LAYER.get(pa.link_layer, str(pa.link_layer)),
                            int(pa.lid),
                            guid,
                            desc,
                        )
                    )
        except PyverbsError as exc:
            raise NoRdmaDevice("this host", f"{name}: {exc}") from exc
    return ports


def _port_record(
    host: str,
    device: str,
    port_no: int,
    fields: dict[str, str],
    guid: Guid | None,
    desc: str,
    src: str,
    where: tuple[int, str],
) -> HcaPort:
    # sysfs spells them "4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", "0x1a".
    state = fields["state"].partition(":")[2].strip() or fields["state"]
    phys = fields["phys_state"].partition(":")[2].strip() or fields["phys_state"]
    m = _RATE_RE.search(fields["rate"])
    rate = float(m.group(1)) if m else 0.0
    try:
        lid = int(fields["lid"], 16) if fields["lid"] else 0
    except ValueError as exc:
        raise ParseError(TOOL, src, where[0], where[1], f"bad lid {fields['lid']!r}") from exc
    return HcaPort(host, device, port_no, state, phys, rate, fields["link_layer"], lid, guid, desc)


def _guid(value: str, src: str, lineno: int, line: str) -> Guid | None:
    if not value:
        return None
    try:
        return normalise_guid(value.replace(":", ""))
    except ValueError as exc:
        raise ParseError(TOOL, src, lineno, line, "bad node_guid") from exc


def _cat(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
