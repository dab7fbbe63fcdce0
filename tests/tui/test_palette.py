"""The palette's entries from the keymap registry, without a cluster: targets, read-only, RBAC."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from kueuetop.kueue.parse import parse_object
from kueuetop.store import Entry, Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.tui.app import KueuetopApp
from kueuetop.tui.palette import entries
from tests.tui.test_app import make_app, run, until


def _store() -> Store:
    store = Store()
    raw: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "wl-1", "namespace": "team-a", "uid": "u1", "resourceVersion": "1",
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}}]}}
    store.apply(StoreEvent.upsert(K.WORKLOADS, "workloads", Entry(("team-a", "wl-1"), raw, parse_object(raw), "u1", "1")))
    return store


def _titles(app: KueuetopApp) -> list[str]:
    return [e.title for e in entries(app, app.screen)]


def test_entries_follow_the_view_read_only_and_rbac() -> None:
    app = make_app(_store(), initial_view="workloads")
    started: list[tuple[str, list[Any]]] = []
    app.start_actions = lambda action, targets: started.append((action, targets))  # type: ignore[method-assign]

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: "Hold team-a/wl-1" in _titles(app)), _titles(app)
        titles = _titles(app)
        for t in ("Resume team-a/wl-1", "Requeue team-a/wl-1", "Preempt team-a/wl-1", "Preempt+hold team-a/wl-1",
                  "View GPUs", "View ClusterQueues"):
            assert t in titles, t
        assert not any("ClusterQueue" in t and not t.startswith("View") for t in titles)  # not on this view
        next(e for e in entries(app, app.screen) if e.title == "Hold team-a/wl-1").run()
        assert started and started[0][0] == "hold" and str(started[0][1][0]) == "team-a/wl-1"
        # Forbidden: listed, marked, the reason as help; running it starts nothing.
        app._set_denied({"patch workloads.kueue.x-k8s.io": "forbidden: user bob cannot patch"})
        denied = [e for e in entries(app, app.screen) if e.title.startswith("Hold team-a/wl-1")]
        assert denied and denied[0].title.endswith("(not allowed)") and not denied[0].allowed
        assert "user bob cannot patch" in denied[0].help
        denied[0].run()
        assert len(started) == 1
        # Read-only: no cluster-changing entry at all; view switches stay.
        app.read_only = True
        titles = _titles(app)
        assert not any(t.startswith(("Hold", "Resume", "Requeue", "Preempt")) for t in titles), titles
        assert "View Workloads" in titles

    run(app, body)
