"""Why a pod is where it is: causes from the pod's status, its pool's nodes and its Events."""

from __future__ import annotations

from kueuetop.kueue.core import Node, Pod
from kueuetop.kueue.flavor import ResourceFlavor
from kueuetop.kueue.parse import parse_object
from kueuetop.views import pod_evidence as PE
from tests.builders import flavor
from tests.views.cluster import node, pod

UNSCHED = (False, "Unschedulable", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")


def parsed(raw: dict) -> object:
    raw.setdefault("metadata", {}).setdefault("uid", "u")
    return parse_object(raw)


def spot() -> tuple[ResourceFlavor, list[Node]]:
    fl = parsed(flavor("gpu-l4-spot", {"pool": "spot"}))
    nodes = [parsed(node(f"spot-{i}", 4, {"pool": "spot"})) for i in range(3)]
    nodes.append(parsed(node("down", 4, {"pool": "spot"}, ready=False)))
    nodes.append(parsed(node("other", 8, {"pool": "a100"})))
    assert isinstance(fl, ResourceFlavor) and all(isinstance(n, Node) for n in nodes)
    return fl, nodes  # type: ignore[return-value]


def test_container_states_are_parsed_with_reasons_and_restarts() -> None:
    p = parsed(pod("ns", "p", "wl", 1, node_name="n", phase="Running", waiting="CrashLoopBackOff", restarts=3))
    assert isinstance(p, Pod)
    (c,) = p.containers
    assert (c.name, c.waiting_reason, c.restarts, c.last_terminated_reason) == ("c", "CrashLoopBackOff", 3, "Error")
    assert p.restarts == 3
    assert parsed(pod("ns", "q", "wl", 1)).containers == ()  # type: ignore[attr-defined]


def test_pool_fit_counts_ready_nodes_of_the_flavor_and_their_free_gpus() -> None:
    fl, nodes = spot()
    fit = PE.pool_fit(fl, 4, nodes, {"spot-0": 2, "spot-1": 2, "spot-2": 2, "down": 4})
    assert (fit.nodes, fit.ready, fit.fit, fit.free, fit.by_free) == (4, 3, 0, 6, ((2, 3),))
    assert fit.fragmented
    assert PE.fragmentation_text(fit) == "quota is free, but no node in gpu-l4-spot has 4 free GPUs: 3 nodes have 2"
    assert fit.text() == "gpu-l4-spot: 3/4 nodes ready, 0 with 4 free GPUs; 3 nodes have 2"
    assert not PE.pool_fit(fl, 8, nodes, {"spot-0": 2, "spot-1": 2, "spot-2": 2}).fragmented  # 6 < 8: not enough at all
    assert PE.pool_fit(fl, 2, nodes, {"spot-0": 2, "spot-1": 1, "spot-2": 0}).by_free == ((2, 1), (1, 1))


def test_free_gpus_count_placed_pods_that_still_hold_them() -> None:
    _, nodes = spot()
    pods = [parsed(pod("ns", "a", "w", 3, node_name="spot-0", phase="Running")),
            parsed(pod("ns", "b", "w", 1, node_name="spot-0", phase="Pending")),
            parsed(pod("ns", "c", "w", 4, node_name="spot-1", phase="Succeeded")),
            parsed(pod("ns", "d", "w", 4))]
    free = PE.free_gpus(nodes, pods)  # type: ignore[arg-type]
    assert free["spot-0"] == 0 and free["spot-1"] == 4 and free["other"] == 8


def test_causes_in_order_of_what_the_cluster_reported() -> None:
    fl, nodes = spot()
    frag = PE.pool_fit(fl, 4, nodes, {"spot-0": 2, "spot-1": 2, "spot-2": 2})
    p = parsed(pod("ns", "p", "w", 4, scheduled=UNSCHED))
    assert PE.pod_cause(p).cause == PE.UNSCHEDULABLE  # type: ignore[arg-type]
    assert PE.pod_cause(p).message == UNSCHED[2]  # type: ignore[arg-type]
    assert PE.pod_cause(p, frag).cause == PE.FRAGMENTED  # type: ignore[arg-type]
    # The autoscaler's latest word wins over what the nodes look like now.
    up = PE.pod_cause(p, frag, [("FailedScheduling", "x"), ("TriggeredScaleUp", "pod triggered scale-up: [{spot 3->4}]")])  # type: ignore[arg-type]
    assert up == PE.PodCause(PE.SCALE_UP, "pod triggered scale-up: [{spot 3->4}]")
    no = PE.pod_cause(p, None, [("NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max node group size reached")])  # type: ignore[arg-type]
    assert no.cause == PE.UNSCHEDULABLE and "max node group size reached" in no.message
    empty = PE.pool_fit(parsed(flavor("gpu-a100", {"pool": "none"})), 8, nodes, {})  # type: ignore[arg-type]
    assert PE.pod_cause(p, empty).cause == PE.SCALE_UP  # type: ignore[arg-type]
    img = parsed(pod("ns", "i", "w", 1, node_name="spot-0", waiting="ErrImagePull", scheduled=(True, "", "")))
    assert PE.pod_cause(img).cause == PE.IMAGE_PULL  # type: ignore[arg-type]
    running = parsed(pod("ns", "r", "w", 1, node_name="spot-0", phase="Running"))
    assert PE.pod_cause(running).cause == PE.RUNNING  # type: ignore[arg-type]
    starting = parsed(pod("ns", "s", "w", 1, node_name="spot-0", waiting="ContainerCreating"))
    assert PE.pod_cause(starting) == PE.PodCause(PE.STARTING, "c: ContainerCreating")  # type: ignore[arg-type]
