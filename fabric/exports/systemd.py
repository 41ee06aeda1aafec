"""systemd units for the two long-running ibfab processes, and the system user they run as.

* ``ibfab-daemon.service``: ``ibfab daemon`` runs the schedules (counter collections, sweeps); it
  runs the diag tools, so it reaches the HCA's management datagram device
  (``/dev/infiniband/umad*``), and SSH and Slurm for sweeps.
* ``ibfab-exporter.service``: ``ibfab exporter`` serves the store to Prometheus; it only reads the
  store and listens on one port, so it gets no devices at all.
* ``ibfab.conf`` for ``/usr/lib/sysusers.d/`` (``systemd-sysusers``): the ``ibfab`` system user,
  home ``/var/lib/ibfab``, where its SSH keys and known_hosts for sweeps live.

Both run as that dedicated user, with the store under ``StateDirectory=ibfab``
(``/var/lib/ibfab``, created and owned for it by systemd), ``Restart=on-failure`` and the sandbox
options that do not get in their way. The daemon stops within ``--grace`` plus a margin, so
systemd never kills a collection half-written (a snapshot is one transaction either way).

>>> "ExecStart=/opt/ibfab/bin/ibfab exporter" in exporter_unit(UnitSettings("/opt/ibfab/bin/ibfab"))
True
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

STATE_DIR = "/var/lib/ibfab"
DAEMON_UNIT = "ibfab-daemon.service"
EXPORTER_UNIT = "ibfab-exporter.service"
SYSUSERS = "ibfab.conf"

# Every key these units set, by section: the test checks each against systemd's own list where
# systemd-analyze is not installed to verify the files whole.
KEYS = {
    "Unit": ("Description", "Wants", "After"),
    "Service": (
        "Type",
        "User",
        "Group",
        "SupplementaryGroups",
        "StateDirectory",
        "StateDirectoryMode",
        "Environment",
        "ExecStart",
        "Restart",
        "RestartSec",
        "TimeoutStopSec",
        "KillMode",
        "UMask",
        "NoNewPrivileges",
        "ProtectSystem",
        "ProtectHome",
        "PrivateTmp",
        "PrivateDevices",
        "DevicePolicy",
        "DeviceAllow",
        "ProtectKernelTunables",
        "ProtectKernelModules",
        "ProtectKernelLogs",
        "ProtectControlGroups",
        "ProtectClock",
        "ProtectHostname",
        "RestrictSUIDSGID",
        "RestrictRealtime",
        "RestrictNamespaces",
        "RestrictAddressFamilies",
        "LockPersonality",
        "SystemCallArchitectures",
        "CapabilityBoundingSet",
    ),
    "Install": ("WantedBy",),
}


@dataclass(frozen=True, slots=True)
class UnitSettings:
    ibfab: str  # the absolute path of the ibfab command (the venv's script)
    user: str = "ibfab"
    db: str = f"{STATE_DIR}/ibfab.db"
    listen: str = "127.0.0.1:9315"
    grace_s: float = 60.0  # the daemon's --grace
    umad_group: str = "rdma"  # the group rdma-core's udev rules give /dev/infiniband/umad*


def _hardening(devices: bool, home: bool) -> list[str]:
    lines = [
        "UMask=0027",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        # the venv under /home or /root stays reachable (read-only); elsewhere home is hidden
        f"ProtectHome={'read-only' if home else 'yes'}",
        "PrivateTmp=yes",
        "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes",
        "ProtectKernelLogs=yes",
        "ProtectControlGroups=yes",
        "ProtectClock=yes",
        "ProtectHostname=yes",
        "RestrictSUIDSGID=yes",
        "RestrictRealtime=yes",
        "RestrictNamespaces=yes",
        "LockPersonality=yes",
        "SystemCallArchitectures=native",
        "CapabilityBoundingSet=",
    ]
    if devices:
        lines += [
            "# the diag tools open the HCA's MAD devices (/dev/infiniband/umad*, issm*): only those",
            "DevicePolicy=closed",
            "DeviceAllow=char-infiniband_mad rw",
            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
        ]
    else:
        lines += ["PrivateDevices=yes", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6"]
    return lines


def _service(
    s: UnitSettings,
    description: str,
    after: str,
    exec_args: list[str],
    extra: list[str],
    *,
    devices: bool,
    restart_s: int,
) -> str:
    lines = [
        "[Unit]",
        f"Description={description}",
        "Wants=network-online.target",
        f"After={after}",
        "",
        "[Service]",
        "Type=simple",
        f"User={s.user}",
        f"Group={s.user}",
        *extra,
        "# /var/lib/ibfab, created for the user: the store, and the user's home (SSH keys, known_hosts)",
        "StateDirectory=ibfab",
        "StateDirectoryMode=0750",
        f"Environment=IBFAB_DATA_DIR={STATE_DIR} HOME={STATE_DIR}",
        f"ExecStart={shlex.join([s.ibfab, *exec_args])}",
        "Restart=on-failure",
        f"RestartSec={restart_s}s",
        *_hardening(devices, s.ibfab.startswith(("/home/", "/root/"))),
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ]
    return "\n".join(lines)


def daemon_unit(s: UnitSettings) -> str:
    """``ibfab daemon``: the schedules; SIGTERM lets running jobs finish for ``grace_s``."""
    stop = int(s.grace_s) + 30
    return _service(
        s,
        "ibfab daemon: scheduled InfiniBand counter collections and probe sweeps",
        "network-online.target opensm.service",
        ["daemon", "--db", s.db, "--grace", f"{s.grace_s:g}"],
        [
            f"# members of {s.umad_group} may open /dev/infiniband/umad* (rdma-core's udev rules)",
            f"SupplementaryGroups={s.umad_group}",
            f"# --grace {s.grace_s:g} s for running jobs, then their tools are ended: stop well after",
            f"TimeoutStopSec={stop}s",
            "KillMode=mixed",
        ],
        devices=True,
        restart_s=30,
    )


def exporter_unit(s: UnitSettings) -> str:
    """``ibfab exporter``: reads the store, serves /metrics; no devices, no writes but the store's."""
    return _service(
        s,
        "ibfab exporter: InfiniBand link health and counters for Prometheus",
        "network-online.target",
        ["exporter", "--listen", s.listen, "--db", s.db],
        [],
        devices=False,
        restart_s=10,
    )


def sysusers(s: UnitSettings) -> str:
    """The system user, for /usr/lib/sysusers.d/ibfab.conf; it joins the umad group if there is one."""
    return (
        "# ibfab's system user: runs ibfab daemon and ibfab exporter (systemd-sysusers)\n"
        f'u {s.user} - "ibfab fabric monitor" {STATE_DIR} /usr/sbin/nologin\n'
        f"m {s.user} {s.umad_group}\n"
    )
