"""The store's histories stay within their stated retention however long the console runs."""

from __future__ import annotations

import math

from kueuetop.kueue.gpu import GpuSample
from kueuetop.kueue.parse import parse_object
from kueuetop.store import Entry, Store, StoreEvent
from kueuetop.store.history import CountsRing, FloatRing, QueueCounts, Series
from kueuetop.store.state import GPU_HISTORY_POINTS


def test_float_ring_keeps_the_newest_points_in_order() -> None:
    ring = FloatRing(5)
    assert ring.points() == [] and ring.last() is None
    for i in range(12):
        ring.append(float(i), None if i == 10 else i * 10.0)
    assert len(ring) == 5
    assert ring.points() == [(7.0, 70.0), (8.0, 80.0), (9.0, 90.0), (10.0, None), (11.0, 110.0)]
    assert ring.points(since=9.0) == [(9.0, 90.0), (10.0, None), (11.0, 110.0)]
    assert ring.last() == (11.0, 110.0)
    assert list(ring) == ring.points()
    small = FloatRing(3)
    small.append(1.0, 33.5)
    assert small.points() == [(1.0, 33.5)]  # float32 keeps a utilization exactly enough


def test_gpu_history_per_gpu_is_bounded_after_many_polls() -> None:
    store = Store()
    gpus, polls = 40, GPU_HISTORY_POINTS * 3
    for t in range(polls):
        samples = [GpuSample(node=f"n{g // 8}", gpu=str(g % 8), util=float((t + g) % 100), at=float(t))
                   for g in range(gpus)]
        store.put_gpu_samples(samples, float(t), "dcgm")
    assert len(store.gpu_history) == gpus
    gpu_keys = store.gpu_history.keys()  # a Series, not a dict
    for key in gpu_keys:
        points = store.gpu_history.get(key)
        assert len(points) == GPU_HISTORY_POINTS, (key, len(points))
        assert points[-1][0] == float(polls - 1) and points[0][0] == float(polls - GPU_HISTORY_POINTS)
    # A point costs a few bytes, not a tuple of boxed floats.
    ring = store.gpu_history._rings[("n0", "0")]
    assert isinstance(ring, FloatRing)
    assert ring._at.itemsize * len(ring._at) + ring._values.itemsize * len(ring._values) == 12 * GPU_HISTORY_POINTS


def test_queue_and_fleet_histories_are_bounded() -> None:
    store = Store(history_size=30, history_interval=0.0)
    for t in range(100):
        store.put_gpu_samples([GpuSample(node="n", gpu="0", util=math.nan if t % 7 == 0 else 50.0, at=float(t))],
                              float(t), "dcgm")
        store.record_queue_history(float(t))
    assert len(store.gpu_util_history) == 30
    models = store.gpu_model_history.keys()  # a Series, not a dict
    assert models and all(len(store.gpu_model_history.get(m)) <= 30 for m in models)


def test_series_drops_the_longest_idle_key_beyond_max_keys() -> None:
    series: Series[str, float] = Series(4, max_keys=3, ring=FloatRing)
    for i, key in enumerate("abcd"):
        series.append(key, float(i), 1.0)
    kept = series.keys()  # a Series, not a dict
    assert len(series) == 3 and "a" not in kept


def test_queue_history_keeps_the_newest_counts_per_queue_within_its_size() -> None:
    store = Store(history_size=10, history_interval=0.0)
    store.apply(StoreEvent.replace("clusterqueues", "clusterqueues", [_cq("cq-a"), _cq("cq-b")]))
    for t in range(35):
        store.record_queue_history(float(t))
    for cq in ("cq-a", "cq-b"):
        points = store.queue_history.get(cq)
        assert len(points) == 10 and [t for t, _ in points] == [float(t) for t in range(25, 35)]
        assert all(c == QueueCounts(0, 0, 0) for _, c in points)
        assert store.queue_history.last(cq) == points[-1]
    assert store.queue_history.last("nobody") is None
    ring = CountsRing(3)
    for i in range(5):
        ring.append(float(i), QueueCounts(i, 2 * i, 3 * i))
    assert ring.points() == [(2.0, QueueCounts(2, 4, 6)), (3.0, QueueCounts(3, 6, 9)), (4.0, QueueCounts(4, 8, 12))]
    assert ring.points(since=4.0) == [(4.0, QueueCounts(4, 8, 12))] and len(ring) == 3


def _cq(name: str) -> Entry:
    raw = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
           "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
           "spec": {"resourceGroups": []}}
    return Entry(("", name), None, parse_object(raw), f"uid-{name}", "1")
