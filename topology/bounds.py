"""The ranges of the numbers fabric tools print, checked where a parser reads them, before
anything is stored: one capture with a LID of 23 digits must not poison every later command
(a JSON encoder refuses integers past 64 bits; Python refuses to read 4,300 digits).

* A LID is 16 bits: 1-49151 (0x0001-0xBFFF) unicast, 0xC000-0xFFFE multicast (never a port's),
  and 0 and 0xFFFF mean "not configured by the SM": legal in a capture, never a route's LID.
* A port number is one byte (0 is a switch's own port, where a format prints it).
* A link width is a lane count (1, 2, 4, 8, 12): two digits at most.
* GUIDs are 64 bits: :func:`topology.model.normalise_guid` checks them.
* Vendor and device ids: a number past 32 bits is no id (read as unknown).

Each ``*_problem`` returns why a value is out of range (for the caller's ParseError, which names
file and line), or None.
"""

from __future__ import annotations

from topology.errors import excerpt

MAX_LID = 0xFFFF
MAX_UNICAST_LID = 0xBFFF
UNASSIGNED_LIDS = frozenset({0, MAX_LID})  # "not configured by the SM"
MAX_PORT = 255
MAX_ID = 0xFFFFFFFF  # vendor and device ids (24 and 16 bits on the wire): 32 bits is generous


def lid_value_problem(value: int) -> str | None:
    """Why ``value`` is no LID a port can have (None: 0-49151 or 65535)."""
    if value < 0 or value > MAX_LID:
        shown = str(value) if value.bit_length() < 64 else excerpt(str(value), 24)
        return f"LID {shown} is not 16 bits (0-65535)"
    if MAX_UNICAST_LID < value < MAX_LID:
        return f"LID {value} is a multicast LID (49152-65534), never a port's"
    return None


def lid_problem(text: str) -> str | None:
    """Why the decimal ``text`` is no LID a port can have (None: it is one)."""
    if len(text) > 5 or not text.isdecimal():
        return f"LID {excerpt(text, 24)} is not 16 bits (0-65535)"
    return lid_value_problem(int(text))


def lid_or_hex_problem(text: str) -> str | None:
    """:func:`lid_problem` for a LID written in decimal or as ``0x`` hex (``Lid=0x0018``)."""
    if text[:2].lower() == "0x":
        digits = text[2:]
        if not 0 < len(digits) <= 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
            return f"LID {excerpt(text, 24)} is not 16 bits (0-0xffff)"
        return lid_value_problem(int(digits, 16))
    return lid_problem(text)


def port_problem(text: str) -> str | None:
    """Why the decimal ``text`` is no port number (None: 0-255)."""
    if len(text) > 3 or not text.isdecimal() or int(text) > MAX_PORT:
        return f"port {excerpt(text, 24)} is not a port number (0-{MAX_PORT}: one byte)"
    return None


def width_problem(text: str) -> str | None:
    """Why the decimal ``text`` is no link width (None: up to two digits; 0 is unknown)."""
    if len(text) > 2 or not text.isdecimal():
        return f"link width {excerpt(text, 24)}x is not a lane count"
    return None


def id_value(value: int | None) -> int | None:
    """A vendor or device id, None when unknown or past 32 bits (no id is)."""
    return value if value is not None and 0 <= value <= MAX_ID else None
