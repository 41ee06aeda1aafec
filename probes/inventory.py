"""The host inventory: which hosts to probe and how to reach them.

Two spellings of the same thing. TOML (a file ending in ``.toml``)::

    [defaults]                      # optional, applies to every host
    user = "root"
    key_file = "~/.ssh/id_ed25519"

    [[hosts]]
    name = "dgx-[0001-0004]"        # a ClusterShell host range
    address = "10.1.0.[11-14]"      # optional; paired with the names in sorted order
    port = 22
    jump = "bastion"                # an inventory host or [user@]host[:port]

    [[hosts]]
    name = "bastion"
    address = "203.0.113.7"

or one host (range) per line, anything else::

    # name  [address=..] [user=..] [port=..] [key_file=..] [jump=..]
    dgx-[0001-0004] address=10.1.0.[11-14] user=root
    bastion address=203.0.113.7

Names, users and addresses are checked against strict patterns (no shell metacharacters ever
reach a command line). Settings missing here are filled from ``~/.ssh/config`` by
``probes.ssh`` when it connects. A bad file is one :class:`UsageError` naming file and line/host.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

# The host-range fold lives in probes.hostfold (discover folds names without this module); its
# names stay importable from here.
from probes.hostfold import fold_names as fold_names
from probes.hostfold import host_nodeset as host_nodeset
from probes.hostfold import host_sort_key as host_sort_key
from topology.errors import InputError, UsageError, excerpt
from topology.nameformats import HOST_NAME_RE

# An InfiniBand subnet has at most 49,151 unicast LIDs: no range of its hosts is longer than this.
MAX_HOSTS = 100_000
MAX_NAME_CHARS = 1024
MAX_INVENTORY_BYTES = 16 << 20  # one name or one bracketed name pattern (a DNS name is at most 253)
USER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
IPV6_RE = re.compile(r"[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(%[A-Za-z0-9_.-]+)?")
_FIELDS = ("name", "address", "user", "port", "key_file", "jump")


@dataclass(frozen=True, slots=True)
class HostEntry:
    """One host: its inventory name and, when known, how to reach it."""

    name: str
    address: str | None = None  # default: the name itself (DNS or ~/.ssh/config)
    user: str | None = None
    port: int | None = None
    key_file: str | None = None
    jump: HostEntry | None = None

    @property
    def connect_address(self) -> str:
        return self.address or self.name


@dataclass(frozen=True, slots=True)
class Inventory:
    source: str
    hosts: tuple[HostEntry, ...]

    def names(self) -> list[str]:
        return [h.name for h in self.hosts]

    def get(self, name: str) -> HostEntry:
        for host in self.hosts:
            if host.name == name:
                return host
        raise UsageError(f"{self.source}: no host {name!r} in the inventory")

    def select(self, pattern: str) -> Inventory:
        """The hosts named by a host range such as ``dgx-[0001-0008]``; unknown names are an error."""
        wanted = expand_hosts(pattern, self.source)
        known = {h.name: h for h in self.hosts}
        missing = [n for n in wanted if n not in known]
        if missing:
            raise UsageError(f"{self.source}: not in the inventory: {fold_names(missing)}")
        return Inventory(self.source, tuple(known[n] for n in sorted(wanted, key=host_sort_key)))


def range_size(pattern: str, source: str = "host range") -> int:
    """How many names ``pattern`` can name at most, counted without expanding it (one pass):
    ``n[1-50000000]`` is 50,000,000 before it is 50,000,000 strings. An element (between commas
    outside brackets) longer than MAX_NAME_CHARS is a UsageError. A part this count does not
    understand counts as one name: ClusterShell judges it.

    >>> range_size("dgx-[01-04,07],login[1-2]-ib[0-1]"), range_size("n[1-50000000]")
    (9, 50000000)
    """
    total = 0
    element_start = 0
    product = 1
    depth_start = -1  # where the open bracket's contents begin
    for i, ch in enumerate(pattern + ","):
        if ch == "[" and depth_start < 0:
            depth_start = i + 1
        elif ch == "]" and depth_start >= 0:
            product *= _bracket_size(pattern[depth_start:i])
            depth_start = -1
        elif depth_start < 0 and ch in ",!&^ ":
            if i - element_start > MAX_NAME_CHARS:
                element = excerpt(pattern[element_start:i])
                raise UsageError(f"{source}: host name {element} is longer than {MAX_NAME_CHARS} characters")
            if i > element_start:
                total += product
            element_start, product = i + 1, 1
    return total


def _bracket_size(inner: str) -> int:
    """Names in one ``[a-b,c,d-e/2]``: 1 for what is not that shape (ClusterShell says why)."""
    size = 0
    for item in inner.split(","):
        bounds, _, step_text = item.partition("/")
        low, dash, high = (part.strip() for part in bounds.partition("-"))
        if not low.isdigit() or (dash and not high.isdigit()):
            return 1
        if max(len(low), len(high), len(step_text)) > 18:
            return 10**18  # numbers of 19 digits and more: more names than anything can hold
        step = int(step_text) if step_text.isdigit() and int(step_text) > 0 else 1
        size += (int(high) - int(low)) // step + 1 if dash and int(high) >= int(low) else 1
    return size


def expand_hosts(pattern: str, source: str = "host range") -> list[str]:
    """``dgx-[01-03]`` -> ``['dgx-01', 'dgx-02', 'dgx-03']`` (ClusterShell syntax), sorted."""
    from ClusterShell.NodeSet import NodeSet, NodeSetException
    from ClusterShell.NodeUtils import GroupResolverError

    shown = excerpt(pattern)
    if "@" in pattern:  # ClusterShell node groups: resolved from files outside the inventory
        raise UsageError(f"{source}: bad host range {shown}: node groups (@name) are not supported")
    count = range_size(pattern, source)
    if count > MAX_HOSTS:
        many = f"{count}" if count < 10**18 else "more than 10^18"
        raise UsageError(f"{source}: host range {shown} names {many} hosts; at most {MAX_HOSTS} in one range")
    try:
        names = [str(n) for n in NodeSet(pattern)]
    except (NodeSetException, GroupResolverError, ValueError, TypeError) as exc:
        raise UsageError(f"{source}: bad host range {shown}: {excerpt(str(exc))}") from exc
    if not names:
        raise UsageError(f"{source}: empty host range {shown}")
    return sorted(names, key=host_sort_key)


def parse_inventory(text: str, source: str = "<inventory>", fmt: str | None = None) -> Inventory:
    """Parse an inventory; ``fmt`` is ``toml`` or ``lines`` (default: from the source's suffix)."""
    fmt = fmt or ("toml" if source.endswith(".toml") else "lines")
    if fmt not in ("toml", "lines"):
        raise UsageError(f"{source}: unknown inventory format {fmt!r}")
    try:
        raw = _toml_entries(text, source) if fmt == "toml" else _line_entries(text, source)
        inventory = _build(raw, source)
    except InputError:
        raise
    except UsageError as exc:  # what the file says does not parse: exit 3, as any such input
        raise InputError(exc.one_line()) from exc
    if not inventory.hosts:
        raise InputError(f"{source}: no hosts in the inventory")
    return inventory


def read_inventory(path: str | Path) -> Inventory:
    p = Path(path).expanduser()
    try:
        with open(p, "rb") as fh:
            data = fh.read(MAX_INVENTORY_BYTES + 1)
        if len(data) > MAX_INVENTORY_BYTES:
            raise InputError(f"{p}: larger than {MAX_INVENTORY_BYTES >> 20} MiB: not an inventory")
        text = data.decode("utf-8")
    except OSError as exc:
        raise InputError(f"{p}: cannot read inventory: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: inventory is not UTF-8 text (byte {exc.start})") from exc
    return parse_inventory(text, str(p))


# A raw entry: where it came from (for messages) and its fields as written.
_Raw = tuple[str, dict[str, Any]]


def _toml_entries(text: str, source: str) -> list[_Raw]:
    import tomllib  # here: every command imports this module, few read a TOML inventory

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{source}: not valid TOML: {exc}") from exc
    unknown = set(doc) - {"defaults", "hosts"}
    if unknown:
        raise UsageError(f"{source}: unknown table(s) {sorted(unknown)}; expected [defaults] and [[hosts]]")
    defaults = doc.get("defaults", {})
    hosts = doc.get("hosts", [])
    if not isinstance(defaults, dict) or not isinstance(hosts, list):
        raise UsageError(f"{source}: [defaults] must be a table and hosts an array of [[hosts]] tables")
    if "name" in defaults:
        raise UsageError(f"{source}: [defaults] cannot set a name")
    out: list[_Raw] = []
    for i, item in enumerate(hosts, 1):
        if not isinstance(item, dict):
            raise UsageError(f"{source}: hosts entry {i} is not a table")
        where = f"{source}: host {item.get('name', f'entry {i}')!r}"
        out.append((where, {**defaults, **item}))
    return out


def _line_entries(text: str, source: str) -> list[_Raw]:
    out: list[_Raw] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{source}:{lineno}"
        fields: dict[str, Any] = {"name": words[0]}
        for word in words[1:]:
            key, eq, value = word.partition("=")
            if not eq or not value:
                raise UsageError(f"{where}: expected key=value, got {word!r}")
            if key in fields:
                raise UsageError(f"{where}: {key} given twice")
            fields[key] = value
        out.append((where, fields))
    return out


def _build(raw: list[_Raw], source: str) -> Inventory:
    entries: list[HostEntry] = []
    jumps: dict[str, tuple[str, str]] = {}  # host name -> (where, jump spec)
    seen: dict[str, str] = {}
    for where, fields in raw:
        for name, jump, entry in _expand(where, fields):
            if name in seen:
                raise UsageError(f"{where}: host {name!r} already defined ({seen[name]})")
            seen[name] = where
            entries.append(entry)
            if jump is not None:
                jumps[name] = (where, jump)
    by_name = {e.name: e for e in entries}
    resolved = []
    for entry in entries:
        if entry.name in jumps:
            where, spec = jumps[entry.name]
            entry = replace(entry, jump=_jump_entry(spec, by_name, jumps, where))
        resolved.append(entry)
    resolved.sort(key=lambda e: host_sort_key(e.name))
    return Inventory(source, tuple(resolved))


def _expand(where: str, fields: Mapping[str, Any]) -> list[tuple[str, str | None, HostEntry]]:
    unknown = sorted(set(fields) - set(_FIELDS))
    if unknown:
        raise UsageError(f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(_FIELDS)}")
    for key, value in fields.items():
        if key == "port":
            continue
        if not isinstance(value, str):
            raise UsageError(f"{where}: {key} must be a string, not {type(value).__name__}")
    if "name" not in fields:
        raise UsageError(f"{where}: a host needs a name")
    names = expand_hosts(fields["name"], where)
    for name in names:
        if not HOST_NAME_RE.fullmatch(name):
            raise UsageError(f"{where}: bad host name {name!r} (letters, digits, '.', '_', '-' only)")
    addresses: list[str | None] = [None] * len(names)
    if "address" in fields:
        addr = fields["address"]
        expanded = [addr] if IPV6_RE.fullmatch(addr) else expand_hosts(addr, where)
        if len(expanded) != len(names):
            raise UsageError(f"{where}: {len(names)} name(s) but {len(expanded)} address(es)")
        for a in expanded:
            check_address(a, where)
        addresses = list(expanded)
    user = fields.get("user")
    if user is not None:
        check_user(user, where)
    port = _port(fields.get("port"), where)
    key_file = fields.get("key_file")
    if key_file is not None and (not key_file or any(ord(c) < 32 for c in key_file)):
        raise UsageError(f"{where}: bad key_file {key_file!r}")
    jump = fields.get("jump")
    return [
        (name, jump, HostEntry(name, address, user, port, key_file))
        for name, address in zip(names, addresses, strict=True)
    ]


def _jump_entry(
    spec: str, by_name: Mapping[str, HostEntry], jumps: Mapping[str, tuple[str, str]], where: str
) -> HostEntry:
    if spec in by_name:
        if spec in jumps:
            raise UsageError(
                f"{where}: jump host {spec!r} itself needs a jump host (chains are not supported)"
            )
        return by_name[spec]
    return parse_host_spec(spec, where)


def parse_host_spec(spec: str, where: str = "host") -> HostEntry:
    """``[user@]host[:port]`` as in ``ssh -J`` -> a :class:`HostEntry`."""
    user, at, rest = spec.rpartition("@")
    host, port_text = rest, None
    if rest.startswith("["):  # [v6]:port
        host, _, tail = rest[1:].partition("]")
        port_text = tail[1:] if tail.startswith(":") else None
    elif rest.count(":") == 1:
        host, port_text = rest.split(":")
    check_address(host, where)
    if at:
        check_user(user, where)
    port = _port(port_text, where)
    return HostEntry(host, None, user if at else None, port)


def check_address(address: str, where: str) -> None:
    if not (HOST_NAME_RE.fullmatch(address) or IPV6_RE.fullmatch(address)):
        raise UsageError(f"{where}: bad address {address!r}")


def check_user(user: str, where: str) -> None:
    if not USER_RE.fullmatch(user):
        raise UsageError(f"{where}: bad user name {user!r} (letters, digits, '.', '_', '-' only)")


def _port(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise UsageError(f"{where}: bad port {value!r}")
    try:
        port = int(value) if isinstance(value, (int, str)) else -1
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise UsageError(f"{where}: bad port {value!r} (1-65535)")
    return port
