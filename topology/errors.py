"""The one error hierarchy of ibfab.

Every layer raises subclasses of :class:`IbfabError`; ``fabric.cli`` maps them to a one-line
message and an exit code in one place (``exit_code`` below). It lives in the lowest package so
that every layer can import it without breaking the import direction.
"""

from __future__ import annotations

from collections.abc import Sequence

# An error is read by a person: whatever text it quotes (a 10 MB line, a long host range) is cut.
MAX_ERROR_CHARS = 400
MAX_QUOTED_CHARS = 80


def excerpt(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """``repr`` of ``text``, cut to about ``limit`` characters with how much was left out.

    >>> excerpt("n" * 1000, 20)
    "'nnnnnnnnnnnnnnnnn...' (1000 characters)"
    """
    if len(text) <= limit:
        return repr(text)
    shown = repr(text[: max(1, limit - 3)])
    return f"{shown[:-1]}...{shown[-1]} ({len(text)} characters)"


class IbfabError(Exception):
    """Root of every error ibfab raises on purpose."""

    exit_code = 1

    def one_line(self) -> str:
        """The message on one line, at most MAX_ERROR_CHARS (its head and tail kept)."""
        line = " ".join(str(self).split())
        if len(line) <= MAX_ERROR_CHARS:
            return line
        # The marker's own length counts: the whole is at most MAX_ERROR_CHARS.
        keep = (MAX_ERROR_CHARS - len(f" [... {len(line)} characters ...] ")) // 2
        return f"{line[:keep]} [... {len(line) - 2 * keep} characters ...] {line[-keep:]}"


class UsageError(IbfabError):
    """The user asked for something that cannot be done as asked."""

    exit_code = 2


class InputError(UsageError):
    """A file the user wrote (an inventory, a host list) that does not parse; the message names the
    file and line. Exit 3, as any input that does not parse (it is a UsageError for handlers)."""

    exit_code = 3


class ParseError(IbfabError):
    """Tool output that does not parse. Names the tool, the source, the line number and the line."""

    exit_code = 3

    def __init__(self, tool: str, source: str, lineno: int, line: str, problem: str) -> None:
        self.tool = tool
        self.source = source
        self.lineno = lineno
        self.line = line
        self.problem = problem
        shown = line.strip()
        if len(shown) > 80:
            shown = shown[:77] + "..."
        where = f"{source}:{lineno}" if lineno else source
        super().__init__(f"{where}: {tool} output: {problem}" + (f": {shown!r}" if shown else ""))


class CommandFailed(IbfabError):
    """An external command could not run or exited with an error."""

    exit_code = 4

    def __init__(
        self, argv: Sequence[str], returncode: int | None, stderr: str, where: str = "local"
    ) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        self.where = where
        last = next((ln.strip() for ln in reversed(stderr.splitlines()) if ln.strip()), "")
        rc = "not found" if returncode is None else f"exit {returncode}"
        super().__init__(
            f"{argv[0] if argv else '?'} on {where} failed ({rc})" + (f": {last}" if last else "")
        )


class StoreError(IbfabError):
    """The SQLite store is missing, of another schema version, or cannot be written."""

    exit_code = 5


class LabError(IbfabError):
    """The simulated fabric could not be started, reached or stopped."""

    exit_code = 6


class TransportError(IbfabError):
    """A host could not be reached, authenticated or verified (SSH)."""

    exit_code = 7


class SafetyError(IbfabError):
    """A change to the fabric was refused because it would break a safety rule."""

    exit_code = 8


class UnavailableError(IbfabError):
    """What the run needs is not to be had now (a host another ibfab process probes, nodes Slurm
    will not give, a Slurm controller that does not answer): nothing was run; try again later."""

    exit_code = 9
