"""The node pools seen before, kept across runs: what a pool's nodes carry once it has scaled to
zero, tied to cluster-autoscaler's node groups by its node names, so the forecast still places
pods on it (after a scale-up) and a what-if can add nodes to it."""

from __future__ import annotations

import json
from pathlib import Path

from kueuetop.admission.forecast import forecast
from kueuetop.admission.forecast_result import RuntimeEstimate
from kueuetop.kueue.autoscaler_status import NodeGroupStatus, PoolLimit, pool_limits
from kueuetop.kueue.core import Node
from kueuetop.kueue.parse import parse_object
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.store.known_pools import (
    KnownPools,
    PoolShape,
    load_known_pools,
    save_known_pools,
    shapes_from_nodes,
)
from kueuetop.views.forecast_report import NODE_DELAY_ASSUMED, pools_from_store
from tests.builders import T0, cluster_queue, flavor, fq, group, local_queue, workload
from tests.views.cluster import node, put

GPU = "nvidia.com/gpu"
POOL = "cloud.google.com/gke-nodepool"
SPOT = {POOL: "spot-np", "resource-type": "spot"}
# GKE names a node after its zone's managed instance group: "<group base>-<4 chars>".
BASE_A, BASE_B = "gke-batch-spot-np-1a2b3c4d", "gke-batch-spot-np-5e6f7a8b"
GROUP = "https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-{z}/instanceGroups/{b}-grp"


def _nodes(*objs: dict) -> list[Node]:
    out = [parse_object(o) for o in objs]
    assert all(isinstance(n, Node) for n in out)
    return out  # type: ignore[return-value]


def test_a_pool_is_remembered_by_what_all_its_nodes_carry() -> None:
    got = shapes_from_nodes(_nodes(node(f"{BASE_A}-x1y2", 4, {**SPOT, "kubernetes.io/hostname": "a"}),
                                   node(f"{BASE_B}-z3w4", 8, {**SPOT, "kubernetes.io/hostname": "b"}),
                                   node("lonely", 0, {POOL: "cpu-np", "kubernetes.io/hostname": "lonely"}),
                                   node("no-pool", 8)), T0)
    assert set(got) == {"spot-np", "cpu-np"}
    assert got["spot-np"] == PoolShape("spot-np", SPOT, 8, (BASE_A, BASE_B), T0)
    assert got["cpu-np"].node_labels == {POOL: "cpu-np"}  # one node's hostname is no pool's label


def test_learning_marks_only_what_is_new_and_keeps_a_pools_other_groups() -> None:
    known = KnownPools("https://c")
    known.learn_nodes(_nodes(node(f"{BASE_A}-x1y2", 4, SPOT), node(f"{BASE_B}-z3w4", 4, SPOT)), T0)
    assert known.unsaved and known.bases() == {BASE_A: "spot-np", BASE_B: "spot-np"}
    known.unsaved = False
    known.learn_nodes(_nodes(node(f"{BASE_A}-q9r8", 4, SPOT)), T0 + 60)  # zone b scaled to zero
    assert not known.unsaved and known.pools["spot-np"].bases == (BASE_A, BASE_B)
    assert known.pools["spot-np"].seen == T0 + 60
    known.learn_nodes(_nodes(node(f"{BASE_A}-q9r8", 8, SPOT)), T0 + 120)  # a new machine type
    assert known.unsaved and known.pools["spot-np"].gpus_per_node == 8


def test_kept_per_cluster_across_runs_and_a_bad_file_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "known-pools.json"
    one = KnownPools("https://one")
    one.learn_nodes(_nodes(node(f"{BASE_A}-x1y2", 4, SPOT)), T0)
    assert save_known_pools(path, one) == "" and not one.unsaved
    two = KnownPools("https://two")
    two.learn_nodes(_nodes(node("n1", 8, {POOL: "a100-np"})), T0)
    assert save_known_pools(path, two) == ""
    again, warning = load_known_pools(path, "https://one")
    assert warning == "" and again.pools == one.pools and not again.unsaved
    assert set(load_known_pools(path, "https://two")[0].pools) == {"a100-np"}
    # A malformed entry is skipped and said; the good ones load.
    data = json.loads(path.read_text())
    data["clusters"]["https://one"].append({"name": "x", "labels": "not a map", "gpus": 4})
    path.write_text(json.dumps(data))
    got, warning = load_known_pools(path, "https://one")
    assert set(got.pools) == {"spot-np"} and "skipped 1 malformed pool(s)" in warning
    path.write_text("{not json")
    got, warning = load_known_pools(path, "https://one")
    assert got.pools == {} and "is not valid JSON" in warning and "kept as known-pools.json.bad" in warning
    assert (tmp_path / "known-pools.json.bad").read_text() == "{not json"


def _zero_pool_store() -> tuple[Store, KnownPools, list[NodeGroupStatus]]:
    """spot-np has scaled to zero (no Node); it was seen with 4-GPU nodes in zone a's group, which
    cluster-autoscaler lists with maxSize 3. A 4-GPU workload is pending on the flavor that selects it."""
    store = Store()
    put(store, flavor("spot", {"resource-type": "spot"}),
        cluster_queue("cq", group(GPU, fq("spot", **{GPU: 8}))), local_queue("team-a", "lq", "cq"),
        workload("team-a", "w", "lq", {GPU: "4"}, created=T0))
    known = KnownPools("https://c")
    known.learn_nodes(_nodes(node(f"{BASE_A}-x1y2", 4, SPOT)), T0 - 3600)
    groups = [NodeGroupStatus(GROUP.format(z="a", b=BASE_A), 0, 3, 0, 0),
              NodeGroupStatus(GROUP.format(z="b", b="gke-batch-other-np-00000000"), 0, 5, 0, 0)]
    return store, known, groups


def test_the_autoscalers_groups_of_a_pool_at_zero_are_tied_to_it_through_its_remembered_nodes() -> None:
    _, known, groups = _zero_pool_store()
    assert pool_limits(groups, [], known.bases()) == {"spot-np": PoolLimit(3, 0, 0)}
    assert pool_limits(groups, []) == {}  # nothing says whose group it is


def test_the_forecast_places_pods_on_a_remembered_pool_at_zero_after_its_scale_up() -> None:
    store, known, groups = _zero_pool_store()
    pools, _ = pools_from_store(store, groups, T0, known=known)
    assert set(pools) == {"spot-np"}
    p = pools["spot-np"]
    assert (p.node_labels, p.gpus_per_node, p.free_gpus, p.max_nodes) == (SPOT, 4, (), 3)
    snap = store.snapshot()
    runtimes = {k: RuntimeEstimate(600.0, 600.0, 600.0, "test") for k in snap.workloads}
    fc = forecast(snap, runtimes, T0, pools=pools, placements={})
    wf = fc.workloads[("team-a", "w")]
    assert wf.start == T0 and wf.pods_start == T0 + NODE_DELAY_ASSUMED  # admitted at once; a node comes
    # Without the memory the pool is unknown: its pods were taken to run at once.
    assert pools_from_store(store, groups, T0)[0] == {}
    # Not covered by the autoscaler (nothing can grow it): not a pool the forecast places pods on.
    assert pools_from_store(store, [groups[1]], T0, known=known)[0] == {}
    assert not store.objects(K.NODES)
