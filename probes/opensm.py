"""Subnet-manager tool formats: ``sminfo`` output, the OpenSM log and ``opensm.conf``.

Pure functions of text.

>>> parse_sminfo("sminfo: sm lid 1 sm guid 0x1070fd0300100001, activity count 826 priority 0 state 3 SMINFO_MASTER")
(1, '0x1070fd0300100001', 'SMINFO_MASTER')
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Possessive and atomic: each pattern reads a line once (a plain "(\S+) tables" retried from every
# character of a long word, "(.*?)\s*$" from every space of a long run: quadratic in the line).
_SMINFO = re.compile(r"sm lid (\d++) sm guid (0x[0-9a-fA-F]++)[^\n]*?state \d++ (\S++)")
_OSM_VERSION = re.compile(r"-> OpenSM (\S++(?: \S++)?+)[ \t\r\f\v]*+$", re.MULTILINE)
_ENGINE_USED = " tables configured on all switches"
# "ucast_mgr_route: torus-2QoS: cannot build fwd tables" (or "... ftree: cannot build lid
# matrices", when the engine refuses the topology before routing: ftree on a fabric that is no
# longer a pure fat tree): an engine of the list failed and the SM went on to the next (the one
# that configured the switches says so after it).
_ENGINE_FAILED = re.compile(r"ucast_mgr_route: ([^\s:]++): cannot build (?:fwd tables|lid matrices)")
_CONF_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*+")


def parse_sminfo(text: str) -> tuple[int, str, str] | None:
    m = _SMINFO.search(text)
    return (int(m.group(1)), m.group(2).lower(), m.group(3)) if m else None


def parse_opensm_log(text: str | Iterable[str]) -> tuple[str | None, str | None]:
    """(version, engine used last) from an OpenSM log (its text, or its lines one at a time: a log
    of gigabytes is read as a stream); None where the log does not say."""
    version, engine, _ = parse_routing_log(text)
    return version, engine


def parse_routing_log(text: str | Iterable[str]) -> tuple[str | None, str | None, tuple[str, ...]]:
    """(version, engine used last, engines that failed before it in that sweep) from an OpenSM log.

    >>> parse_routing_log("ucast_mgr_route: torus-2QoS: cannot build fwd tables\\n"
    ...                   "osm_ucast_mgr_process: ftree tables configured on all switches")
    (None, 'ftree', ('torus-2QoS',))
    """
    version = engine = None
    failed: list[str] = []
    done: tuple[str, ...] = ()
    for line in text.splitlines() if isinstance(text, str) else text:
        m = _OSM_VERSION.search(line)
        if m:
            version = m.group(1).strip()
        at = line.rfind(_ENGINE_USED)
        before = line[:at].split() if at > 0 and not line[at - 1].isspace() else []
        if before:
            engine = before[-1]
            done, failed = tuple(failed), []
            continue
        f = _ENGINE_FAILED.search(line)
        if f:
            failed.append(f.group(1))
    return version, engine, done


def parse_opensm_conf(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        words = line.split("#", 1)[0].strip()
        gap = next((i for i, c in enumerate(words) if c.isspace()), len(words))
        key, value = words[:gap], words[gap:].strip()
        if value and _CONF_KEY.fullmatch(key):
            out[key] = value
    return out
