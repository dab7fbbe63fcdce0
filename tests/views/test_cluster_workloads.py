"""views.cluster_workloads: every cluster's workloads in one table, where actions go, and the
GPU samples of several clusters grouped for one heatmap."""

from __future__ import annotations

from kueuetop.kueue.gpu import GpuSample
from kueuetop.views.cluster_workloads import (
    COPY,
    LOCAL,
    MANAGER,
    action_place,
    cross_workloads,
    workload_rows,
)
from kueuetop.views.clusters import ClusterRead, gpus_by_cluster
from tests.views.test_clusters_view import _reads


def _with_docs() -> list[ClusterRead]:
    """The placement fixture, with snapshot rows for the workloads each cluster holds."""
    hub, eu, us, asia = _reads()
    hub.doc = {**hub.doc, "workloads": [
        {"namespace": "team-a", "name": "a", "queue": "lq", "state": "Admitted", "gpus": 8, "waitSeconds": 30},
        {"namespace": "team-a", "name": "b", "queue": "lq", "state": "QuotaReserved", "gpus": 4, "waitSeconds": 90},
        {"namespace": "team-b", "name": "plain", "queue": "lq", "state": "Pending", "gpus": 1, "waitSeconds": 5}]}
    eu.doc = {**eu.doc, "workloads": [
        {"namespace": "team-a", "name": "a", "queue": "lq", "state": "Admitted", "gpus": 8, "waitSeconds": 2},
        {"namespace": "team-a", "name": "b", "queue": "lq", "state": "Pending\x1b[31m", "gpus": 4}]}
    return [hub, eu, us, asia]


def test_each_workload_once_per_cluster_with_its_role() -> None:
    items = {(w.cluster, w.name): w for w in cross_workloads(_with_docs())}
    assert set(items) == {("hub", "a"), ("hub", "b"), ("hub", "plain"), ("eu", "a"), ("eu", "b")}
    a = items[("hub", "a")]
    assert (a.role, a.dispatched, a.copy, a.gpus) == (MANAGER, "eu", "admitted", 8)
    b = items[("hub", "b")]
    assert b.role == MANAGER and b.dispatched == "" and b.copy.startswith("eu: pending: insufficient unused quota")
    assert items[("hub", "plain")].role == LOCAL
    copy = items[("eu", "a")]
    assert (copy.role, copy.act_on) == (COPY, "hub")
    assert "\x1b" not in items[("eu", "b")].state


def test_rows_filter_by_cluster_and_text_and_sort() -> None:
    items = cross_workloads(_with_docs())
    on_eu = workload_rows(items, cluster="eu")
    # On eu: eu's own copies and the manager workload dispatched there.
    assert sorted((w.cluster, w.name) for w, _ in on_eu) == [("eu", "a"), ("eu", "b"), ("hub", "a")]
    row = dict((w.cluster + "/" + w.name, r) for w, r in on_eu)["hub/a"]
    assert [c.plain for c in row.cells][:5] == ["hub", "team-a/a", "lq", "Admitted", "8"]
    assert row.cells[6].plain == "eu"
    assert dict((w.cluster + "/" + w.name, r) for w, r in on_eu)["eu/a"].cells[6].plain == "copy of hub"
    assert [w.name for w, _ in workload_rows(items, text_filter="team-b")] == ["plain"]
    assert {w.name for w, _ in workload_rows(items, text_filter="state:copy")} == {"a", "b"}
    by_wait = [w.wait for w, _ in workload_rows(items, sort="age", reverse=True)]
    assert by_wait[:2] == [90, 30] and by_wait[-1] is None  # missing values last
    assert next(w.gpus for w, _ in workload_rows(items, sort="gpus")) == 1


def test_actions_on_a_copy_go_to_its_manager() -> None:
    items = {(w.cluster, w.name): w for w in cross_workloads(_with_docs())}
    to = action_place(items[("eu", "a")])
    assert (to.context, to.namespace, to.name) == ("hub", "team-a", "a")
    assert "acting on the manager's Workload (context hub)" in to.note and not to.refused
    assert action_place(items[("hub", "plain")]).context == "hub"
    # A worker read without its manager: its copies (MultiKueue's origin label) are refused.
    orphans = [w for w in cross_workloads(_with_docs()[1:]) if w.role == COPY]
    assert {w.name for w in orphans} == {"a", "b"}
    refused = action_place(orphans[0])
    assert refused.context == "" and "manager is not among the contexts shown" in refused.refused


def test_gpus_grouped_by_cluster_then_pool() -> None:
    hub, eu, us, _ = _with_docs()
    eu.gpus = [GpuSample("node-0", "0", util=50.0), GpuSample("node-0", "1", util=10.0)]
    eu.pools = {"node-0": "a100-reserved"}
    us.gpus = [GpuSample("node-0", "0", util=90.0)]
    samples, group = gpus_by_cluster([hub, eu, us])
    assert sorted(s.node for s in samples) == ["eu/node-0", "eu/node-0", "us/node-0"]
    assert group == {"eu/node-0": "eu · a100-reserved", "us/node-0": "us"}
