"""The object store on its own: versions, concurrency, status, deletion, watches."""

from __future__ import annotations

import contextlib
import threading

import pytest

from kueuetop.sim.storage.objectstore import (
    AlreadyExists,
    Conflict,
    Expired,
    NotFound,
    ObjectStore,
    WatchEvent,
)

from .conftest import KUEUE, Clock, cluster_queue, workload


def test_create_sets_metadata_and_global_versions(store: ObjectStore, clock: Clock) -> None:
    before = store.resource_version
    cq = store.create(KUEUE, "clusterqueues", cluster_queue("cq-a"))
    wl = store.create(KUEUE, "workloads", workload("w1", "team-a"))
    assert int(cq["metadata"]["resourceVersion"]) == before + 1
    assert int(wl["metadata"]["resourceVersion"]) == before + 2
    assert cq["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert cq["metadata"]["generation"] == 1
    assert len(cq["metadata"]["uid"]) == 36
    assert "namespace" not in cq["metadata"]
    with pytest.raises(AlreadyExists):
        store.create(KUEUE, "clusterqueues", cluster_queue("cq-a"))


def test_update_conflict_generation_and_status_rules(store: ObjectStore) -> None:
    cq = store.create(KUEUE, "clusterqueues", cluster_queue("cq-a"))
    stale = dict(cq)
    cq["spec"]["stopPolicy"] = "Hold"
    cq["status"] = {"pendingWorkloads": 5}  # ignored by the main resource
    updated = store.update(KUEUE, "clusterqueues", cq)
    assert updated["metadata"]["generation"] == 2
    assert "status" not in updated
    with pytest.raises(Conflict):
        store.update(KUEUE, "clusterqueues", stale)
    updated["status"] = {"pendingWorkloads": 5}
    updated["spec"]["stopPolicy"] = "None"  # ignored by the status subresource
    with_status = store.update_status(KUEUE, "clusterqueues", updated)
    assert with_status["status"] == {"pendingWorkloads": 5}
    assert with_status["spec"]["stopPolicy"] == "Hold"
    assert with_status["metadata"]["generation"] == 2
    # A no-op write keeps the version.
    again = store.update_status(KUEUE, "clusterqueues", with_status)
    assert again["metadata"]["resourceVersion"] == with_status["metadata"]["resourceVersion"]


def test_finalizers_delay_deletion(store: ObjectStore) -> None:
    wl = workload("w1", "team-a")
    wl["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    store.create(KUEUE, "workloads", wl)
    marked = store.delete(KUEUE, "workloads", "team-a", "w1")
    assert marked["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"
    assert store.get(KUEUE, "workloads", "team-a", "w1")["metadata"]["finalizers"]
    cur = store.get(KUEUE, "workloads", "team-a", "w1")
    cur["metadata"]["finalizers"] = []
    store.update(KUEUE, "workloads", cur)
    with pytest.raises(NotFound):
        store.get(KUEUE, "workloads", "team-a", "w1")


def test_job_deletion_cascades_to_workload_and_pods(store: ObjectStore) -> None:
    job = store.create("batch", "jobs", {"metadata": {"name": "j", "namespace": "team-a"}, "spec": {}})
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": job["metadata"]["uid"],
           "controller": True}
    wl = workload("job-j-abcde", "team-a")
    wl["metadata"]["ownerReferences"] = [ref]
    store.create(KUEUE, "workloads", wl)
    for i in range(3):
        store.create("", "pods", {"metadata": {"name": f"j-{i}", "namespace": "team-a", "ownerReferences": [ref]},
                                  "spec": {"nodeName": "n1"}})
    store.create("", "pods", {"metadata": {"name": "other", "namespace": "team-a"}, "spec": {}})
    store.delete("batch", "jobs", "team-a", "j")
    assert store.try_get(KUEUE, "workloads", "team-a", "job-j-abcde") is None
    pods, _ = store.list("", "pods", "team-a")
    assert [p["metadata"]["name"] for p in pods] == ["other"]
    assert store.by_index("", "pods", "spec.nodeName", "n1") == []


def test_orphan_keeps_dependents(store: ObjectStore) -> None:
    job = store.create("batch", "jobs", {"metadata": {"name": "j", "namespace": "team-a"}, "spec": {}})
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": job["metadata"]["uid"]}
    store.create("", "pods", {"metadata": {"name": "p", "namespace": "team-a", "ownerReferences": [ref]}})
    store.delete("batch", "jobs", "team-a", "j", propagation="Orphan")
    pod = store.get("", "pods", "team-a", "p")
    assert "ownerReferences" not in pod["metadata"]


def test_namespace_deletion_removes_contents(store: ObjectStore) -> None:
    store.create(KUEUE, "workloads", workload("w1", "team-b"))
    store.create(KUEUE, "workloads", workload("w2", "team-a"))
    store.delete("", "namespaces", None, "team-b")
    names = [w["metadata"]["name"] for w in store.list(KUEUE, "workloads")[0]]
    assert names == ["w2"]


def test_watch_replays_history_and_compaction_expires(store: ObjectStore) -> None:
    store.create(KUEUE, "workloads", workload("w1", "team-a"))
    rv = store.resource_version
    store.create(KUEUE, "workloads", workload("w2", "team-a"))
    store.create(KUEUE, "workloads", workload("w3", "team-b"))
    w, events = store.watch(KUEUE, "workloads", "team-a", rv)
    assert [(e.type, e.obj["metadata"]["name"]) for e in events] == [("ADDED", "w2")]
    store.delete(KUEUE, "workloads", "team-a", "w1")
    ev = w.get(timeout=1)
    assert ev is not None and ev.type == "DELETED" and ev.obj["metadata"]["name"] == "w1"
    w.stop()
    assert w.get(timeout=1) is None
    store.compact()
    with pytest.raises(Expired):
        store.watch(KUEUE, "workloads", None, rv)
    # Starting from "now" still works after a compaction.
    w2, initial = store.watch(KUEUE, "workloads", None, None)
    assert sorted(e.obj["metadata"]["name"] for e in initial) == ["w2", "w3"]
    w2.stop()


def test_bounded_history_raises_floor(clock: Clock) -> None:
    s = ObjectStore(now=clock, history_size=3)
    s.create("", "namespaces", {"metadata": {"name": "a"}})
    first = s.resource_version
    for i in range(5):
        s.create("", "nodes", {"metadata": {"name": f"n{i}"}})
    with pytest.raises(Expired):
        s.watch("", "nodes", None, first)
    _, events = s.watch("", "nodes", None, s.resource_version - 2)
    assert [e.obj["metadata"]["name"] for e in events] == ["n3", "n4"]


def test_subscribers_see_ordered_events_and_may_write(store: ObjectStore) -> None:
    seen: list[tuple[str, str, int]] = []

    def controller(ev: WatchEvent) -> None:
        seen.append((ev.type, ev.obj["metadata"]["name"], ev.rv))
        # A controller reacting to a new workload by writing its status.
        if ev.kind.plural == "workloads" and ev.type == "ADDED":
            cur = store.get(KUEUE, "workloads", "team-a", ev.obj["metadata"]["name"])
            cur["status"] = {"conditions": [{"type": "QuotaReserved", "status": "False"}]}
            store.update_status(KUEUE, "workloads", cur)

    unsubscribe = store.subscribe(controller)
    store.create(KUEUE, "workloads", workload("w1", "team-a"))
    unsubscribe()
    store.create(KUEUE, "workloads", workload("w2", "team-a"))
    assert [(t, n) for t, n, _ in seen] == [("ADDED", "w1"), ("MODIFIED", "w1")]
    assert seen[0][2] < seen[1][2]


def test_concurrent_updates_conflict_exactly_once(store: ObjectStore) -> None:
    store.create(KUEUE, "clusterqueues", cluster_queue("cq"))
    base = store.get(KUEUE, "clusterqueues", None, "cq")
    results: list[str] = []

    def writer(policy: str) -> None:
        obj = dict(base, spec=dict(base["spec"], stopPolicy=policy))
        try:
            store.update(KUEUE, "clusterqueues", obj)
            results.append("ok")
        except Conflict:
            results.append("conflict")

    threads = [threading.Thread(target=writer, args=(p,)) for p in ("Hold", "HoldAndDrain")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["conflict", "ok"]


def test_indexes_follow_updates(store: ObjectStore) -> None:
    wl = store.create(KUEUE, "workloads", workload("w1", "team-a"))
    assert store.by_index(KUEUE, "workloads", "status.admission.clusterQueue", "cq-a") == []
    wl["status"] = {"admission": {"clusterQueue": "cq-a", "podSetAssignments": []}}
    store.update_status(KUEUE, "workloads", wl)
    found = store.by_index(KUEUE, "workloads", "status.admission.clusterQueue", "cq-a")
    assert [w["metadata"]["name"] for w in found] == ["w1"]
    assert store.by_index(KUEUE, "workloads", "status.admission.clusterQueue", "") == []


def test_scale_lookups_stay_fast(clock: Clock) -> None:
    s = ObjectStore(now=clock, history_size=1000)
    for i in range(200):
        s.create("", "nodes", {"metadata": {"name": f"node-{i:04d}"}})
    for i in range(20000):
        s.create("", "pods", {"metadata": {"name": f"p-{i:05d}", "namespace": f"ns-{i % 50}"},
                              "spec": {"nodeName": f"node-{i % 200:04d}"}})
    assert len(s.by_index("", "pods", "spec.nodeName", "node-0007", copy=False)) == 100
    page, nxt, _ = s.list_page("", "pods", "ns-3", limit=10)
    assert len(page) == 10 and nxt is not None
    assert s.count("", "pods", "ns-3") == 400


def test_create_many_stores_as_create_does_in_one_batch(clock: Clock) -> None:
    one, bulk = ObjectStore(now=clock, seed=3), ObjectStore(now=clock, seed=3)
    objs = [cluster_queue("cq-a"), workload("w1", "team-a"), cluster_queue("cq-a"), workload("w2", "team-b")]
    seen_one: list[tuple[str, str]] = []
    seen_bulk: list[tuple[str, str]] = []
    one.subscribe(lambda ev: seen_one.append((ev.type, ev.obj["metadata"]["name"])))
    bulk.subscribe(lambda ev: seen_bulk.append((ev.type, ev.obj["metadata"]["name"])))
    for obj in objs:
        plural = "clusterqueues" if obj["kind"] == "ClusterQueue" else "workloads"
        with contextlib.suppress(AlreadyExists):
            one.create(KUEUE, plural, obj)
    owned = [dict(o, metadata=dict(o["metadata"])) for o in objs]
    results = bulk.create_many((KUEUE, "clusterqueues" if o["kind"] == "ClusterQueue" else "workloads", o)
                               for o in owned)
    # The duplicate is refused; the items after it are still created.
    assert [type(r).__name__ if r else None for r in results] == [None, None, "AlreadyExists", None]
    assert seen_bulk == seen_one == [("ADDED", "cq-a"), ("ADDED", "w1"), ("ADDED", "w2")]
    assert bulk.resource_version == one.resource_version
    for plural in ("clusterqueues", "workloads"):
        assert bulk.list(KUEUE, plural)[0] == one.list(KUEUE, plural)[0]
    # The store keeps the given dicts: nothing was copied.
    assert bulk.get(KUEUE, "workloads", "team-a", "w1", copy=False) is owned[1]
    watcher, initial = bulk.watch(KUEUE, "workloads", resource_version=0)
    assert [ev.obj["metadata"]["name"] for ev in initial] == ["w1", "w2"]
    watcher.stop()


def test_create_many_refuses_nameless_and_unknown_kinds(store: ObjectStore) -> None:
    results = store.create_many([(KUEUE, "clusterqueues", {"metadata": {}}),
                                 ("nowhere", "things", {"metadata": {"name": "x"}}),
                                 (KUEUE, "clusterqueues", {"metadata": "bad"}),
                                 (KUEUE, "clusterqueues", cluster_queue("fine"))])
    assert [type(r).__name__ if r else None for r in results] == ["Invalid", "NotFound", "Invalid", None]
    assert [c["metadata"]["name"] for c in store.list(KUEUE, "clusterqueues")[0]] == ["fine"]


def test_status_rewrites_share_what_they_keep_and_skip_no_ops(store: ObjectStore) -> None:
    from kueuetop.sim.kube.events import write_condition

    wl = store.create(KUEUE, "workloads", workload("w1", "team-a"))
    admission = {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "flavors": {"cpu": "f"}}]}
    v1 = store.replace_status(KUEUE, "workloads", "team-a", "w1", {"admission": admission})
    assert v1["status"]["admission"] is admission  # handed over, not copied
    assert v1["spec"] is store.get(KUEUE, "workloads", "team-a", "w1", copy=False)["spec"]
    assert int(v1["metadata"]["resourceVersion"]) > int(wl["metadata"]["resourceVersion"])

    v2 = write_condition(store, KUEUE, "workloads", "team-a", "w1", "PodsReady", "True", "Started", "ok", 5.0, 1)
    assert v2 is not None
    assert v2["status"]["admission"] is admission  # copy-on-write: untouched parts are shared
    assert [c["type"] for c in v2["status"]["conditions"]] == ["PodsReady"]
    assert v1["status"].get("conditions") is None  # the previous version is not edited
    # The same condition again is a no-op: no new resourceVersion, no event.
    seen: list[WatchEvent] = []
    store.subscribe(seen.append)
    v3 = write_condition(store, KUEUE, "workloads", "team-a", "w1", "PodsReady", "True", "Started", "ok", 9.0, 1)
    assert v3 is not None and v3["metadata"]["resourceVersion"] == v2["metadata"]["resourceVersion"]
    assert seen == []
    v4 = write_condition(store, KUEUE, "workloads", "team-a", "w1", "PodsReady", "False", "WaitForStart", "no",
                         9.0, 1)
    assert v4 is not None and v4["status"]["conditions"][0]["status"] == "False"
    assert v2["status"]["conditions"][0]["status"] == "True"
    assert [e.type for e in seen] == ["MODIFIED"]
    assert write_condition(store, KUEUE, "workloads", "team-a", "gone", "PodsReady", "True", "", "", 1.0) is None


def test_rewrite_shares_what_it_keeps_and_keeps_update_rules(store: ObjectStore) -> None:
    wl = store.create(KUEUE, "workloads", workload("w1", "team-a"))
    stored = store.get(KUEUE, "workloads", "team-a", "w1", copy=False)
    v2 = store.rewrite(KUEUE, "workloads", "team-a", "w1",
                       lambda cur: {**cur, "spec": {**cur["spec"], "active": False},
                                    "metadata": {**cur["metadata"], "uid": cur["metadata"]["uid"],
                                                 "labels": {"x": "y"}}})
    assert v2["spec"]["active"] is False
    assert v2["spec"]["podSets"] is stored["spec"]["podSets"]  # kept parts are shared
    assert stored["spec"].get("active") is not False  # the previous version is not edited
    assert v2["metadata"]["generation"] == wl["metadata"]["generation"] + 1  # a spec change
    assert v2["metadata"]["labels"] == {"x": "y"}
    same = store.rewrite(KUEUE, "workloads", "team-a", "w1", lambda cur: cur)
    assert same["metadata"]["resourceVersion"] == v2["metadata"]["resourceVersion"]  # no-op
    with pytest.raises(NotFound):
        store.rewrite(KUEUE, "workloads", "team-a", "gone", lambda cur: cur)
