"""Initial sync, watch updates, queue positions, pod ↔ workload links over the real client."""

from __future__ import annotations

import pytest
from kubernetes import client

from kueuetop.kueue.workload import Workload
from kueuetop.sim.serve import ServedCluster
from kueuetop.sources.connection import Connection
from kueuetop.store import SourceState

from .conftest import KUEUE, Live, assert_converges, wait_until


def test_initial_sync_equals_server(served: ServedCluster, live: Live) -> None:
    assert_converges(served, live.store, timeout=10)

    def states() -> dict:
        return {n: s.state for n, s in live.store.sources().items()}

    # Every source live. A watch the server ends (a loaded CI machine) relists for a moment, and
    # then says so in its state: waited for, not taken at one instant.
    assert wait_until(lambda: all(s is SourceState.LIVE for s in states().values()), 10), \
        {n: s for n, s in states().items() if s is not SourceState.LIVE}
    assert live.store.count("workloads") > 0 and live.store.count("pods") > 0
    snap = live.store.snapshot()
    assert set(snap.workloads) == set(live.store.keys("workloads"))
    assert snap is live.store.snapshot()  # cached until something changes


def test_patch_reaches_store_through_watch(served: ServedCluster, conn: Connection, live: Live) -> None:
    key = sorted(live.store.keys("workloads"))[0]
    changes: list[frozenset] = []
    live.store.subscribe(lambda ch: changes.append(ch.get("workloads")))
    custom = client.CustomObjectsApi(conn.api)
    custom.patch_namespaced_custom_object(KUEUE, "v1beta2", key[0], "workloads", key[1], {"spec": {"active": False}})
    assert wait_until(lambda: live.store.get("workloads", key) is not None
                      and live.store.get("workloads", key).active is False, 10)
    assert any(key in c for c in changes)
    custom.patch_namespaced_custom_object(KUEUE, "v1beta2", key[0], "workloads", key[1], {"spec": {"active": True}})
    assert wait_until(lambda: live.store.get("workloads", key).active is True, 10)
    assert_converges(served, live.store)


def test_pods_link_to_workloads_and_nodes(live: Live) -> None:
    linked = 0
    for pkey in live.store.keys("pods"):
        wkey = live.store.workload_of_pod(pkey)
        if wkey is not None:
            linked += 1
            assert pkey in live.store.pods_of_workload(wkey)
            pod = live.store.get("pods", pkey)
            if pod.node_name:
                assert pkey in live.store.pods_on_node(pod.node_name)
    assert linked > 0


def test_queue_positions_from_visibility_api(served: ServedCluster, conn: Connection, live: Live) -> None:
    lq = next(o for o in live.store.objects("localqueues").values())
    custom = client.CustomObjectsApi(conn.api)
    wl = {"apiVersion": f"{KUEUE}/v1beta2", "kind": "Workload",
          "metadata": {"name": "too-big-to-admit", "namespace": lq.namespace},
          "spec": {"queueName": lq.name, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
              "containers": [{"name": "c", "image": "x", "resources": {"requests": {"nvidia.com/gpu": "512"}}}]}}}]}}
    custom.create_namespaced_custom_object(KUEUE, "v1beta2", lq.namespace, "workloads", wl)
    key = (lq.namespace, "too-big-to-admit")
    try:
        # The position (polled) and the object (watched) arrive independently: wait for both.
        wait_until(lambda: live.store.position(key) and live.store.get("workloads", key) is not None, 10)
        pos = live.store.position(key)
        assert pos is not None and pos.cluster_queue == lq.cluster_queue and pos.in_cluster_queue >= 0
        assert isinstance(live.store.get("workloads", key), Workload)
        assert key in live.store.workloads_in_cluster_queue(lq.cluster_queue)
        assert live.store.source("visibility").state is SourceState.LIVE
    finally:
        custom.delete_namespaced_custom_object(KUEUE, "v1beta2", lq.namespace, "workloads", "too-big-to-admit")
    assert wait_until(lambda: live.store.get("workloads", key) is None and live.store.position(key) is None, 10)


def test_v1beta1_informers_see_the_same_objects(served: ServedCluster, conn: Connection, live_factory) -> None:
    from dataclasses import replace

    old = replace(conn, kueue=replace(conn.kueue, version="v1beta1"))
    lv = live_factory(old)
    # The store keeps parsed objects only: the informer's path says which version it watched.
    assert lv.sources.informer("clusterqueues").spec.path == f"/apis/{KUEUE}/v1beta1/clusterqueues"
    assert lv.sources.informer("clusterqueues").lists >= 1
    assert all(isinstance(w, Workload) for w in lv.store.objects("workloads").values())
    assert_converges(served, lv.store)


def test_old_kueue_sim_serving_only_v1beta1(tmp_path) -> None:
    from kueuetop.sim.scenarios.loader import load_scenario
    from kueuetop.sim.serve import start_served
    from kueuetop.sources.connection import connect
    from kueuetop.sources.kube import KubeSources
    from kueuetop.store import Store

    from .conftest import FAST

    served = start_served(load_scenario("refarch"), speed=60, kubeconfig=str(tmp_path / "kc"), kueue_api="v1beta1")
    conn = connect(str(served.kubeconfig))
    src = None
    try:
        assert conn.kueue.version == "v1beta1"
        store = Store()
        src = KubeSources(conn, store, config=FAST, visibility_interval=0.3).start()
        assert wait_until(src.synced, 10)
        assert store.count("workloads") > 0
        assert all(isinstance(w, Workload) for w in store.objects("workloads").values())
        assert_converges(served, store)
    finally:
        if src is not None:
            src.stop()
        conn.close()
        served.stop()


@pytest.mark.parametrize("on_loop", [False, True], ids=["thread", "shared-loop"])
def test_a_list_outlasting_the_watch_window_is_not_listed_again(served: ServedCluster, tmp_path,
                                                                live_factory, on_loop: bool) -> None:
    """The server's watch window moves past the list's version while the list is still paging (a
    long list on a busy cluster): the watch opened at the list's first page still has every change,
    so the informer lists once. Opened after the last page it would get 410 and list again, and on
    a cluster where every list outlasts the window, forever."""
    import dataclasses
    import threading

    from kueuetop.sim.apiserver import write_kubeconfig
    from kueuetop.sources.connection import connect
    from kueuetop.sources.watch_loop import WatchLoop
    from tests.fault_proxy import FaultProxy
    from tests.waiting import FAST

    from .conftest import ADMIN_TOKEN

    st = served.parts.cluster.store
    moved = threading.Event()

    def rule(method: str, path: str) -> str:
        # The second page of a Workloads list: a change lands, then the window forgets it.
        if "/workloads?" in path and "continue=" in path and not moved.is_set():
            moved.set()
            with served.parts.cluster.lock:
                meta = st.list(KUEUE, "workloads", copy=False)[0][0]["metadata"]

                def touch(o: dict) -> dict:
                    o["metadata"] = {**o["metadata"], "annotations": {**(o["metadata"].get("annotations") or {}),
                                                                      "touched": "yes"}}
                    return o
                st.patch(KUEUE, "workloads", meta["namespace"], meta["name"], touch)
                st.forget_history(KUEUE, "workloads")
        return "pass"

    loop = WatchLoop() if on_loop else None
    with FaultProxy(served.url) as proxy:
        proxy.rule(rule)
        conn = connect(str(write_kubeconfig(tmp_path / "proxied", proxy.url, token=ADMIN_TOKEN)))
        try:
            live = live_factory(conn, config=dataclasses.replace(FAST, page_size=5), watch_loop=loop)
            assert live.sources.on_loop is on_loop
            assert moved.is_set(), "the list had a second page"
            wl = next(i for i in live.sources.informers if i.spec.source == "workloads")
            assert wait_until(lambda: live.store.source("workloads").state is SourceState.LIVE, 10)
            assert_converges(served, live.store)
            assert wl.lists == 1
        finally:
            conn.close()
            if loop is not None:
                loop.stop()
