"""Host inventory parsing, ssh_config merging, fan-out over local transports, folding, host locks."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from probes.fanout import HostBusy, HostLocks, fan_out, fold
from probes.inventory import (
    HostEntry,
    expand_hosts,
    fold_names,
    host_sort_key,
    parse_host_spec,
    parse_inventory,
    read_inventory,
)
from probes.runner import LocalTransport
from probes.transport import CommandResult, FailureKind
from topology.errors import UsageError

TOML = """
[defaults]
user = "root"
key_file = "~/.ssh/id_ed25519"

[[hosts]]
name = "dgx-[0001-0004]"
address = "10.1.0.[11-14]"
jump = "bastion"

[[hosts]]
name = "bastion"
address = "203.0.113.7"
port = 2222
user = "ops"

[[hosts]]
name = "login1"
jump = "admin@gw.example.org:2200"
"""


def test_toml_inventory_expands_ranges_pairs_addresses_and_resolves_jumps() -> None:
    inv = parse_inventory(TOML, "cluster.toml")
    assert inv.names() == ["bastion", "dgx-0001", "dgx-0002", "dgx-0003", "dgx-0004", "login1"]
    dgx3 = inv.get("dgx-0003")
    assert dgx3.address == "10.1.0.13"
    assert dgx3.user == "root" and dgx3.key_file == "~/.ssh/id_ed25519" and dgx3.port is None
    assert dgx3.jump == HostEntry("bastion", "203.0.113.7", "ops", 2222, "~/.ssh/id_ed25519")
    assert inv.get("login1").jump == HostEntry("gw.example.org", None, "admin", 2200)
    assert inv.get("login1").connect_address == "login1"


def test_line_inventory_is_the_same_model() -> None:
    text = "# cluster\nnode[1-3] address=127.0.0.[2-4] user=root port=2022  # three\n\nbastion address=::1\n"
    inv = parse_inventory(text, "hosts.txt")
    assert inv.names() == ["bastion", "node1", "node2", "node3"]
    assert inv.get("node2") == HostEntry("node2", "127.0.0.3", "root", 2022)
    assert inv.get("bastion").address == "::1"


def test_select_takes_a_host_range_and_refuses_unknown_names() -> None:
    inv = parse_inventory(TOML, "cluster.toml")
    assert inv.select("dgx-[0002-0003]").names() == ["dgx-0002", "dgx-0003"]
    with pytest.raises(UsageError, match=r"not in the inventory: dgx-\[0007-0008\]"):
        inv.select("dgx-[0003,0007-0008]")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ok1\nbad;rm address=1.2.3.4\n", r"^hosts\.txt:2: bad host name 'bad;rm'"),
        ("ok1 user=root;id\n", r"^hosts\.txt:1: bad user name 'root;id'"),
        ("ok1 address=$(reboot)\n", r"^hosts\.txt:1: bad"),
        ("ok1 port=70000\n", r"^hosts\.txt:1: bad port '70000'"),
        ("ok1 colour=blue\n", r"^hosts\.txt:1: unknown setting\(s\) colour"),
        ("ok1\nok1\n", r"^hosts\.txt:2: host 'ok1' already defined \(hosts\.txt:1\)"),
        ("n[1-3] address=10.0.0.[1-2]\n", r"^hosts\.txt:1: 3 name\(s\) but 2 address\(es\)"),
        ("n[1-2 user=root\n", r"^hosts\.txt:1: bad host range 'n\[1-2'"),
        # ClusterShell would look '@rack1' up in its group files (and raise its own error)
        ("@rack1 user=root\n", r"^hosts\.txt:1: bad host range '@rack1': node groups"),
        ("root\n@10.0.0.1:22\n", r"^hosts\.txt:2: bad host range"),
        ("ok1 user\n", r"^hosts\.txt:1: expected key=value, got 'user'"),
        ("a jump=b\nb jump=c\n", r"^hosts\.txt:1: jump host 'b' itself needs a jump host"),
    ],
)
def test_bad_line_inventory_is_one_usage_error_naming_file_and_line(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        parse_inventory(text, "hosts.txt")
    assert "\n" not in info.value.one_line()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[hosts]]\nname = "x"\nuser = "a b"\n', r"^inv\.toml: host 'x': bad user name 'a b'"),
        ('[[hosts]]\nname = "x"\nport = "22x"\n', r"^inv\.toml: host 'x': bad port '22x'"),
        ('[[hosts]]\nuser = "root"\n', r"^inv\.toml: host 'entry 1': a host needs a name"),
        ('[[hosts]]\nname = "x"\nport = true\n', r"^inv\.toml: host 'x': bad port True"),
        ('[[hosts]]\nname = "x"\naddress = 5\n', r"^inv\.toml: host 'x': address must be a string"),
        ('[hosts]\nname = "x"\n', r"^inv\.toml: \[defaults\] must be a table"),
        ('[[hosts]]\nname = "x\n', r"^inv\.toml: not valid TOML: .*line 2"),
        ("[groups]\nx = 1\n", r"^inv\.toml: unknown table\(s\) \['groups'\]"),
    ],
)
def test_bad_toml_inventory_names_file_and_host(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_inventory(text, "inv.toml")


def test_read_inventory_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"nope\.toml: cannot read inventory"):
        read_inventory(tmp_path / "nope.toml")
    good = tmp_path / "inv.toml"
    good.write_text('[[hosts]]\nname = "n[01-02]"\n')
    assert read_inventory(good).names() == ["n01", "n02"]


def test_host_spec_like_ssh_minus_j() -> None:
    assert parse_host_spec("gw") == HostEntry("gw")
    assert parse_host_spec("ops@gw:2200") == HostEntry("gw", None, "ops", 2200)
    assert parse_host_spec("[fe80::1]:22") == HostEntry("fe80::1", None, None, 22)
    with pytest.raises(UsageError):
        parse_host_spec("ops@gw;reboot")


def test_ssh_config_fills_only_what_the_inventory_left_open(tmp_path: Path) -> None:
    from probes.ssh import apply_ssh_config

    cfg = tmp_path / "config"
    cfg.write_text(
        "Host dgx-*\n  HostName %h.ib.example.org\n  User ops\n  Port 2022\n"
        "  IdentityFile /keys/id_dgx\n  ProxyJump jump@bastion:22\n"
    )
    merged = apply_ssh_config(HostEntry("dgx-0001"), cfg)
    assert merged == HostEntry(
        "dgx-0001",
        "dgx-0001.ib.example.org",
        "ops",
        2022,
        "/keys/id_dgx",
        HostEntry("bastion", None, "jump", 22),
    )
    explicit = HostEntry("dgx-0002", "10.0.0.2", "root", 22, "/k")
    assert apply_ssh_config(explicit, cfg) == HostEntry(
        "dgx-0002", "10.0.0.2", "root", 22, "/k", HostEntry("bastion", None, "jump", 22)
    )
    assert apply_ssh_config(HostEntry("other"), cfg) == HostEntry("other")
    cfg.write_text("Host evil\n  User root;reboot\n")
    with pytest.raises(UsageError, match="bad user name"):
        apply_ssh_config(HostEntry("evil"), cfg)


def test_natural_order_and_folding() -> None:
    names = ["dgx-10", "dgx-2", "dgx-1", "127.0.0.10", "127.0.0.9"]
    assert sorted(names, key=host_sort_key) == ["127.0.0.9", "127.0.0.10", "dgx-1", "dgx-2", "dgx-10"]
    assert fold_names(["dgx-0001", "dgx-0002", "dgx-0003", "dgx-0004", "dgx-0007"]) == "dgx-[0001-0004,0007]"
    assert expand_hosts("n[9-11]") == ["n9", "n10", "n11"]


def _local(entry: HostEntry) -> LocalTransport:
    return LocalTransport(entry.name)


def test_fan_out_keeps_per_host_records_sorted_and_folds_identical_ones() -> None:
    hosts = [HostEntry(f"n{i}") for i in (10, 2, 1, 3, 4)]

    def argv(entry: HostEntry) -> list[str]:
        if entry.name == "n3":
            return ["sh", "-c", "echo odd; echo warn >&2; exit 2"]
        if entry.name == "n4":
            return ["/nonexistent/tool"]
        return ["echo", "same"]

    results = fan_out(hosts, argv, _local, concurrency=3, timeout=10)
    assert [r.host for r in results] == ["n1", "n2", "n3", "n4", "n10"]
    assert results[2].exit_code == 2 and results[2].stdout == "odd\n" and results[2].stderr == "warn\n"
    assert results[3].failure is FailureKind.ERROR and "not found" in results[3].message
    folded = fold(results)
    assert [(f.hosts, f.count, f.exit_code, f.stdout) for f in folded] == [
        ("n[1-2,10]", 3, 0, "same\n"),
        ("n3", 1, 2, "odd\n"),
        ("n4", 1, None, ""),
    ]
    assert folded[0].ok and not folded[1].ok


def test_fan_out_turns_a_local_timeout_into_a_record() -> None:
    results = fan_out([HostEntry("a"), HostEntry("b")], ["sleep", "5"], _local, timeout=0.3)
    assert {r.failure for r in results} == {FailureKind.COMMAND_TIMEOUT}
    assert [f.hosts for f in fold(results)] == ["a,b"]


def test_fan_out_bounds_concurrency() -> None:
    running, peak, lock = 0, 0, threading.Lock()
    four = threading.Event()  # four ran at once: a rendezvous, not a sleep (a slow machine waits longer)

    class Counting(LocalTransport):
        def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
            nonlocal running, peak
            with lock:
                running += 1
                peak = max(peak, running)
                if running == 4:
                    four.set()
            four.wait(60)
            with lock:
                running -= 1
            return super().run(["true"], timeout)

    results = fan_out(
        [HostEntry(f"h{i}") for i in range(20)], ["true"], lambda e: Counting(e.name), concurrency=4
    )
    assert len(results) == 20 and all(r.ok for r in results)
    assert peak == 4


def test_host_locks_never_run_two_probes_on_one_host() -> None:
    locks = HostLocks()
    inside: dict[str, int] = {}
    overlaps: list[str] = []
    guard = threading.Lock()

    def probe(pair: tuple[str, str]) -> None:
        with locks.hold(pair):
            with guard:
                for h in pair:
                    inside[h] = inside.get(h, 0) + 1
                    if inside[h] > 1:
                        overlaps.append(h)
            time.sleep(0.01)
            with guard:
                for h in pair:
                    inside[h] -= 1

    pairs = [("a", "b"), ("b", "a"), ("b", "c"), ("c", "a"), ("a", "b")] * 6
    threads = [threading.Thread(target=probe, args=(p,)) for p in pairs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert overlaps == [] and locks.busy() == frozenset()

    assert locks.try_acquire(["x", "y"])
    assert not locks.try_acquire(["y", "z"])
    assert locks.try_acquire(["z"])
    with pytest.raises(HostBusy, match=r"still busy after 0.05 s: y"):
        locks.acquire(["y"], timeout=0.05)
    locks.release(["x", "y", "z"])
    assert locks.busy() == frozenset()


def test_fan_out_with_locks_waits_for_a_busy_host() -> None:
    locks = HostLocks()
    locks.acquire(["n1"])
    threading.Timer(0.3, locks.release, args=(["n1"],)).start()
    start = time.monotonic()
    results = fan_out([HostEntry("n1"), HostEntry("n2")], ["true"], _local, locks=locks)
    assert all(r.ok for r in results)
    assert time.monotonic() - start >= 0.25
