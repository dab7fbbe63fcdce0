"""Paginated lists: every chunk comes from the first chunk's snapshot for as long as a real
server keeps its revision (etcd compaction, 5 minutes), whatever is written meanwhile; an
expired token answers 410 Expired with the real message and an inconsistent token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kueuetop.sim.apiserver import ApiServer
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import start_served
from kueuetop.sim.storage.list_snapshots import ABSENT, SnapshotChain
from kueuetop.sim.storage.objectstore import ObjectStore
from tests.waiting import wait_until

from .conftest import KUEUE, Clock, make_client, workload

V2 = "v1beta2"
INCONSISTENT = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - "
    "objects that were created, modified, or deleted between the time the first chunk was returned and "
    "now may show up in the list.")


class Wall:
    """A settable monotonic clock for token expiry."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def wall() -> Wall:
    return Wall()


@pytest.fixture
def timed_store(clock: Clock, wall: Wall) -> ObjectStore:
    s = ObjectStore(now=clock, seed=7, wall=wall)
    for ns in ("default", "team-a", "team-b"):
        s.create("", "namespaces", {"metadata": {"name": ns}, "status": {"phase": "Active"}})
    for i in range(30):
        s.create(KUEUE, "workloads", workload(f"w{i:02d}", "team-a"))
    return s


@pytest.fixture
def timed_custom(timed_store: ObjectStore) -> Iterator[client.CustomObjectsApi]:
    srv = ApiServer(timed_store).start()
    api = make_client(srv.url)
    yield client.CustomObjectsApi(api)
    api.close()
    srv.stop()


def _page(custom: client.CustomObjectsApi, token: str | None, limit: int = 10) -> dict[str, Any]:
    return custom.list_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", limit=limit, _continue=token)


def test_later_chunks_show_the_first_chunks_state(timed_custom: client.CustomObjectsApi,
                                                  timed_store: ObjectStore) -> None:
    first = _page(timed_custom, None)
    rv = first["metadata"]["resourceVersion"]
    before = {w["metadata"]["name"]: w for w in timed_store.list(KUEUE, "workloads", "team-a")[0]}
    # Writes after the first chunk: a delete, a create, an update, each after the chunk's end.
    timed_store.delete(KUEUE, "workloads", "team-a", "w15")
    timed_store.create(KUEUE, "workloads", workload("w15b", "team-a"))
    cur = timed_store.get(KUEUE, "workloads", "team-a", "w20")
    cur["metadata"]["labels"]["changed"] = "yes"
    timed_store.update(KUEUE, "workloads", cur)
    rest: list[dict[str, Any]] = []
    token = first["metadata"]["continue"]
    while token:
        page = _page(timed_custom, token)
        assert page["metadata"]["resourceVersion"] == rv
        rest += page["items"]
        token = page["metadata"].get("continue")
        # What follows this chunk in the snapshot (w15 counted, w15b not).
        assert page["metadata"].get("remainingItemCount", 0) == 30 - len(first["items"]) - len(rest)
    listed = {w["metadata"]["name"]: w for w in first["items"] + rest}
    assert len(first["items"] + rest) == len(listed) == 30
    assert listed.keys() == before.keys()  # w15 still there, w15b not yet
    assert listed["w20"] == before["w20"] and "changed" not in listed["w20"]["metadata"]["labels"]
    assert all(int(w["metadata"]["resourceVersion"]) <= int(rv) for w in listed.values())
    # A new list sees the writes.
    fresh = {w["metadata"]["name"] for w in _page(timed_custom, None, limit=0)["items"]}
    assert "w15b" in fresh and "w15" not in fresh


def test_token_kept_five_minutes_then_expired(timed_custom: client.CustomObjectsApi,
                                              timed_store: ObjectStore, wall: Wall) -> None:
    first = _page(timed_custom, None)
    token = first["metadata"]["continue"]
    timed_store.delete(KUEUE, "workloads", "team-a", "w25")
    wall.t += 299
    second = _page(timed_custom, token)
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    wall.t += 2  # past the 5 minutes kube-apiserver's compaction keeps a revision
    with pytest.raises(ApiException) as exc:
        _page(timed_custom, second["metadata"]["continue"])
    assert exc.value.status == 410
    body = json.loads(exc.value.body)
    assert (body["reason"], body["message"], body["code"]) == ("Expired", INCONSISTENT, 410)
    # The inconsistent token resumes after the same key, from the current state.
    resumed = _page(timed_custom, body["metadata"]["continue"], limit=50)
    names = [w["metadata"]["name"] for w in resumed["items"]]
    assert names == [f"w{i:02d}" for i in range(20, 30) if i != 25]
    assert int(resumed["metadata"]["resourceVersion"]) == timed_store.resource_version


def test_compaction_expires_tokens(timed_custom: client.CustomObjectsApi, timed_store: ObjectStore) -> None:
    token = _page(timed_custom, None)["metadata"]["continue"]
    timed_store.compact()
    with pytest.raises(ApiException) as exc:
        _page(timed_custom, token)
    assert exc.value.status == 410 and json.loads(exc.value.body)["reason"] == "Expired"


def test_paginate_a_busy_simulation_from_one_snapshot(tmp_path: Path) -> None:
    served = start_served(load_scenario("kueue-perf-baseline"), speed=60, kubeconfig=str(tmp_path / "kc"))
    store = served.parts.cluster.store
    try:
        # The scenario creates its 15,000 workloads over the first seconds, then admits them.
        assert wait_until(lambda: store.count(KUEUE, "workloads") >= 5000, timeout=120)
        with make_client(served.url) as api:
            custom = client.CustomObjectsApi(api)
            first = custom.list_cluster_custom_object(KUEUE, V2, "workloads", limit=50)
            rv = int(first["metadata"]["resourceVersion"])
            expected = len(first["items"]) + first["metadata"]["remainingItemCount"]
            items = list(first["items"])
            token = first["metadata"].get("continue")
            pages = 1
            while token:
                page = custom.list_cluster_custom_object(KUEUE, V2, "workloads", limit=50, _continue=token)
                assert int(page["metadata"]["resourceVersion"]) == rv
                items += page["items"]
                token = page["metadata"].get("continue")
                pages += 1
        keys = [(w["metadata"]["namespace"], w["metadata"]["name"]) for w in items]
        assert len(keys) == len(set(keys)) == expected and pages > 100
        assert all(int(w["metadata"]["resourceVersion"]) <= rv for w in items)
        # The simulation wrote to the listed workloads meanwhile, so the snapshot was needed.
        now, _ = store.list(KUEUE, "workloads", copy=False)
        changed = sum(1 for w in now if int(w["metadata"]["resourceVersion"]) > rv)
        assert changed > 0
    finally:
        served.stop()


def test_snapshots_hold_memory_only_while_live(wall: Wall) -> None:
    chain = SnapshotChain(ttl=300, clock=wall, max_saved=5)
    chain.record(("ns", "a"), {"v": 0})
    assert chain.saved == 0  # no token live: writes keep nothing
    chain.take(10)
    chain.record(("ns", "a"), {"v": 1})
    chain.record(("ns", "a"), {"v": 2})  # once per key and snapshot
    chain.take(12)
    chain.take(13)  # nothing written since 12: shares its snapshot
    chain.record(("ns", "b"), None)
    assert chain.saved == 2 and len(chain) == 3
    snap = chain.get(10)
    assert snap is not None and snap.changes() == {("ns", "a"): {"v": 1}, ("ns", "b"): ABSENT}
    for i in range(4):  # past max_saved the oldest snapshot goes first
        chain.record(("ns", f"c{i}"), {"v": i})
    assert chain.get(10) is None and chain.get(13) is not None and chain.saved == 5
    wall.t += 301
    chain.record(("ns", "d"), {"v": 0})  # a write after the TTL releases everything
    assert chain.saved == 0 and len(chain) == 0
