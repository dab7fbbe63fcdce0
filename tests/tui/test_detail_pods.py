"""The detail screen's pods: why each is where it is, from what the cluster reported — the
scheduler's PodScheduled message, the pod's Events, container waiting reasons — and the free
GPUs of the flavor's nodes against what one pod needs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from textual.pilot import Pilot

from kueuetop.kueue.core import Pod
from kueuetop.kueue.event import ObjectEvent
from kueuetop.kueue.workload import Workload
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import start_served
from kueuetop.sources.connection import connect
from kueuetop.sources.kube import KubeSources
from kueuetop.sources.object_events import fetch_object_events
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.tui.detail import detail_text
from tests.tui.conftest import Live
from tests.tui.screen_text import screen_text
from tests.tui.test_app import make_app, run, until
from tests.tui.test_overview import incident_store
from tests.views.cluster import NOW
from tests.waiting import FAST, wait_until


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """refarch from its start (the package's cluster may be past its compact wave by now)."""
    d = tmp_path_factory.mktemp("tui-pods")
    served = start_served(load_scenario("refarch"), speed=30, kubeconfig=str(d / "kubeconfig"))
    conn = connect(str(served.kubeconfig))
    store = Store()
    sources = KubeSources(conn, store, config=FAST).start()
    assert wait_until(sources.synced, 10), store.sources()
    yield Live(conn, store, sources, None)
    sources.stop(timeout=2.0)
    conn.close()
    served.stop()


def flat(text: str) -> str:
    return " ".join(text.split())


def test_pods_say_why_with_the_schedulers_message_and_the_pools_free_gpus() -> None:
    app = make_app(incident_store(), clock=lambda: NOW)
    text = flat(detail_text(app.ctx, ("team-a", "big")).plain)
    assert "big-0 Pending node - gpus 4" in text
    assert "why: fragmentation: quota is free, but no node in gpu-l4-spot has 4 free GPUs: 3 nodes have 2" in text
    assert "PodScheduled False Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu." in text
    assert ("Free GPUs on the nodes of each flavor (what one pod needs) "
            "gpu-l4-spot: 3/4 nodes ready, 0 with 4 free GPUs; 3 nodes have 2 (one pod needs 4)") in text
    img = flat(detail_text(app.ctx, ("team-a", "img")).plain)
    assert "why: image-pull: c: ImagePullBackOff: ImagePullBackOff for c" in img
    assert "Free GPUs on the nodes" not in img  # placed on a node: no pool breakdown
    busy = flat(detail_text(app.ctx, ("team-a", "busy")).plain)
    assert "busy-0 Running node spot-0 gpus 2" in busy and "why:" not in busy


def test_the_autoscalers_events_name_the_cause() -> None:
    app = make_app(incident_store(), clock=lambda: NOW)
    events = {"big-0": [ObjectEvent(NOW - 90, "Warning", "FailedScheduling", "0/3 nodes are available", 3,
                                    "default-scheduler"),
                        ObjectEvent(NOW - 30, "Normal", "TriggeredScaleUp",
                                    "pod triggered scale-up: [{spot-np 3->4 (max: 8)}]", 1, "cluster-autoscaler")]}
    text = flat(detail_text(app.ctx, ("team-a", "big"), pod_events=events).plain)
    assert "why: scale-up: pod triggered scale-up: [{spot-np 3->4 (max: 8)}]" in text
    assert "FailedScheduling 1m (x3) 0/3 nodes are available" in text
    assert "TriggeredScaleUp 30s pod triggered scale-up" in text


def _unplaced(live: Live) -> tuple[tuple[str, str], str] | None:
    """An admitted workload with a pod the scheduler could not place yet, and that pod."""
    store = live.store
    for pkey, pod in store.objects(K.PODS).items():
        if not isinstance(pod, Pod) or pod.node_name or pod.phase != "Pending":
            continue
        cond = next((c for c in pod.conditions if c.type == "PodScheduled"), None)
        wkey = store.workload_of_pod(pkey)
        wl = store.get(K.WORKLOADS, wkey) if wkey else None
        if cond is not None and cond.status == "False" and isinstance(wl, Workload) and wl.is_admitted:
            return wkey, pkey[1]  # type: ignore[return-value]
    return None


def test_detail_shows_the_pod_events_the_cluster_recorded(fresh: Live) -> None:
    live = fresh
    # refarch's compact wave asks for A100 spot nodes the pool does not have yet: the simulated
    # kube-scheduler records FailedScheduling and the autoscaler TriggeredScaleUp on those pods.
    assert wait_until(lambda: _unplaced(live) is not None, 60), "no unschedulable pod of an admitted workload"
    found = _unplaced(live)
    assert found is not None
    wkey, pod_name = found
    reasons = {e.reason for e in fetch_object_events(live.conn.api, wkey[0], "Pod", pod_name)}
    assert "FailedScheduling" in reasons, reasons
    app = make_app(live.store, live, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        app.open_workload(wkey)
        assert await until(pilot, lambda: "FailedScheduling" in screen_text(app), 15), screen_text(app)
        text = flat(screen_text(app))
        assert f"{pod_name} Pending" in text and "why:" in text, text

    run(app, body)
