"""The forecast's node side: a pod goes to the fullest node that fits it, whatever index
`PodPlacer` keeps to find that node quickly."""

from __future__ import annotations

import random

from kueuetop.admission.forecast_result import PoolCapacity
from kueuetop.admission.pod_placement import PodPlacer, _WaitingPod


def _scan(placer: PodPlacer, pod: _WaitingPod, requested: bool) -> tuple[str, int] | None:
    """The rule itself, over every node: fewest free GPUs that fit, then the pod's first pool,
    then the node changed earliest."""
    best = None
    for rank, pool in enumerate(pod.pools):
        if placer.caps[pool].queued and not requested:
            continue
        for i, node in enumerate(placer.nodes[pool]):
            if node.free >= pod.gpus and (best is None or (node.free, rank, node.order) < best[:3]):
                best = (node.free, rank, node.order, pool, i)
    return (best[3], best[4]) if best is not None else None


def test_each_pod_lands_where_a_scan_of_every_node_puts_it() -> None:
    rng = random.Random(7)
    pools = {
        "a": PoolCapacity("a", {}, 8, tuple(rng.choice((0, 0, 2, 4, 8)) for _ in range(40)), 60, 30.0),
        "b": PoolCapacity("b", {}, 8, tuple(rng.choice((0, 1, 8)) for _ in range(25)), 25),
        "q": PoolCapacity("q", {}, 4, (4, 4, 2), 10, 60.0, queued=True),
    }
    placer = PodPlacer(pools, 0.0)
    shapes = [("a",), ("b",), ("a", "b"), ("b", "a"), ("q", "a"), ("b", "q")]
    now, placed = 0.0, 0
    for n in range(400):
        key = ("ns", f"w{n}")
        pods = [(rng.choice(shapes), rng.choice((1, 1, 2, 4, 8))) for _ in range(rng.randint(1, 3))]
        for pools_of, gpus in pods:  # the index answers as the scan does, on every state met
            for requested in (False, True):
                pod = _WaitingPod(pools_of, gpus)
                assert placer._fit(pod, requested) == _scan(placer, pod, requested)
        placer.admit(key, pods, runtime=rng.choice((90.0, 400.0, 2000.0)))
        if rng.random() < 0.1:
            placer.await_request(key, scales=True)
        if rng.random() < 0.15 and n > 5:  # a running or waiting workload evicted
            placer.release(("ns", f"w{rng.randrange(n)}"))
        now += rng.choice((0.0, 10.0, 45.0))
        placed += len(placer.step(now))
    assert placed > 100  # pods found nodes, freed them and took them again: the index was exercised
    assert any(len(nodes) > len(pools[name].free_gpus) for name, nodes in placer.nodes.items())  # nodes were added
