"""A hostile network between a client and `sim serve`: an HTTP/1.1-aware TCP proxy that can delay,
hold, partition and drop traffic, and lose the reply to a chosen request.

Clients connect to `proxy.url` instead of the server's URL. Every client connection gets its own
upstream connection; requests and responses are parsed just enough (head, Content-Length or chunked
body) to know where each one ends, so a rule can act on one request of a keep-alive connection and a
watch's chunked stream can be held mid-flight.

- `delay(seconds)`: each request waits that long before it is forwarded.
- `hold()` / `release()`: no byte moves in either direction (connections stay open, bytes wait in
  the kernel's buffers), as when traffic is held by a stalled middlebox; released, it flows again.
- `partition()` / `heal()`: like hold, and new connections are accepted but not served either, as a
  network partition looks to TCP before any timeout fires. Healed, what was buffered is delivered.
- `drop_connections()`: reset every open connection (a proxy or load balancer restart).
- `rule(fn)`: `fn(method, path) -> "pass" | "lose-reply" | "lose-request" | "delay:SECONDS"`, asked
  per request: `lose-reply` forwards the request, lets the server answer, then resets the client's
  connection without a byte of the answer (the write landed, the client cannot know);
  `lose-request` resets the client's connection without forwarding; `delay:2.5` forwards that one
  request 2.5 s late (a busy server answering it late) while other connections flow.

Plain HTTP only (the test clusters it fronts serve plain HTTP).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

Rule = Callable[[str, str], str]


class _Closed(Exception):
    """The peer closed its side (or the proxy reset the connection)."""


@dataclass
class Seen:
    """One request as the proxy saw it, and what it did with it."""

    method: str
    path: str
    verdict: str
    at: float = field(default_factory=time.monotonic)


class _Reader:
    """Buffered reads from a socket that respect the proxy's gate."""

    def __init__(self, sock: socket.socket, gate: Callable[[], None]) -> None:
        self.sock = sock
        self.buf = b""
        self.gate = gate

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise _Closed
        self.gate()
        self.buf += data

    def until(self, marker: bytes) -> bytes:
        while marker not in self.buf:
            self._fill()
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def some(self) -> bytes:
        if not self.buf:
            self._fill()
        out, self.buf = self.buf, b""
        return out


def _headers(head: bytes) -> dict[str, str]:
    lines = head.decode("latin-1").split("\r\n")[1:]
    out: dict[str, str] = {}
    for line in lines:
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip().lower()] = v.strip()
    return out


def _reset(sock: socket.socket) -> None:
    # SO_LINGER 0: close sends RST, as a dropped connection looks to the client.
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        hostport = upstream.split("://", 1)[-1].rstrip("/")
        host, port = hostport.rsplit(":", 1)
        self.upstream = (host, int(port))
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(512)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._flowing = threading.Event()
        self._flowing.set()
        self._partitioned = False
        self._delay = 0.0
        self._rule: Rule | None = None
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._stopped = threading.Event()
        self.seen: list[Seen] = []
        self._thread = threading.Thread(target=self._accept, name="fault-proxy", daemon=True)

    # -- controls ---------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._flowing.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        self.drop_connections()

    def delay(self, seconds: float) -> None:
        self._delay = seconds

    def hold(self) -> None:
        self._flowing.clear()

    def release(self) -> None:
        self._partitioned = False
        self._flowing.set()

    def partition(self) -> None:
        self._partitioned = True
        self._flowing.clear()

    heal = release

    def rule(self, fn: Rule | None) -> None:
        self._rule = fn

    def drop_connections(self) -> None:
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for s in conns:
            _reset(s)

    def requests(self, method: str | None = None, path_part: str = "") -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if (method is None or s.method == method) and path_part in s.path]

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- relaying ---------------------------------------------------------------------------
    def _gate(self) -> None:
        while not self._flowing.wait(0.05):
            if self._stopped.is_set():
                raise _Closed

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._conns.add(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            self._gate()  # a partition holds new connections too
            upstream = socket.create_connection(self.upstream, timeout=None)
            with self._lock:
                self._conns.add(upstream)
            creader, ureader = _Reader(client, self._gate), _Reader(upstream, self._gate)
            while True:
                head = creader.until(b"\r\n\r\n")
                hdrs = _headers(head)
                method, path = [*head.split(b" ", 2)[:2], b"", b""][:2]
                m, p = method.decode("latin-1"), path.decode("latin-1")
                body = self._read_body(creader, hdrs, request=True)
                verdict = self._rule(m, p) if self._rule else "pass"
                with self._lock:
                    self.seen.append(Seen(m, p, verdict))
                if verdict == "lose-request":
                    raise _Closed
                if verdict.startswith("delay:"):
                    time.sleep(float(verdict.split(":", 1)[1]))
                if self._delay:
                    time.sleep(self._delay)
                self._gate()
                upstream.sendall(head + body)
                if verdict == "lose-reply":
                    rhead = ureader.until(b"\r\n\r\n")
                    self._read_body(ureader, _headers(rhead), request=False)  # the server finished
                    raise _Closed
                self._relay_response(ureader, client, m)
        except (_Closed, OSError):
            pass
        finally:
            _reset(client)
            if upstream is not None:
                _reset(upstream)
            with self._lock:
                self._conns.discard(client)
                if upstream is not None:
                    self._conns.discard(upstream)

    @staticmethod
    def _read_body(reader: _Reader, hdrs: dict[str, str], request: bool) -> bytes:
        if "chunked" in hdrs.get("transfer-encoding", "").lower():
            out = b""
            while True:
                size_line = reader.until(b"\r\n")
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                out += size_line + reader.exactly(size + 2)
                if size == 0:
                    return out
        n = int(hdrs.get("content-length", "0") or 0)
        if n or request:
            return reader.exactly(n)
        return b""

    def _relay_response(self, ureader: _Reader, client: socket.socket, method: str) -> None:
        head = ureader.until(b"\r\n\r\n")
        hdrs = _headers(head)
        self._gate()
        client.sendall(head)
        status = int(head.split(b" ", 2)[1])
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return
        if "chunked" in hdrs.get("transfer-encoding", "").lower():
            # Chunk by chunk, gated, so a held watch stream delivers nothing until released.
            while True:
                size_line = ureader.until(b"\r\n")
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                data = size_line + ureader.exactly(size + 2)
                self._gate()
                client.sendall(data)
                if size == 0:
                    return
        if "content-length" in hdrs:
            left = int(hdrs["content-length"])
            while left > 0:
                data = ureader.exactly(min(left, 65536))
                self._gate()
                client.sendall(data)
                left -= len(data)
            return
        # No length: the body ends when the server closes.
        while True:
            data = ureader.some()
            self._gate()
            client.sendall(data)
