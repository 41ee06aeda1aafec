"""Which names each output format can carry: a name from the fabric is checked before it is written.

A NodeDescription is whatever someone set (``evil#1 mlx5_0``, ``dgx-[0001-0999] mlx5_0``,
``$(reboot) mlx5_0``, spaces, quotes, control characters, any Unicode), and the host name ibfab
takes from it goes into files other programs read and into commands. Each format has its rule,
with its source; a name that does not fit is left out of that output (never rewritten into another
name, which could be a real host) and said in one line, :class:`UnfitName`.

* **Slurm node names** (``topology.conf`` ``Nodes=``, ``scontrol update NodeName=``,
  ``salloc/srun --nodelist=``, ``scontrol show node``): Slurm reads them as hostlist expressions
  (slurm.conf(5) NodeName, topology.conf(5), scontrol(1) "show hostnames"): ``,`` separates names,
  ``[0001-0999]`` is a range (``dgx-[0001-0999]`` names 999 nodes), whitespace ends a value, ``#``
  starts a comment in ``topology.conf``, ``=`` starts another key. Allowed: a host name, letters,
  digits, ``-``, ``_`` and ``.``, starting with a letter or digit (``-x`` reads as an option).
* **MPI hostfiles**: Open MPI's ``host slots=N`` (mpirun(1) "hostfile": whitespace separates the
  fields, ``#`` starts a comment) and MPICH/Hydra's ``host:N`` (``:`` separates the count): the same
  host-name rule, the name a launcher resolves and connects to.
* **Kubernetes node names** (``kubectl label node NAME``, written lower-cased): an RFC 1123
  subdomain (kubernetes.io, "Object Names and IDs"): lower-case letters, digits, ``-`` and ``.``,
  each dot-separated part starting and ending with a letter or digit, at most 253 characters.
* **Kubernetes label values** (kubernetes.io, "Labels and Selectors"): at most 63 characters
  matching ``(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?``. (ibfab's label values are switch and
  unit names, made to fit by :func:`fabric.exports.k8s.label_value`; a Kueue ``Topology`` holds
  label keys only, no fabric name.)
* **Cable-plan cells** (CSV, RFC 4180, as UFM's NDT and spreadsheets read it): a quoted cell holds
  commas and quotes, but no control character (a line break inside a cell splits the row for
  line-reading tools; the others do not show where people read and edit the plan), no space at either end (readers strip it, so the name would not come back),
  and no ``=``, ``+``, ``-`` or ``@`` first (a spreadsheet runs such a cell as a formula: OWASP
  "CSV Injection"). A plan names such a node by its GUID instead.

>>> SLURM_NODE.why_not("dgx-0001") is None
True
>>> print(unfit("dgx-[0001-0999]", SLURM_NODE))
'dgx-[0001-0999]' left out of Slurm's node names: '[' is a hostlist range (dgx-[0001-0999] is 999 nodes)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

# A host name as resolvers and launchers take it: letters, digits, '-', '_', '.', at most 253.
HOST_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_K8S_PART = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?")  # matched only on names of <= 253
_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_FORMULA_START = "=+-@"


@dataclass(frozen=True, slots=True)
class NameFormat:
    """One output's rule for names: ``what`` names the output, ``allowed`` says what fits."""

    what: str  # "Slurm's node names"
    allowed: str  # "letters, digits, - _ . (a host name)"
    check: Callable[[str], str | None]  # the reason a name does not fit, None when it fits

    def why_not(self, name: str) -> str | None:
        return self.check(name)

    def fits(self, name: str) -> bool:
        return self.check(name) is None


@dataclass(frozen=True, slots=True)
class UnfitName:
    """A name left out of an output: which name, which output, why (the one line said for it)."""

    name: str
    output: str
    why: str

    def __str__(self) -> str:
        return f"{self.name!r} left out of {self.output}: {self.why}"


def unfit(name: str, fmt: NameFormat) -> UnfitName | None:
    """The record for ``name`` when it does not fit ``fmt``, else None."""
    why = fmt.why_not(name)
    return None if why is None else UnfitName(name, fmt.what, why)


def unfit_names(names: Iterable[str], fmt: NameFormat) -> dict[str, UnfitName]:
    """Every name of ``names`` that does not fit ``fmt``, with its record, in the given order."""
    out: dict[str, UnfitName] = {}
    for name in names:
        record = unfit(name, fmt)
        if record is not None:
            out.setdefault(name, record)
    return out


def _first_char_reason(name: str, special: dict[str, str], allowed: str) -> str:
    """Why a name off the host-name pattern does not fit: its first character that breaks it."""
    if not name:
        return "an empty name"
    for ch in name:
        if ch in special:
            return special[ch]
        if ch.isspace():
            return special.get(" ", "whitespace ends the name")
        if not (ch.isascii() and (ch.isalnum() or ch in "._-")):
            return f"{ch!r} is not in a host name ({allowed})"
    if not name[0].isalnum():
        return f"a name starting with {name[0]!r} reads as an option or is no host name ({allowed})"
    return f"longer than 253 characters ({allowed})"


_HOST_ALLOWED = "letters, digits, - _ ."
_SLURM_SPECIAL = {
    "[": "'[' is a hostlist range (dgx-[0001-0999] is 999 nodes)",
    "]": "']' closes a hostlist range",
    ",": "',' separates names in a hostlist",
    "#": "'#' starts a comment in topology.conf (the rest of the line is lost)",
    "=": "'=' starts another key in topology.conf and scontrol",
    " ": "whitespace ends a value in topology.conf and splits a hostlist",
}
_HOSTFILE_SPECIAL = {
    "#": "'#' starts a comment in a hostfile",
    ":": "':' separates the slot count in an MPICH hostfile",
    "=": "'=' is a field of an Open MPI hostfile (slots=N)",
    " ": "whitespace separates the fields of a hostfile line",
}


def _host_rule(special: dict[str, str]) -> Callable[[str], str | None]:
    def check(name: str) -> str | None:
        if HOST_NAME_RE.fullmatch(name):
            return None
        return _first_char_reason(name, special, _HOST_ALLOWED)

    return check


def _k8s_node(name: str) -> str | None:
    lowered = name.lower()
    if 0 < len(lowered) <= 253 and all(_K8S_PART.fullmatch(p) for p in lowered.split(".")):
        return None
    if len(lowered) > 253:
        return "longer than 253 characters"
    bad = next((ch for ch in lowered if not (ch.isascii() and (ch.isalnum() or ch in ".-"))), None)
    if bad is not None:
        return f"{bad!r} is not in an RFC 1123 name (a-z 0-9 - .)"
    return "each dot-separated part must start and end with a letter or digit"


def _label_value(value: str) -> str | None:
    if _LABEL_VALUE.fullmatch(value):
        return None
    if len(value) > 63:
        return "longer than 63 characters"
    return "not (([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"


def _plan_cell(text: str) -> str | None:
    if not text:
        return "an empty cell names nothing"
    bad = next((ch for ch in text if not ch.isprintable()), None)
    if bad in ("\n", "\r"):
        return "a line break inside a cell splits the row for line-reading tools"
    if bad is not None:
        return f"the control character {bad!r} does not show in a plan people read and edit"
    if text != text.strip():
        return "a space at either end is stripped by plan readers (the name would not come back)"
    if text[:1] and text[0] in _FORMULA_START:
        return f"a cell starting with {text[0]!r} is a formula to spreadsheets"
    return None


SLURM_NODE = NameFormat("Slurm's node names", f"{_HOST_ALLOWED} (a host name)", _host_rule(_SLURM_SPECIAL))
HOSTFILE = NameFormat("the MPI hostfile", f"{_HOST_ALLOWED} (a host name)", _host_rule(_HOSTFILE_SPECIAL))
K8S_NODE = NameFormat("Kubernetes node names", "RFC 1123: a-z 0-9 - . (lower-cased)", _k8s_node)
K8S_LABEL_VALUE = NameFormat(
    "Kubernetes label values", "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?, at most 63", _label_value
)
PLAN_CELL = NameFormat(
    "the cable plan", "CSV text without control characters or a leading = + - @", _plan_cell
)
