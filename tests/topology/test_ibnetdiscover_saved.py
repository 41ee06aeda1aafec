"""Captures as operators save them: every real capture, transformed the way terminal loggers,
shells and pastes change text, reads as the same Fabric as the file itself.

TRANSFORMATIONS lists each change (name, what it does, whether it adds lines that are not the
tool's). Lines that are not the tool's are skipped and counted in one warning naming their line
numbers; a broken record is still a one-line error naming the file, line and text.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import realdata_files
from topology.errors import ParseError
from topology.ibnetdiscover import parse_ibnetdiscover_text, read_ibnetdiscover
from topology.model import Fabric

CAPTURES = realdata_files("ibnetdiscover")

PROMPT = "[root@mgmt01 ~]# "
COLOUR_PROMPT = "\x1b]0;root@mgmt01:~\x07\x1b[01;31mroot@mgmt01\x1b[00m:\x1b[01;34m~\x1b[00m# "
PUTTY = "=~=~=~=~=~=~=~=~=~=~=~= PuTTY log 2024.03.05 10:11:12 =~=~=~=~=~=~=~=~=~=~=~="
SCRIPT_START = (
    'Script started on 2024-03-05 10:11:12+00:00 [COMMAND="/bin/bash" TERM="xterm-256color" '
    'TTY="/dev/pts/3" COLUMNS="212" LINES="51"]'
)
SCRIPT_DONE = 'Script done on 2024-03-05 10:12:40+00:00 [COMMAND_EXIT_CODE="0"]'


def _session(text: str, before: list[str], after: list[str], end: str = "\n") -> str:
    """``text`` between lines a terminal session puts around it."""
    body = text if text.endswith("\n") else text + "\n"
    return end.join(before) + end + body.replace("\n", end) + end.join(after)


def _putty(text: str) -> str:
    # PuTTY logs what the terminal showed: CR LF line ends, banner, prompts, no final newline.
    return _session(text, [PUTTY, PROMPT + "ibnetdiscover"], [PROMPT], "\r\n")


def _script(text: str) -> str:
    # script(1): the tty turns LF into CR LF; output that already had CR LF gets CR CR LF.
    return _session(
        text.replace("\n", "\r\n"), [SCRIPT_START, PROMPT + "cat topo.txt"], [PROMPT + "exit", SCRIPT_DONE]
    )


def _prompt(text: str) -> str:
    return _session(text, ["user@login1:~$ ssh mgmt01 sudo ibnetdiscover", "Password:"], ["user@login1:~$ "])


def _stray_cr(text: str) -> str:
    # Some lines end CR LF, some CR CR LF, some plain LF (a paste from several windows).
    rng = random.Random(len(text))
    return "".join(line + rng.choice(("\r\n", "\r\r\n", "\n")) for line in text.split("\n")[:-1])


def _ansi(text: str) -> str:
    # A coloured prompt with a window title, and grep --color marking every GUID of the output.
    marked = re.sub(r'"([SH]-[0-9a-f]+)"', '\x1b[01;31m\x1b[K"\\1"\x1b[m\x1b[K', text)
    return _session(
        marked, [COLOUR_PROMPT + "ibnetdiscover | grep --color=always -E 'S-|H-|'"], [COLOUR_PROMPT]
    )


def _tabs_to_nothing(text: str) -> str:
    return text.replace("\t", "")  # `Switch36 "S-..."# "..."`, `[1]"H-..."[1](...) # "..." lid 5 4xHDR`


def _tabs_to_space(text: str) -> str:
    return text.replace("\t", " ")


def _spaces_squeezed(text: str) -> str:
    # A web page or chat client squeezing blanks (descriptions aside: their text is the node's).
    return re.sub(r'("[^"\n]*")|[ \t]+', lambda m: m.group(1) or " ", text)


def _no_final_newline(text: str) -> str:
    return text.rstrip("\n")


def _everything(text: str) -> str:
    return _ansi(_putty(_tabs_to_nothing(text)))


# name -> (transformation, adds lines that are not the tool's)
TRANSFORMATIONS: dict[str, tuple[Callable[[str], str], bool]] = {
    "putty-log: banner, prompt + command, CR LF, trailing prompt without newline": (_putty, True),
    "script-log: banner, prompt, CR CR LF line ends, 'Script done' line": (_script, True),
    "shell: prompt and command before, password prompt, prompt after": (_prompt, True),
    "stray CR: a mix of LF, CR LF and CR CR LF": (_stray_cr, False),
    "ANSI: coloured prompt, window title, grep --color on every GUID": (_ansi, True),
    "tabs collapsed to nothing": (_tabs_to_nothing, False),
    "tabs turned into one space": (_tabs_to_space, False),
    "runs of blanks squeezed to one space": (_spaces_squeezed, False),
    "no final newline": (_no_final_newline, False),
    "all of it: tabs to nothing, PuTTY log, ANSI prompt and colours": (_everything, True),
}


def same(a: Fabric, b: Fabric) -> bool:
    return (
        dict(a.nodes) == dict(b.nodes)
        and a.links == b.links
        and a.unconnected == b.unconnected
        and a.origin == b.origin
    )


def _skipped_warnings(fabric: Fabric) -> list[str]:
    return [w for w in fabric.warnings if w.startswith("skipped ")]


CASES = [(p, t) for p in CAPTURES for t in TRANSFORMATIONS]


@pytest.mark.parametrize(("path", "name"), CASES, ids=[f"{p.name}/{t.split(':')[0]}" for p, t in CASES])
def test_saved_capture_reads_as_the_file(path: Path, name: str, tmp_path: Path) -> None:
    transform, adds_lines = TRANSFORMATIONS[name]
    clean = read_ibnetdiscover(path)
    assert not _skipped_warnings(clean), "the capture itself has nothing to skip"
    text = transform(path.read_text(encoding="utf-8"))
    got = parse_ibnetdiscover_text(text, "saved.txt")
    assert same(got, clean), name
    # As a file too: the reader keeps the line ends as saved (text mode would double CR CR LF).
    saved = tmp_path / "saved.txt"
    saved.write_bytes(text.encode("utf-8"))
    assert same(read_ibnetdiscover(saved), clean), name
    skipped = _skipped_warnings(got)
    if adds_lines:
        (warning,) = skipped  # one warning, however many lines
        first = next(i for i, line in enumerate(re.split(r"\r*\n", text), 1) if line.strip())
        assert f"line{'s' if 'lines' in warning else ''} {first}" in warning
    else:
        assert skipped == []


def test_one_warning_names_the_first_few_lines() -> None:
    path = next(p for p in CAPTURES if "small-lab" in p.name)
    text = "\n".join(
        ["banner", "$ ibnetdiscover", *path.read_text().splitlines(), "$ ls", "$ ", "$ exit", "bye"]
    )
    f = parse_ibnetdiscover_text(text, "x")
    n = len(text.splitlines())
    assert _skipped_warnings(f) == [
        f"skipped 6 lines that are not ibnetdiscover output (a logger's banner, a shell prompt, a paste): "
        f"lines 1, 2, {n - 3}, {n - 2}, {n - 1} and 1 more"
    ]


def test_utf16_capture_from_a_powershell_redirect(tmp_path: Path) -> None:
    path = next(p for p in CAPTURES if "small-lab" in p.name)
    saved = tmp_path / "ps.txt"
    saved.write_bytes(path.read_text().replace("\n", "\r\n").encode("utf-16"))  # with its BOM
    assert same(read_ibnetdiscover(saved), read_ibnetdiscover(path))


@pytest.mark.parametrize(
    "edit",
    [
        # A port line cut short inside a record of a terminal log: an error at that line.
        lambda lines, i: [*lines[:i], lines[i][:25], *lines[i + 1 :]],
        # A shell line inside a record (its port lines continue after it): an error at it.
        lambda lines, i: [*lines[:i], "user@mgmt01:~$ ls", *lines[i:]],
    ],
    ids=["port line cut short", "shell line inside a record"],
)
def test_broken_record_in_a_saved_log_is_an_error(edit: Callable[[list[str], int], list[str]]) -> None:
    path = next(p for p in CAPTURES if "loginoff" in p.name)
    lines = _putty(path.read_text()).split("\r\n")
    i = next(i for i, line in enumerate(lines) if line.startswith("[3]\t"))
    with pytest.raises(ParseError) as err:
        parse_ibnetdiscover_text("\r\n".join(edit(lines, i)), "log.txt")
    assert err.value.lineno == i + 1
    assert str(err.value).startswith(f"log.txt:{i + 1}:")
    assert "\n" not in str(err.value)
