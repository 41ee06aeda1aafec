"""A small HTTP/1.1 server for the exporter, bounded in every resource a client can make it spend.

>>> limits = Limits(max_connections=64)     # doctest: +SKIP
>>> server = HttpServer.bind("127.0.0.1", 9315, respond, limits)
>>> threading.Thread(target=server.serve_forever).start(); ...; server.shutdown()

DECISION: one thread with a selector (epoll) over non-blocking sockets, rather than a thread per
connection (what ``wsgiref``/``prometheus_client`` do). A scraper is one request every 15-60 s;
what the server must survive is everyone else: 1,500 idle connections were 1,503 threads, 150
clients that half-close and never read held a 15.6 MB copy of the page each (2.3 GB). Here:

* threads: one, whatever the clients do;
* connections: at most ``max_connections``; at the cap the connection that has waited longest
  without sending a whole request is closed to make room (so idle or trickling clients cannot lock
  a scraper out); one whose whole request has arrived (read or still in the socket) is never shed,
  it is served; when no slot is idle, the newcomer gets a 503 and is closed;
* time: a request must arrive whole within ``request_timeout_s`` of the connection (or of the
  previous response); a response whose client accepts no byte for ``write_stall_s``, or that has
  not been sent in ``response_timeout_s``, is dropped;
* memory: a request is at most ``max_request_bytes`` (headers; GET and HEAD carry no body), and a
  response body is a tuple of ``bytes`` the caller already holds: it is sent from memoryviews of
  those objects, never copied, so N clients reading the same page cost one page. The kernel's send
  buffer per connection is capped too (``send_buffer_bytes``).

Only GET and HEAD are answered (405 with ``Allow: GET, HEAD`` otherwise, and the connection is
closed without reading the body).
"""

from __future__ import annotations

import contextlib
import errno
import selectors
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from topology.errors import UsageError

ALLOWED_METHODS = ("GET", "HEAD")


@dataclass(frozen=True, slots=True)
class Limits:
    """Every bound of :class:`HttpServer` (the README's "Limits and guarantees" lists them)."""

    max_connections: int = 256
    request_timeout_s: float = 10.0
    write_stall_s: float = 10.0
    response_timeout_s: float = 120.0
    max_request_bytes: int = 8192
    send_buffer_bytes: int = 256 * 1024


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str  # without the query string
    version: str  # "HTTP/1.1"
    headers: Mapping[str, str]  # names lower-cased


@dataclass(frozen=True, slots=True)
class Response:
    status: str  # "200 OK"
    headers: tuple[tuple[str, str], ...]
    body: tuple[bytes, ...] = ()  # chunks sent as they are (shared, never joined)

    @classmethod
    def text(cls, status: str, message: str, *extra: tuple[str, str]) -> Response:
        return cls(status, (("Content-Type", "text/plain; charset=utf-8"), *extra), (message.encode(),))


Responder = Callable[[Request], Response]


class _State(Enum):
    READING = "reading"
    WRITING = "writing"


@dataclass(eq=False)
class _Connection:
    sock: socket.socket
    state: _State
    deadline: float  # monotonic: when the request must be in / the response out
    since: float  # monotonic: when the current request began to be awaited
    buffer: bytearray = field(default_factory=bytearray)
    out: list[memoryview] = field(default_factory=list)
    last_progress: float = 0.0
    close_after: bool = False


class HttpServer:
    """See the module docstring. :meth:`serve_forever` in one thread, :meth:`shutdown` from another."""

    def __init__(
        self,
        listener: socket.socket,
        respond: Responder,
        limits: Limits,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self._listener = listener
        self._respond = respond
        self.limits = limits
        self._log = log
        self._selector = selectors.DefaultSelector()
        self._conns: dict[socket.socket, _Connection] = {}
        self._pipelined: list[_Connection] = []  # a whole request already buffered, not yet answered
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self.refused = 0  # newcomers turned away with a 503 (every slot busy sending)
        self.evicted = 0  # waiting connections closed to make room for a newcomer
        self.timed_out = 0

    @classmethod
    def bind(
        cls,
        host: str,
        port: int,
        respond: Responder,
        limits: Limits | None = None,
        log: Callable[[str], None] | None = None,
    ) -> HttpServer:
        """Listen on host:port (port 0: a free one); :class:`UsageError` when that cannot be done."""
        where = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
        try:
            family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        except socket.gaierror as exc:
            raise UsageError(f"--listen {where}: unknown address ({exc.strerror})") from exc
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart over TIME_WAIT
            sock.bind((host, port))
            sock.listen(128)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                raise UsageError(
                    f"--listen {where}: address already in use (another exporter running?)"
                ) from exc
            raise UsageError(f"--listen {where}: cannot listen: {exc.strerror or exc}") from exc
        return cls(sock, respond, limits or Limits(), log)

    @property
    def server_port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def connections(self) -> int:
        return len(self._conns)

    # -- the loop -------------------------------------------------------------------------------
    def serve_forever(self, tick_s: float = 0.25) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ)
        try:
            while not self._stop.is_set():
                pipelined, self._pipelined = self._pipelined, []
                for conn in pipelined:
                    if conn.sock in self._conns and conn.state is _State.READING:
                        self._guarded(conn, self._handle_buffered)
                for key, events in self._selector.select(0 if self._pipelined else tick_s):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    if sock is self._listener:
                        self._accept()
                        continue
                    ready = self._conns.get(sock)
                    if ready is not None:
                        self._guarded(ready, self._read if events & selectors.EVENT_READ else self._write)
                self._expire()
        finally:
            for conn in list(self._conns.values()):
                self._close(conn)
            self._selector.close()
            self._listener.close()
            self._stopped.set()

    def _guarded(self, conn: _Connection, step: Callable[[_Connection], None]) -> None:
        try:
            step(conn)
        except OSError:
            self._close(conn)  # reset, broken pipe: the client is gone

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the loop (from another thread) and wait for it to close every socket."""
        self._stop.set()
        self._stopped.wait(timeout)

    def server_close(self) -> None:
        """Close the listening socket when the loop never ran."""
        if not self._stopped.is_set():
            self._listener.close()

    # -- connections ----------------------------------------------------------------------------
    def _accept(self) -> None:
        for _ in range(64):  # a burst of connects cannot starve the connections already open
            try:
                sock, _addr = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and friends: keep serving those already open
                if self._log is not None:
                    self._log(f"accept failed: {exc.strerror or exc}")
                return
            sock.setblocking(False)
            if len(self._conns) >= self.limits.max_connections and not self._evict_one():
                self.refused += 1
                # best effort, never waits: an empty socket buffer takes a short reply whole
                with contextlib.suppress(OSError):
                    sock.send(
                        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    )
                sock.close()
                continue
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.limits.send_buffer_bytes)
            now = time.monotonic()
            conn = _Connection(sock, _State.READING, now + self.limits.request_timeout_s, now)
            self._conns[sock] = conn
            self._selector.register(sock, selectors.EVENT_READ)

    def _evict_one(self) -> bool:
        """Close the connection that has waited longest without a whole request; False when every
        one is sending, or has its whole request in (then it is served, not shed)."""
        waiting = sorted(
            (c for c in self._conns.values() if c.state is _State.READING), key=lambda c: c.since
        )
        for conn in waiting:
            if self._has_request(conn):
                continue  # its request arrived (read on this pass): a client that asked is answered
            self._close(conn)
            self.evicted += 1
            return True
        return False

    def _has_request(self, conn: _Connection) -> bool:
        """Whether a whole request head is in: buffered here, or waiting in the socket (peeked,
        not read: the loop reads it as usual)."""
        if _header_end(conn.buffer)[0] >= 0:
            return True
        try:
            pending = conn.sock.recv(self.limits.max_request_bytes + 4, socket.MSG_PEEK)
        except OSError:  # nothing there yet (EAGAIN), or the client is gone: either way idle
            return False
        return bool(pending) and _header_end(conn.buffer + pending)[0] >= 0

    def _close(self, conn: _Connection) -> None:
        if self._conns.pop(conn.sock, None) is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        conn.out.clear()
        conn.sock.close()

    def _expire(self) -> None:
        now = time.monotonic()
        for conn in list(self._conns.values()):
            stalled = conn.state is _State.WRITING and now - conn.last_progress > self.limits.write_stall_s
            if now > conn.deadline or stalled:
                self.timed_out += 1
                self._close(conn)

    # -- requests -------------------------------------------------------------------------------
    def _read(self, conn: _Connection) -> None:
        data = conn.sock.recv(4096)
        if not data:
            self._close(conn)  # the client closed (or half-closed) before a whole request
            return
        conn.buffer += data
        self._handle_buffered(conn)

    def _handle_buffered(self, conn: _Connection) -> None:
        end, sep = _header_end(conn.buffer)
        if end < 0:
            if len(conn.buffer) > self.limits.max_request_bytes:
                self._reply(
                    conn, Response.text("431 Request Header Fields Too Large", "request too large\n"), True
                )
            return
        head = bytes(conn.buffer[:end])
        del conn.buffer[: end + sep]
        if end > self.limits.max_request_bytes:
            self._reply(
                conn, Response.text("431 Request Header Fields Too Large", "request too large\n"), True
            )
            return
        request, problem = _parse_head(head)
        if request is None:
            self._reply(conn, Response.text("400 Bad Request", f"{problem}\n"), True)
            return
        if request.method not in ALLOWED_METHODS:
            allow = ("Allow", ", ".join(ALLOWED_METHODS))
            self._reply(conn, Response.text("405 Method Not Allowed", "only GET and HEAD\n", allow), True)
            return
        # A body on GET is not read: closing after the reply keeps the next request aligned.
        has_body = request.headers.get("content-length", "0").strip() not in ("", "0") or (
            "transfer-encoding" in request.headers
        )
        version_close = request.version == "HTTP/1.0"
        connection = request.headers.get("connection", "").lower()
        close = has_body or "close" in connection or (version_close and "keep-alive" not in connection)
        try:
            response = self._respond(request)
        except Exception as exc:  # one failing request must not stop the server
            if self._log is not None:
                self._log(
                    f"request {request.method} {request.path[:200]!r} failed: {type(exc).__name__}: {exc}"
                )
            response = Response.text("500 Internal Server Error", "internal error\n")
            close = True
        self._reply(conn, response, close, head_only=request.method == "HEAD")

    def _reply(self, conn: _Connection, response: Response, close: bool, head_only: bool = False) -> None:
        length = sum(len(chunk) for chunk in response.body)
        lines = [f"HTTP/1.1 {response.status}", *(f"{k}: {v}" for k, v in response.headers)]
        lines.append(f"Content-Length: {length}")
        if close:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        conn.out = [memoryview(head)]
        if not head_only:
            conn.out += [memoryview(chunk) for chunk in response.body if chunk]
        now = time.monotonic()
        conn.state = _State.WRITING
        conn.close_after = close
        conn.deadline = now + self.limits.response_timeout_s
        conn.last_progress = now
        self._selector.modify(conn.sock, selectors.EVENT_WRITE)
        self._write(conn)

    def _write(self, conn: _Connection) -> None:
        while conn.out:
            chunk = conn.out[0]
            try:
                sent = conn.sock.send(chunk)
            except (BlockingIOError, InterruptedError):
                return
            if sent:
                conn.last_progress = time.monotonic()
            if sent < len(chunk):
                conn.out[0] = chunk[sent:]  # a view of the same bytes: nothing copied
                return
            conn.out.pop(0)
        if conn.close_after:
            self._close(conn)
            return
        now = time.monotonic()
        conn.state = _State.READING
        conn.since = now
        conn.deadline = now + self.limits.request_timeout_s
        self._selector.modify(conn.sock, selectors.EVENT_READ)
        if conn.buffer:
            self._pipelined.append(conn)  # answered on the next pass (no recursion per request)


def _header_end(buffer: bytearray) -> tuple[int, int]:
    """Where the request head ends and the separator's length (-1, 0 when it has not yet)."""
    crlf = buffer.find(b"\r\n\r\n")
    lf = buffer.find(b"\n\n")
    if lf >= 0 and (crlf < 0 or lf < crlf):
        return lf, 2
    return (crlf, 4) if crlf >= 0 else (-1, 0)


def _parse_head(head: bytes) -> tuple[Request | None, str]:
    """The request line and headers, or None and why they are not HTTP/1.x."""
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        return None, "bad request"
    lines = text.split("\n")
    parts = lines[0].strip().split(" ")
    if (
        len(parts) != 3
        or not parts[0].isalpha()
        or not parts[0].isupper()
        or not parts[2].startswith("HTTP/1.")
    ):
        return None, "bad request line"
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            return None, "bad header line"
        headers[name.strip().lower()] = value.strip()
    return Request(method, target.partition("?")[0], version, headers), ""


__all__ = ["ALLOWED_METHODS", "HttpServer", "Limits", "Request", "Responder", "Response"]
