"""A ContextPool's clusters on one watch loop (sources/watch_loop.py) against `sim serve
multikueue` over loopback sockets: each context's store equals its server, as the threaded
informers' does; a worker taken down and brought back catches up while the others stay live;
eleven contexts cost one watch thread."""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kueuetop.sim.scenarios.multicluster import load_multicluster
from kueuetop.sim.serve_world import ServedWorld, start_served_world
from kueuetop.sources.multi_context import ContextPool, ContextRead
from kueuetop.sources.session import POSITION_FETCHES
from kueuetop.sources.watch_loop import AUTH_NAME, AUTH_THREADS, THREAD_NAME
from kueuetop.store import SourceState, Store
from tests.sources.live.conftest import KINDS, _watched_pod
from tests.waiting import wait_until

SPEED = 60.0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServedWorld]:
    s = start_served_world(load_multicluster("multikueue"), speed=SPEED, kubeconfig=str(tmp_path / "kubeconfig"))
    assert s.caught_up.wait(30)
    yield s
    s.stop()


def _server_versions(served: ServedWorld, ctx: str, kind: str) -> set[tuple[str, str]]:
    group, plural = KINDS[kind]
    items, _ = served.world.parts[ctx].cluster.store.list(group, plural, copy=False)
    if kind == "pods":
        items = [p for p in items if _watched_pod(p)]
    return {(o["metadata"]["uid"], str(o["metadata"]["resourceVersion"])) for o in items}


def _assert_equals_server(served: ServedWorld, ctx: str, *stores: Store, timeout: float = 20.0) -> None:
    """With that cluster held still, every store reaches exactly its server's objects."""
    with served.world.parts[ctx].cluster.lock:
        def diff() -> dict[str, list[tuple[int, int]]]:
            out = {}
            for kind in KINDS:
                want = _server_versions(served, ctx, kind)
                d = [(len(want - s.versions(kind)), len(s.versions(kind) - want)) for s in stores]
                if any(x != (0, 0) for x in d):
                    out[kind] = d
            return out

        wait_until(lambda: not diff(), timeout, 0.1)
        assert diff() == {}, f"{ctx}: store differs from server (missing, extra) per kind: {diff()}"


def _open(pool: ContextPool) -> dict[str, ContextRead]:
    reads = {r.context: r for r in pool.refresh()}
    assert all(r.session is not None for r in reads.values()), {c: r.error for c, r in reads.items()}
    return reads


def _kind(name: str) -> str:
    return name.split(":")[0].split("_")[0]


def _client_threads() -> collections.Counter[str]:
    """kueuetop's client threads by kind (the simulated servers share this process)."""
    return collections.Counter(_kind(t.name) for t in threading.enumerate() if t.name.startswith("kueuetop-")
                               and not t.name.startswith(("kueuetop-apiserver", "kueuetop-sim")))


def test_same_stores_as_threaded_informers_after_sync_and_changes(served: ServedWorld) -> None:
    shared = ContextPool(str(served.kubeconfig), served.contexts, timeout=20)
    threaded = ContextPool(str(served.kubeconfig), served.contexts, timeout=20, shared_loop=False)
    try:
        a, b = _open(shared), _open(threaded)
        assert all(r.session.sources.on_loop for r in a.values())
        assert not any(r.session.sources.on_loop for r in b.values())
        for ctx in served.contexts:
            _assert_equals_server(served, ctx, a[ctx].session.store, b[ctx].session.store)
        first = {ctx: a[ctx].session.store.versions("workloads") for ctx in served.contexts}
        # The simulation moves on (Jobs admitted, run, finish): both follow it.
        assert wait_until(lambda: all(a[c].session.store.versions("workloads") != first[c]
                                      for c in ("manager", "us-central1")), 30)
        for ctx in served.contexts:
            _assert_equals_server(served, ctx, a[ctx].session.store, b[ctx].session.store)
    finally:
        shared.close()
        threaded.close()


def test_worker_down_and_back_others_unaffected(served: ServedWorld) -> None:
    pool = ContextPool(str(served.kubeconfig), served.contexts, timeout=20)
    down, other = "europe-west4", "us-central1"
    try:
        reads = _open(pool)
        stores = {c: r.session.store for c, r in reads.items()}
        served.set_worker_up(down, False)

        def states(ctx: str) -> set[SourceState]:
            return {s.state for n, s in stores[ctx].sources().items() if n != "visibility"}

        assert wait_until(lambda: SourceState.LIVE not in states(down), 20), states(down)
        # Meanwhile the manager and the other workers stay live, confirmed fresh by their probes,
        # and equal to their servers.
        seen = {c: stores[c].source("workloads").last_ok for c in ("manager", other)}
        assert wait_until(lambda: all(stores[c].source("workloads").last_ok > seen[c] for c in seen), 15)
        for ctx in ("manager", other):
            assert states(ctx) == {SourceState.LIVE}, (ctx, states(ctx))
            _assert_equals_server(served, ctx, stores[ctx])
        served.set_worker_up(down, True)
        assert wait_until(lambda: states(down) == {SourceState.LIVE}, 30), states(down)
        _assert_equals_server(served, down, stores[down])
        assert all(i.alive for i in reads[down].session.sources.informers)
    finally:
        pool.close()


def test_eleven_contexts_one_watch_thread(served: ServedWorld, tmp_path: Path) -> None:
    # Eleven contexts over the four servers (a manager and ten workers' worth of sessions).
    cfg = yaml.safe_load(served.kubeconfig.read_text())
    base = list(cfg["contexts"])
    for i in range(11 - len(base)):
        src = base[i % len(base)]
        cfg["contexts"].append({"name": f"{src['name']}-{i}", "context": dict(src["context"])})
    kc = tmp_path / "eleven.kubeconfig"
    kc.write_text(yaml.safe_dump(cfg))
    contexts = [c["name"] for c in cfg["contexts"]]
    assert len(contexts) == 11
    before = _client_threads()  # what earlier tests in this process left running
    pool = ContextPool(str(kc), contexts, timeout=30)
    try:
        reads = _open(pool)
        assert all(r.session.sources.synced() for r in reads.values())
        informers = sum(len(r.session.sources.informers) for r in reads.values())
        assert informers >= 11 * 10
        # What else runs per context is its store applier and visibility poller, not per resource.
        # Per context only its store applier and visibility poller, never a thread per resource.
        client = _client_threads() - before
        assert client.pop(AUTH_NAME, 0) <= AUTH_THREADS
        # A session's queue-position fetches have a small pool of their own, started by its first
        # visibility poll if one falls in this window: per context, never per resource.
        assert client.pop("kueuetop-positions", 0) <= POSITION_FETCHES * 11
        assert client == {THREAD_NAME: 1, "kueuetop-store-applier": 11, "kueuetop-visibility": 11}, client
    finally:
        pool.close()
    assert wait_until(lambda: _client_threads()[THREAD_NAME] == before[THREAD_NAME], 5), _client_threads()
