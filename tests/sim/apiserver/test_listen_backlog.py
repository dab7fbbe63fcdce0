"""A burst of new connections is queued by the kernel, not dropped (listen backlog)."""

from __future__ import annotations

import http.client
import threading

from kueuetop.sim.apiserver import ApiServer

CLIENTS = 400


def test_400_concurrent_connections_all_answered(server: ApiServer) -> None:
    # Each thread opens its own connection at the same instant. With socketserver's backlog of 5
    # the accept queue overflows and a third of them never get an answer (dropped SYNs/ACKs).
    start = threading.Barrier(CLIENTS)
    results: list[object] = [None] * CLIENTS

    def get(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        try:
            start.wait()
            conn.request("GET", "/api/v1/namespaces/default")
            resp = conn.getresponse()
            resp.read()
            results[i] = resp.status
        except OSError as e:
            results[i] = repr(e)
        finally:
            conn.close()

    threads = [threading.Thread(target=get, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [r for r in results if r != 200]
    assert not failed, f"{len(failed)} of {CLIENTS} failed, e.g. {failed[:3]}"
