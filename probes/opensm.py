"""Subnet-manager tool formats: ``sminfo`` output, the OpenSM log and ``opensm.conf``.

Pure functions of text.

>>> parse_sminfo("sminfo: sm lid 1 sm guid 0x1070fd0300100001, activity count 826 priority 0 state 3 SMINFO_MASTER")
(1, '0x1070fd0300100001', 'SMINFO_MASTER')
"""

from __future__ import annotations

import re

_SMINFO = re.compile(r"sm lid (\d+) sm guid (0x[0-9a-fA-F]+).*?state \d+ (\S+)")
_OSM_VERSION = re.compile(r"-> OpenSM (\S+(?: \S+)?)\s*$", re.MULTILINE)
_ENGINE_USED = re.compile(r"(\S+) tables configured on all switches")
_CONF_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s+(.*?)\s*$")


def parse_sminfo(text: str) -> tuple[int, str, str] | None:
    m = _SMINFO.search(text)
    return (int(m.group(1)), m.group(2).lower(), m.group(3)) if m else None


def parse_opensm_log(text: str) -> tuple[str | None, str | None]:
    """(version, engine used last) from an OpenSM log; None where the log does not say."""
    versions = _OSM_VERSION.findall(text)
    engines = _ENGINE_USED.findall(text)
    return (versions[-1].strip() if versions else None, engines[-1] if engines else None)


def parse_opensm_conf(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        m = _CONF_LINE.match(line)
        if m and m.group(2):
            out[m.group(1)] = m.group(2)
    return out
