"""The store on its own: coalesced notifications, relist semantics, links, GPUs, history."""

from __future__ import annotations

from typing import Any

from kueuetop.kueue.gpu import GpuSample
from kueuetop.kueue.parse import parse_object
from kueuetop.store import Changes, Entry, SourceState, Store, StoreEvent


def wl(name: str, ns: str = "team-a", owner_uid: str = "job-uid-1", rv: str = "1", lq: str = "lq") -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": rv,
                         "labels": {"kueue.x-k8s.io/job-uid": owner_uid},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j",
                                              "uid": owner_uid, "controller": True}]},
            "spec": {"queueName": lq, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}}]}}


def pod(name: str, owner_kind: str, owner_uid: str, node: str = "n1", ns: str = "team-a",
        owner: str = "w") -> dict[str, Any]:
    api = "kueue.x-k8s.io/v1beta2" if owner_kind == "Workload" else "batch/v1"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": "1",
                         "ownerReferences": [{"apiVersion": api, "kind": owner_kind, "name": owner,
                                              "uid": owner_uid, "controller": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]}}


def entry(raw: dict[str, Any]) -> Entry:
    m = raw["metadata"]
    return Entry((m.get("namespace", ""), m["name"]), raw, parse_object(raw), m["uid"], m["resourceVersion"])


def test_one_notification_per_batch() -> None:
    store = Store()
    got: list[Changes] = []
    store.subscribe(got.append)
    store.apply_batch([StoreEvent.upsert("workloads", "workloads", entry(wl(f"w{i}"))) for i in range(50)])
    assert len(got) == 1 and len(got[0].get("workloads")) == 50
    # Re-applying the same resourceVersions changes nothing and notifies nobody.
    store.apply_batch([StoreEvent.upsert("workloads", "workloads", entry(wl(f"w{i}"))) for i in range(50)])
    assert len(got) == 1


def test_replace_drops_only_its_own_sources_keys() -> None:
    store = Store()
    store.apply_batch([StoreEvent.replace("pods", "pods/kueue", [entry(pod("a", "Job", "j1"))]),
                       StoreEvent.replace("pods", "pods/managed", [entry(pod("b", "Job", "j2"))])])
    changes = store.apply(StoreEvent.replace("pods", "pods/kueue", []))
    assert store.keys("pods") == [("team-a", "b")] and changes.get("pods") == {("team-a", "a")}
    assert store.pods_on_node("n1") == {("team-a", "b")}


def test_pod_workload_links_follow_kueue() -> None:
    store = Store()
    direct = wl("direct", owner_uid="none")
    store.apply_batch([
        StoreEvent.upsert("workloads", "workloads", entry(wl("w-job", owner_uid="job-1"))),
        StoreEvent.upsert("workloads", "workloads", entry(direct)),
        StoreEvent.upsert("pods", "pods/kueue", entry(pod("p-job", "Job", "job-1", node="n1"))),
        StoreEvent.upsert("pods", "pods/kueue", entry(pod("p-direct", "Workload", "uid-direct", node="n2", owner="direct"))),
        StoreEvent.upsert("pods", "pods/kueue", entry(pod("p-other", "Job", "job-9"))),
    ])
    assert store.workload_of_pod(("team-a", "p-job")) == ("team-a", "w-job")
    assert store.workload_of_pod(("team-a", "p-direct")) == ("team-a", "direct")
    assert store.workload_of_pod(("team-a", "p-other")) is None
    assert store.pods_of_workload(("team-a", "w-job")) == {("team-a", "p-job")}
    assert store.pods_of_workload(("team-a", "direct")) == {("team-a", "p-direct")}
    store.put_gpu_samples([GpuSample("n1", "0", util=90.0, namespace="team-a", pod="p-job"),
                           GpuSample("n1", "1", util=0.0)], at=100.0, source="prom")
    assert [g.util for g in store.gpus_of_workload(("team-a", "w-job"))] == [90.0]
    assert [g.gpu for g in store.gpus_on_node("n1")] == ["0", "1"]
    # A later fleet sample without GPU 1 drops it; history keeps the points.
    store.put_gpu_samples([GpuSample("n1", "0", util=50.0, namespace="team-a", pod="p-job")], at=105.0,
                          source="prom")
    assert [g.gpu for g in store.gpus_on_node("n1")] == ["0"]
    assert [v for _, v in store.gpu_history.get(("n1", "0"))] == [90.0, 50.0]


def test_workload_queue_indexes_and_history() -> None:
    t = [1000.0]
    store = Store(history_size=3, history_interval=0.0, clock=lambda: t[0])
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": "lq", "namespace": "team-a", "uid": "lq", "resourceVersion": "1"},
          "spec": {"clusterQueue": "cq"}}
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
          "metadata": {"name": "cq", "uid": "cq", "resourceVersion": "1"}, "spec": {"namespaceSelector": {}}}
    store.apply_batch([StoreEvent.upsert("workloads", "workloads", entry(wl("w1"))),
                       StoreEvent.upsert("clusterqueues", "clusterqueues", entry(cq))])
    assert store.workloads_in_cluster_queue("cq") == set()  # its LQ is not known yet
    store.apply(StoreEvent.upsert("localqueues", "localqueues", entry(lq)))
    assert store.workloads_in_cluster_queue("cq") == {("team-a", "w1")}
    assert store.queue_counts("cq").pending == 1
    for i in range(5):
        t[0] += 10
        store.apply(StoreEvent.upsert("workloads", "workloads", entry(wl("w1", rv=str(i + 2)))))
    assert len(store.queue_history.get("cq")) == 3  # bounded
    snap = store.snapshot()
    assert snap.cluster_queue_of(snap.workloads[("team-a", "w1")]) == "cq"


def test_malformed_entries_are_kept_unparsed_and_stale_flags() -> None:
    t = [0.0]
    store = Store(clock=lambda: t[0])
    bad = Entry(("team-a", "bad"), {"metadata": {"name": "bad"}}, None, "u", "1", error="spec.podSets: missing")
    store.set_source_state("workloads", SourceState.LIVE, ok=True)
    store.apply(StoreEvent.upsert("workloads", "workloads", bad))
    assert store.unparsed("workloads") == {("team-a", "bad"): "spec.podSets: missing"}
    assert store.snapshot().workloads == {}
    assert not store.stale("workloads")
    store.set_source_state("workloads", SourceState.RELISTING)
    assert store.stale("workloads")
    store.put_gpu_samples([], at=0.0, source="prom")
    store.set_source_state("prom", SourceState.LIVE, stale_after=30)
    t[0] = 31.0
    assert store.stale("prom") and store.source("prom").age(t[0]) == 31.0


def node(name: str, rv: str = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": rv}, "spec": {}, "status": {}}


def test_a_deleted_nodes_gpus_go_with_it_and_do_not_come_back() -> None:
    store = Store()
    store.apply(StoreEvent.replace("nodes", "nodes", [entry(node("n1")), entry(node("n2"))]))
    fleet = [GpuSample(n, g, util=50.0, at=1.0) for n in ("n1", "n2") for g in ("0", "1")]
    store.put_gpu_samples(fleet, at=1.0, source="prometheus")
    changes = store.apply(StoreEvent.delete("nodes", "nodes", ("", "n1")))
    assert changes.get("gpus") == {("n1", "0"), ("n1", "1")}
    assert set(store.gpus()) == {("n2", "0"), ("n2", "1")}
    # Prometheus still answers the gone node's last samples within its lookback window.
    store.put_gpu_samples(fleet, at=2.0, source="prometheus")
    assert store.gpus_on_node("n1") == [] and len(store.gpus_on_node("n2")) == 2
    # A node of the same name that comes back (spot node re-created) shows its GPUs again.
    store.apply(StoreEvent.upsert("nodes", "nodes", entry(node("n1", rv="5"))))
    store.put_gpu_samples(fleet, at=3.0, source="prometheus")
    assert len(store.gpus_on_node("n1")) == 2


def test_gpu_fleet_history_by_model_and_utilization_bucket() -> None:
    store = Store()
    store.put_gpu_samples([GpuSample("n1", "0", model="L4", util=5.0), GpuSample("n1", "1", model="L4", util=95.0),
                           GpuSample("n2", "0", model="A100", util=100.0)], at=100.0, source="prom")
    store.put_gpu_samples([GpuSample("n1", "0", model="L4", util=50.0, stale=True),
                           GpuSample("n1", "1", model="L4", util=55.0)], at=105.0, source="prom")
    assert store.gpu_model_history.get("L4") == [(100.0, 2), (105.0, 2)]
    assert store.gpu_model_history.get("A100") == [(100.0, 1), (105.0, 1)]
    (t0, f0), (t1, f1) = store.gpu_util_history.points()
    assert (t0, f0.counts, f0.na) == (100.0, (1, 0, 0, 0, 0, 0, 0, 0, 0, 2), 0)
    # A stale GPU counts as n/a, never as its last value.
    assert (t1, f1.counts, f1.na) == (105.0, (0, 0, 0, 0, 0, 1, 0, 0, 0, 1), 1)
    # A node whose GPUs are gone: its model drops to 0 rather than ending mid-air.
    store.put_gpu_samples([GpuSample("n2", "9", model="H100", util=1.0)], at=110.0, source="prom")
    assert store.gpu_model_history.get("A100")[-1] == (110.0, 0)


def test_subscribers_are_called_by_stage_then_in_order() -> None:
    """A view records its changed keys (stage -1) before the console is told to redraw (0), and
    bookkeeping (1) comes last, whatever order they subscribed in."""

    store = Store()
    calls: list[str] = []
    store.subscribe(lambda _: calls.append("poller"), stage=1)
    store.subscribe(lambda _: calls.append("bridge"))
    off = store.subscribe(lambda _: calls.append("view"), stage=-1)
    store.subscribe(lambda _: calls.append("bridge2"))
    store.subscribe(lambda _: calls.append("view2"), stage=-1)
    store.set_source_state("x", SourceState.LIVE)
    assert calls == ["view", "view2", "bridge", "bridge2", "poller"]
    off()
    calls.clear()
    store.set_source_state("x", SourceState.ERROR)
    assert calls == ["view2", "bridge", "bridge2", "poller"]


def test_multi_index_set_one_files_as_set_does() -> None:
    from kueuetop.store.indexes import MultiIndex

    one, many = MultiIndex(), MultiIndex()
    key = ("ns", "w")
    for value in ("a", "a", "b", "", None, "c", ("ns", "lq"), ("ns", "lq"), None):
        one.set_one(key, value)
        many.set(key, (value,))
        assert one.values_of(key) == many.values_of(key) and one.counts() == many.counts(), value
    many.set(key, ("x", "y"))
    one.set(key, ("x", "y"))
    one.set_one(key, "x")  # from two values to one of them
    many.set(key, ("x",))
    assert one.values_of(key) == ("x",) and one.get("y") == frozenset() and one.counts() == many.counts()


def test_queue_counts_are_kept_as_workloads_and_queues_change() -> None:
    import random

    rng = random.Random(4)
    s = Store()

    def lq(name: str, cq: str) -> Entry:
        raw = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": name, "namespace": "team-a", "uid": f"uid-{name}-{cq}", "resourceVersion": cq},
               "spec": {"clusterQueue": cq}}
        return Entry(("team-a", name), raw, parse_object(raw), raw["metadata"]["uid"], cq)

    def workload(i: int, rv: int) -> Entry:
        raw = wl(f"w{i}", lq=rng.choice(["lq1", "lq2", "nolq"]), rv=str(rv))
        admitted = rng.random() < 0.4
        if admitted:
            raw["status"] = {"admission": {"clusterQueue": rng.choice(["cq1", "cq3"]), "podSetAssignments": []},
                             "conditions": [{"type": t, "status": "True", "reason": t,
                                             "lastTransitionTime": "2026-01-01T00:00:00Z"}
                                            for t in ("QuotaReserved", "Admitted")[: rng.choice([1, 2])]]}
        if rng.random() < 0.1:
            raw["spec"]["active"] = False
        return Entry(("team-a", f"w{i}"), raw, parse_object(raw), f"uid-w{i}", str(rv))

    s.apply(StoreEvent.upsert("localqueues", "lq", lq("lq1", "cq1")))
    for rv in range(2, 40):
        events = [StoreEvent.upsert("workloads", "wl", workload(rng.randrange(30), rv)) for _ in range(10)]
        events += [StoreEvent.delete("workloads", "wl", ("team-a", f"w{rng.randrange(30)}"))]
        if rv % 7 == 0:  # a LocalQueue moves to another ClusterQueue, or goes
            events.append(StoreEvent.upsert("localqueues", "lq", lq(rng.choice(["lq1", "lq2"]),
                                                                   rng.choice(["cq1", "cq2"]))))
        if rv % 11 == 0:
            events.append(StoreEvent.delete("localqueues", "lq", ("team-a", "lq2")))
        s.apply_batch(events)
        for cq in ("cq1", "cq2", "cq3", ""):
            assert s._ix.queue_counts(cq) == s._ix.count_queue(cq), (rv, cq)
    assert sum(sum(s._ix.queue_counts(cq)) for cq in ("cq1", "cq2", "cq3")) > 0


def test_snapshots_share_the_mappings_of_unchanged_kinds() -> None:
    """A workload write gives a snapshot with new workloads but the very ClusterQueues, Cohorts and
    LocalQueues of the last one (the engine's memos of those live on); earlier snapshots never see
    later writes."""
    store = Store()
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
          "metadata": {"name": "cq", "uid": "cq", "resourceVersion": "1"}, "spec": {"namespaceSelector": {}}}
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": "lq", "namespace": "team-a", "uid": "lq", "resourceVersion": "1"},
          "spec": {"clusterQueue": "cq"}}
    store.apply_batch([StoreEvent.upsert("workloads", "workloads", entry(wl("w1"))),
                       StoreEvent.upsert("clusterqueues", "clusterqueues", entry(cq)),
                       StoreEvent.upsert("localqueues", "localqueues", entry(lq))])
    first = store.snapshot()
    store.apply(StoreEvent.upsert("workloads", "workloads", entry(wl("w1", rv="2"))))
    second = store.snapshot()
    assert second.workloads is not first.workloads
    assert first.workloads[("team-a", "w1")].meta.resource_version == "1"
    assert second.workloads[("team-a", "w1")].meta.resource_version == "2"
    assert second.cluster_queues is first.cluster_queues and second.local_queues is first.local_queues
    assert second.cohorts is first.cohorts and second.flavors is first.flavors
    # The same version again changes nothing; a ClusterQueue write gives new ClusterQueues only.
    store.apply(StoreEvent.upsert("workloads", "workloads", entry(wl("w1", rv="2"))))
    assert store.snapshot() is second
    store.apply(StoreEvent.upsert("clusterqueues", "clusterqueues", entry({**cq, "metadata": {**cq["metadata"], "resourceVersion": "2"}})))
    third = store.snapshot()
    assert third.cluster_queues is not second.cluster_queues and third.workloads is second.workloads
    assert second.cluster_queues["cq"].meta.resource_version == "1"
    # Deletes and relists count as writes too.
    store.apply(StoreEvent.delete("workloads", "workloads", ("team-a", "w1")))
    fourth = store.snapshot()
    assert fourth.workloads == {} and ("team-a", "w1") in third.workloads
    assert fourth.cluster_queues is third.cluster_queues
    store.apply(StoreEvent.replace("localqueues", "localqueues", []))
    assert store.snapshot().local_queues == {} and fourth.local_queues


def _view(store: Store) -> dict[str, Any]:
    """What the store answers about its objects, indexes, GPUs and sources."""
    return {"workloads": store.objects("workloads"), "pods": store.objects("pods"),
            "in_cq": store.workloads_in_cluster_queue("cq"), "counts": store.queue_counts("cq"),
            "states": {k: store.workload_state(k) for k in store.keys("workloads")},
            "pods_of": {k: store.pods_of_workload(k) for k in store.keys("workloads")},
            "on_n1": store.pods_on_node("n1"), "gpus": store.gpus(), "sources": store.sources(),
            "synced": store.has_synced("pods/kueue"), "owners": store.owners("pods")}


def test_a_frozen_state_thaws_into_a_fresh_store_as_it_was_however_the_first_one_moves_on() -> None:
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": "lq", "namespace": "team-a", "uid": "lq", "resourceVersion": "1"},
          "spec": {"clusterQueue": "cq"}}
    store = Store(clock=lambda: 1000.0)
    store.apply_batch([StoreEvent.upsert("localqueues", "localqueues", entry(lq)),
                       *(StoreEvent.upsert("workloads", "workloads", entry(wl(f"w{i}", owner_uid=f"j{i}")))
                         for i in range(3)),
                       StoreEvent.replace("pods", "pods/kueue", [entry(pod("p0", "Job", "j0")),
                                                                 entry(pod("p1", "Job", "j1", node="n2"))])])
    store.put_gpu_samples([GpuSample("n1", "0", util=90.0, namespace="team-a", pod="p0")], at=100.0, source="prom")
    before = _view(store)
    assert before["in_cq"] and before["counts"].pending == 3 and before["pods_of"][("team-a", "w0")]
    frozen = store.freeze()
    # The first store moves on: deletes, moves and new objects must not reach the frozen state.
    store.apply_batch([StoreEvent.delete("workloads", "workloads", ("team-a", "w0")),
                       StoreEvent.upsert("workloads", "workloads", entry(wl("w1", owner_uid="j1", rv="2", lq="other"))),
                       StoreEvent.replace("pods", "pods/kueue", [entry(pod("p9", "Job", "j9"))])])
    store.put_gpu_samples([GpuSample("n1", "0", util=10.0)], at=105.0, source="prom")
    assert _view(store) != before
    kept = frozen.compacted()  # as a replay keeps it: indexes filed again when thawed
    for state in (frozen, frozen, kept, kept):  # thawed twice: writing to a thawed store changes no state
        fresh = Store(clock=lambda: 1000.0)
        fresh.thaw(state)
        assert _view(fresh) == before
        fresh.apply(StoreEvent.delete("workloads", "workloads", ("team-a", "w1")))
        fresh.apply(StoreEvent.replace("pods", "pods/kueue", []))
        assert fresh.queue_counts("cq").pending == 2 and fresh.pods_on_node("n1") == set()


def test_adopting_a_state_tells_subscribers_exactly_what_differs() -> None:
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
          "metadata": {"name": "lq", "namespace": "team-a", "uid": "lq", "resourceVersion": "1"},
          "spec": {"clusterQueue": "cq"}}
    lq2 = {**lq, "metadata": {**lq["metadata"], "resourceVersion": "2"}, "spec": {"clusterQueue": "cq2"}}
    source = Store(clock=lambda: 1000.0)
    source.apply_batch([StoreEvent.upsert("localqueues", "localqueues", entry(lq)),
                        *(StoreEvent.upsert("workloads", "workloads", entry(wl(f"w{i}", owner_uid=f"j{i}")))
                          for i in range(3)),
                        StoreEvent.replace("pods", "pods/kueue", [entry(pod("p0", "Job", "j0"))])])
    console = Store(clock=lambda: 1000.0)
    got: list[Changes] = []
    console.subscribe(got.append)
    console.adopt(source.freeze())
    assert _view(console) == _view(source) and got[-1].get("workloads") == set(source.keys("workloads"))
    # The source moves on (one workload changed, one deleted, its LQ pointed elsewhere, a GPU):
    # the console hears of those only, and answers as the source does.
    source.apply_batch([StoreEvent.upsert("workloads", "workloads", entry(wl("w1", owner_uid="j1", rv="2"))),
                        StoreEvent.delete("workloads", "workloads", ("team-a", "w2"))])
    source.put_gpu_samples([GpuSample("n1", "0", util=90.0, namespace="team-a", pod="p0")], at=100.0, source="prom")
    console.adopt(source.freeze())
    assert _view(console) == _view(source)
    assert got[-1].get("workloads") == {("team-a", "w1"), ("team-a", "w2")} and "pods" not in got[-1]
    assert got[-1].get("gpus") == {("n1", "0")}
    source.apply(StoreEvent.upsert("localqueues", "localqueues", entry(lq2)))
    console.adopt(source.freeze())
    assert console.workloads_in_cluster_queue("cq2") == {("team-a", "w0"), ("team-a", "w1")}
    assert got[-1].get("workloads") == {("team-a", "w0"), ("team-a", "w1")}
    assert console.gpus_of_workload(("team-a", "w0"))[0].util == 90.0


def test_a_source_still_listing_is_recorded_so_the_status_bar_does_not_read_live() -> None:
    from kueuetop.tui.statusbar import summarize_sources

    store = Store(clock=lambda: 5.0)
    for source in ("clusterqueues", "workloads"):
        store.set_source_state(source, SourceState.CONNECTING)  # each informer as it starts
    store.set_source_state("clusterqueues", SourceState.LIVE, ok=True)  # a small list is in first
    assert store.source("workloads") is not None and store.source("workloads").state is SourceState.CONNECTING
    label, text, bad = summarize_sources(store.sources(), 5.0)[0]
    assert (label, text.split()[0], bad) == ("kube", "connecting", True)
    store.set_source_state("workloads", SourceState.LIVE, ok=True)
    label, text, bad = summarize_sources(store.sources(), 5.0)[0]
    assert (label, text.split()[0], bad) == ("kube", "live", False)
