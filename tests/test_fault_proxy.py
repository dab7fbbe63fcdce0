"""The fault proxy does what the reliability tests rely on, seen through the real kubernetes client."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator

import pytest
import urllib3
from kubernetes import client

from kueuetop.sim.apiserver import ApiServer
from kueuetop.sim.storage.objectstore import ObjectStore
from tests.fault_proxy import FaultProxy
from tests.waiting import wait_until


@pytest.fixture
def server() -> Iterator[ApiServer]:
    store = ObjectStore(seed=3)
    store.create("", "namespaces", {"metadata": {"name": "default"}, "status": {"phase": "Active"}})
    srv = ApiServer(store).start()
    yield srv
    srv.stop()


@pytest.fixture
def proxy(server: ApiServer) -> Iterator[FaultProxy]:
    with FaultProxy(server.url) as p:
        yield p


def core(url: str, timeout: float = 5) -> client.CoreV1Api:
    cfg = client.Configuration()
    cfg.host = url
    cfg.retries = False
    api = client.ApiClient(cfg)
    return client.CoreV1Api(api)


def cm(name: str, value: str = "1") -> dict:
    return {"metadata": {"name": name}, "data": {"v": value}}


def labels_of(server: ApiServer, name: str) -> dict:
    obj = server.store.get("", "namespaces", None, name)
    return (obj or {}).get("metadata", {}).get("labels") or {}


def test_passes_requests_and_keep_alive(server: ApiServer, proxy: FaultProxy) -> None:
    api = core(proxy.url)
    for _ in range(3):  # one pooled connection carries several requests
        names = [n.metadata.name for n in api.list_namespace().items]
        assert names == ["default"]
    assert len(proxy.requests("GET", "/api/v1/namespaces")) == 3


def test_lose_reply_lands_the_write_but_the_client_sees_an_error(server: ApiServer, proxy: FaultProxy) -> None:
    proxy.rule(lambda m, p: "lose-reply" if m == "PATCH" else "pass")
    api = core(proxy.url)
    with pytest.raises((urllib3.exceptions.HTTPError, OSError)):
        api.patch_namespace("default", {"metadata": {"labels": {"x": "1"}}}, _request_timeout=5)
    assert labels_of(server, "default") == {"x": "1"}


def test_lose_request_never_reaches_the_server(server: ApiServer, proxy: FaultProxy) -> None:
    proxy.rule(lambda m, p: "lose-request" if m == "PATCH" else "pass")
    with pytest.raises((urllib3.exceptions.HTTPError, OSError)):
        core(proxy.url).patch_namespace("default", {"metadata": {"labels": {"x": "1"}}}, _request_timeout=5)
    assert labels_of(server, "default") == {}


def test_hold_stops_a_watch_stream_and_release_delivers(server: ApiServer, proxy: FaultProxy) -> None:
    http = urllib3.PoolManager()
    rv = server.store.resource_version
    resp = http.request("GET", f"{proxy.url}/api/v1/namespaces?watch=1&resourceVersion={rv}",
                        preload_content=False, timeout=urllib3.Timeout(connect=2, read=30))
    got: list[dict] = []

    def read() -> None:
        buf = b""
        with contextlib.suppress(urllib3.exceptions.HTTPError, OSError):  # ended by the teardown
            for chunk in resp.stream(1024):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        got.append(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    server.store.create("", "namespaces", {"metadata": {"name": "a"}})
    assert wait_until(lambda: any(e["object"]["metadata"]["name"] == "a" for e in got), 5)
    proxy.hold()
    server.store.create("", "namespaces", {"metadata": {"name": "b"}})
    # Held: the event waits. Wait on a later condition (the server wrote it) then check delivery did not happen.
    assert server.store.get("", "namespaces", None, "b") is not None
    assert not wait_until(lambda: any(e["object"]["metadata"]["name"] == "b" for e in got), 1.0)
    proxy.release()
    assert wait_until(lambda: any(e["object"]["metadata"]["name"] == "b" for e in got), 5)
    resp.release_conn()


def test_partition_buffers_a_request_and_heal_delivers_it(server: ApiServer, proxy: FaultProxy) -> None:
    proxy.partition()
    result: list[object] = []

    def send() -> None:
        try:
            core(proxy.url).patch_namespace("default", {"metadata": {"labels": {"y": "2"}}}, _request_timeout=10)
            result.append("ok")
        except Exception as exc:  # the test reads what happened
            result.append(exc)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    assert not wait_until(lambda: labels_of(server, "default"), 1.0), "a partition let a request through"
    proxy.heal()
    t.join(10)
    assert result == ["ok"]
    assert labels_of(server, "default") == {"y": "2"}


def test_drop_connections_resets_an_open_watch(server: ApiServer, proxy: FaultProxy) -> None:
    http = urllib3.PoolManager()
    resp = http.request("GET", f"{proxy.url}/api/v1/namespaces?watch=1", preload_content=False,
                        timeout=urllib3.Timeout(connect=2, read=30))
    ended = threading.Event()

    def read() -> None:
        try:
            for _ in resp.stream(1024):
                pass
        except Exception:  # a reset ends the stream with an error; either way it ended
            pass
        ended.set()

    threading.Thread(target=read, daemon=True).start()
    assert wait_until(lambda: proxy.requests("GET", "watch=1"), 5)
    proxy.drop_connections()
    assert ended.wait(5)
