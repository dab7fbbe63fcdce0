"""An ApiClient whose in-flight requests can be cut short from another thread.

A blocked read (a partition, a held stream) would otherwise keep an action's thread, and the
console's exit, waiting for the request timeout times urllib3's retries. `cancel()` shuts down the
sockets of this client's connections (the blocked read returns at once) and refuses new ones, so
every request fails fast; the caller's cancel event tells the executor it was a cancel. A client
of its own, so cancelling an action never touches the informers' connections.
"""

from __future__ import annotations

import contextlib
import copy
import socket
import threading
import weakref
from typing import Any

from kubernetes import client
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool


class CancellableClient:
    def __init__(self, configuration: client.Configuration, *, retries: Any = None) -> None:
        cfg = copy.deepcopy(configuration)
        if retries is not None:
            cfg.retries = retries
        self.api = client.ApiClient(cfg)
        self.cancelled = threading.Event()
        self._conns: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()
        pm = self.api.rest_client.pool_manager
        pm.pool_classes_by_scheme = {"http": self._pool(HTTPConnectionPool),
                                     "https": self._pool(HTTPSConnectionPool)}

    def _pool(self, base: type[HTTPConnectionPool]) -> type[HTTPConnectionPool]:
        owner = self

        class Connection(base.ConnectionCls):  # type: ignore[name-defined,misc]
            def connect(self) -> None:
                if owner.cancelled.is_set():
                    raise ConnectionAbortedError("request cancelled")
                super().connect()
                with owner._lock:
                    owner._conns.add(self)

        return type(f"Cancellable{base.__name__}", (base,), {"ConnectionCls": Connection})

    def cancel(self) -> None:
        """Fail every request of this client now, and every later one."""
        self.cancelled.set()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            sock = getattr(conn, "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked reading it

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.api.close()
