"""``ibfab export systemd``: units for the daemon and the exporter that systemd accepts
(``systemd-analyze verify`` where it is installed; every key checked against systemd's own list
of items, or the documented one), with the user, store, restart policy and sandbox operators
expect, and ExecStart lines that are real ibfab command lines."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabric.cli.main import main
from fabric.exports.systemd import DAEMON_UNIT, EXPORTER_UNIT, KEYS, SYSUSERS

IBFAB = str(Path(shutil.which("ibfab") or Path(__file__).resolve().parents[2] / ".venv/bin/ibfab"))
# systemd.exec(5), systemd.service(5), systemd.unit(5): the directives these units may use, for
# machines where systemd cannot list its own (a container without it).
DOCUMENTED = {
    "Unit": {"Description", "Documentation", "Wants", "Requires", "After", "Before"},
    "Service": set(KEYS["Service"]) | {"ExecStop", "ExecReload", "ReadWritePaths"},
    "Install": {"WantedBy", "RequiredBy"},
}


def units(tmp_path: Path, *args: str) -> dict[str, str]:
    res = CliRunner().invoke(
        main, ["export", "systemd", "--ibfab", IBFAB, "-o", str(tmp_path / "units"), *args]
    )
    assert res.exit_code == 0, res.output
    return {p.name: p.read_text() for p in (tmp_path / "units").iterdir()}


def items(text: str) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    section = ""
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
            out[section] = {}
        elif line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[section].setdefault(key, []).append(value)
    return out


def systemd_items() -> dict[str, set[str]] | None:
    """systemd's own list of unit file items, by section; None where systemd is not here."""
    for binary in ("/lib/systemd/systemd", "/usr/lib/systemd/systemd"):
        if Path(binary).is_file():
            res = subprocess.run([binary, "--dump-configuration-items"], capture_output=True, text=True)
            if res.returncode == 0:
                known: dict[str, set[str]] = {}
                section = ""
                for line in res.stdout.splitlines():
                    if line.startswith("["):
                        section = line.strip("[]")
                    elif "=" in line:
                        known.setdefault(section, set()).add(line.split("=")[0])
                return known
    return None


def test_both_units_and_the_user_as_operators_expect_them(tmp_path: Path) -> None:
    files = units(tmp_path)
    assert set(files) == {DAEMON_UNIT, EXPORTER_UNIT, SYSUSERS}
    daemon, exporter = items(files[DAEMON_UNIT]), items(files[EXPORTER_UNIT])
    for unit in (daemon, exporter):
        s = unit["Service"]
        assert s["User"] == ["ibfab"] and s["Group"] == ["ibfab"]
        assert s["StateDirectory"] == ["ibfab"] and s["Restart"] == ["on-failure"]
        assert s["Environment"] == ["IBFAB_DATA_DIR=/var/lib/ibfab HOME=/var/lib/ibfab"]
        assert s["NoNewPrivileges"] == ["yes"] and s["ProtectSystem"] == ["strict"]
        assert s["CapabilityBoundingSet"] == [""] and unit["Install"]["WantedBy"] == ["multi-user.target"]
    assert shlex.split(daemon["Service"]["ExecStart"][0]) == [
        IBFAB,
        "daemon",
        "--db",
        "/var/lib/ibfab/ibfab.db",
        "--grace",
        "60",
    ]
    assert shlex.split(exporter["Service"]["ExecStart"][0])[1:] == [
        "exporter",
        "--listen",
        "127.0.0.1:9315",
        "--db",
        "/var/lib/ibfab/ibfab.db",
    ]
    # the daemon stops after its grace, reaches the MAD devices only; the exporter no device at all
    assert daemon["Service"]["TimeoutStopSec"] == ["90s"] and daemon["Service"]["DevicePolicy"] == ["closed"]
    assert daemon["Service"]["DeviceAllow"] == ["char-infiniband_mad rw"]
    assert exporter["Service"]["PrivateDevices"] == ["yes"] and "DeviceAllow" not in exporter["Service"]
    assert (
        files[SYSUSERS].splitlines()[1] == 'u ibfab - "ibfab fabric monitor" /var/lib/ibfab /usr/sbin/nologin'
    )


@pytest.mark.parametrize("unit", [DAEMON_UNIT, EXPORTER_UNIT])
def test_execstart_is_a_command_line_ibfab_accepts(tmp_path: Path, unit: str) -> None:
    argv = shlex.split(items(units(tmp_path)[unit])["Service"]["ExecStart"][0])
    res = CliRunner().invoke(main, [*argv[1:], "--help"])  # every option parsed before --help
    assert res.exit_code == 0, res.output


def test_systemd_accepts_them(tmp_path: Path) -> None:
    files = units(tmp_path)
    known = systemd_items()
    for name in (DAEMON_UNIT, EXPORTER_UNIT):
        for section, keys in items(files[name]).items():
            allowed = known.get(section, set()) if known is not None else DOCUMENTED[section]
            assert set(keys) <= allowed, f"{name} [{section}]: {set(keys) - allowed}"
            assert set(keys) <= set(KEYS[section])  # the module's own list stays true
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here: the keys were checked against the list")
    res = subprocess.run(
        [analyze, "verify", *(str(tmp_path / "units" / n) for n in (DAEMON_UNIT, EXPORTER_UNIT))],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0 and not res.stderr.strip(), res.stderr


def test_options_and_bad_values(tmp_path: Path) -> None:
    files = units(tmp_path, "--user", "fabmon", "--db", "/srv/ibfab/x.db", "--listen", "0.0.0.0:9400")
    exporter = items(files[EXPORTER_UNIT])["Service"]
    assert exporter["User"] == ["fabmon"] and "0.0.0.0:9400" in exporter["ExecStart"][0]
    assert "/srv/ibfab/x.db" in exporter["ExecStart"][0]
    out = CliRunner().invoke(main, ["export", "systemd", "--ibfab", IBFAB]).stdout
    assert out.startswith(f"# ---- {DAEMON_UNIT} ----\n[Unit]\n")
    for bad in (["--ibfab", "ibfab"], ["--listen", "9315"]):
        res = CliRunner().invoke(main, ["export", "systemd", *bad])
        assert res.exit_code == 2 and res.stderr.count("\n") == 1, res.output
    # a venv under /home stays readable to the service (read-only), elsewhere home is hidden
    res = CliRunner().invoke(main, ["export", "systemd", "--ibfab", "/home/ops/ibfab/.venv/bin/ibfab"])
    assert "ProtectHome=read-only" in res.stdout
