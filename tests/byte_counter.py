"""A TCP relay in front of `sim serve` that counts every byte a client and the server exchange.

What the API server sees, measured outside the client: `bytes_in` (requests, client → server),
`bytes_out` (answers, server → client), each with the time it moved so a test can sum any window.
Plain TCP: headers, bodies and chunk framing are all counted, as a control plane pays for them.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class ByteCounter:
    def __init__(self, upstream: str) -> None:
        host, port = upstream.split("://", 1)[-1].rstrip("/").rsplit(":", 1)
        self.upstream = (host, int(port))
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(256)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._moves: list[tuple[float, int, int]] = []  # (monotonic time, bytes in, bytes out)
        self._socks: set[socket.socket] = set()
        self._stopped = False
        threading.Thread(target=self._accept, name="byte-counter", daemon=True).start()

    @property
    def bytes_in(self) -> int:
        with self._lock:
            return sum(m[1] for m in self._moves)

    @property
    def bytes_out(self) -> int:
        with self._lock:
            return sum(m[2] for m in self._moves)

    @property
    def total(self) -> int:
        with self._lock:
            return sum(m[1] + m[2] for m in self._moves)

    def max_in_window(self, seconds: float) -> int:
        """The most bytes (both ways) that moved within any `seconds`-long window so far."""
        with self._lock:
            moves = list(self._moves)
        best, lo, acc = 0, 0, 0
        for hi in range(len(moves)):
            acc += moves[hi][1] + moves[hi][2]
            while moves[hi][0] - moves[lo][0] > seconds:
                acc -= moves[lo][1] + moves[lo][2]
                lo += 1
            best = max(best, acc)
        return best

    def stop(self) -> None:
        self._stopped = True
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            socks, self._socks = list(self._socks), set()
        for s in socks:
            with contextlib.suppress(OSError):
                s.close()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._socks.update((client, server))
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, request: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with self._lock:
                    self._moves.append((time.monotonic(), len(data) if request else 0, 0 if request else len(data)))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
