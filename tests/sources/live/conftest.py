"""A served refarch cluster (fast clock, tokens) shared by the live-path tests."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from kueuetop.sources.connection import Connection, connect
from kueuetop.sources.kube import MANAGED_LABEL, PODSET_LABEL, KubeSources
from kueuetop.store import Store
from tests.waiting import FAST, wait_until

ADMIN_TOKEN = "live-admin-token"
VIEWER_TOKEN = "live-viewer-token"
KUEUE = "kueue.x-k8s.io"

# Store kind → (group, plural) in the simulator's object store.
KINDS = {"clusterqueues": (KUEUE, "clusterqueues"), "localqueues": (KUEUE, "localqueues"),
         "workloads": (KUEUE, "workloads"), "resourceflavors": (KUEUE, "resourceflavors"),
         "cohorts": (KUEUE, "cohorts"), "admissionchecks": (KUEUE, "admissionchecks"),
         "provisioningrequests": ("autoscaling.x-k8s.io", "provisioningrequests"),
         "nodes": ("", "nodes"), "namespaces": ("", "namespaces"), "pods": ("", "pods")}



@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("live")
    tokens = d / "tokens.yaml"
    tokens.write_text(f"{ADMIN_TOKEN}: {{user: alice, role: admin}}\n{VIEWER_TOKEN}: {{user: bob, role: viewer}}\n")
    s = start_served(load_scenario("refarch"), speed=60, token_file=str(tokens), kubeconfig=str(d / "kubeconfig"))
    assert s.caught_up.wait(60)  # the first instant settled before any test looks
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def _clear_faults(served: ServedCluster) -> Iterator[None]:
    yield
    served.server.faults.update({"dropWatchesEverySeconds": 0, "errorRate": 0, "latencyMs": 0})


@pytest.fixture
def conn(served: ServedCluster) -> Iterator[Connection]:
    c = connect(str(served.kubeconfig))
    yield c
    c.close()


@pytest.fixture
def viewer_kubeconfig(served: ServedCluster, tmp_path: Path) -> Path:
    return write_kubeconfig(tmp_path / "viewer.kubeconfig", served.url, token=VIEWER_TOKEN, context="viewer")


class Live:
    def __init__(self, store: Store, sources: KubeSources) -> None:
        self.store = store
        self.sources = sources


@pytest.fixture
def live_factory() -> Iterator[Callable[..., Live]]:
    started: list[KubeSources] = []

    def make(conn: Connection, **kw: Any) -> Live:
        store = Store()
        kw.setdefault("config", FAST)
        kw.setdefault("visibility_interval", 0.3)
        src = KubeSources(conn, store, **kw).start()
        started.append(src)
        assert wait_until(src.synced, 10), store.sources()
        return Live(store, src)

    yield make
    for s in started:
        s.stop(timeout=3)


@pytest.fixture
def live(conn: Connection, live_factory: Callable[..., Live]) -> Live:
    return live_factory(conn)


def _watched_pod(pod: dict[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return PODSET_LABEL in labels or labels.get(MANAGED_LABEL) == "true"


def server_versions(served: ServedCluster, kind: str) -> set[tuple[str, str]]:
    group, plural = KINDS[kind]
    items, _ = served.parts.cluster.store.list(group, plural, copy=False)
    if kind == "pods":
        items = [p for p in items if _watched_pod(p)]
    return {(o["metadata"]["uid"], str(o["metadata"]["resourceVersion"])) for o in items}


@contextlib.contextmanager
def frozen(served: ServedCluster) -> Iterator[None]:
    """Hold the simulation still (its loop takes this lock each step) while comparing."""
    with served.parts.cluster.lock:
        yield


def assert_converges(served: ServedCluster, store: Store, timeout: float = 15.0) -> None:
    """With the simulation paused, the store must reach exactly the server's objects."""
    with frozen(served):
        def diff() -> dict[str, tuple[int, int]]:
            out = {}
            for kind in KINDS:
                want, have = server_versions(served, kind), store.versions(kind)
                if want != have:
                    out[kind] = (len(want - have), len(have - want))
            return out

        wait_until(lambda: not diff(), timeout, 0.1)
        assert diff() == {}, f"store differs from server (missing, extra) per kind: {diff()}"


@pytest.fixture(scope="package")
def served20(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    """refarch at 20x with no tokens: the headless commands' and GPU poller's tests."""
    d = tmp_path_factory.mktemp("live20")
    s = start_served(load_scenario("refarch"), speed=20, kubeconfig=str(d / "kubeconfig"))
    assert s.caught_up.wait(60)  # the first instant settled before any test looks
    yield s
    s.stop()
