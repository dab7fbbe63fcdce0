"""The simulated recorders correlate Events as client-go's do (tools/record/events_cache.go)."""

from __future__ import annotations

from kueuetop.sim.kube.event_correlator import (
    AGGREGATE_INTERVAL,
    AGGREGATE_MAX_EVENTS,
    COMBINED,
    SPAM_BURST,
    EventCorrelator,
)
from kueuetop.sim.kube.events import KUBELET, EventWriter
from kueuetop.sim.storage.objectstore import ObjectStore

WL = ("Workload", "team-a", "train", "uid-1", "kueue.x-k8s.io/v1beta1")
OTHER = ("Workload", "team-a", "eval", "uid-2", "kueue.x-k8s.io/v1beta1")


def test_a_repeat_is_a_count_bump_on_the_same_event_keeping_its_first_time():
    c = EventCorrelator()
    a = c.correlate(100.0, WL, "Normal", "Pending", "no quota")
    b = c.correlate(160.0, WL, "Normal", "Pending", "no quota")
    assert (a.key, a.count, a.first, a.skip) == (b.key, 1, 100.0, False)
    assert (b.count, b.first) == (2, 100.0)


def test_ten_messages_of_one_reason_within_ten_minutes_are_combined():
    c = EventCorrelator()
    out = [c.correlate(100.0 + i, WL, "Normal", "Pending", f"{i} more GPUs needed")
           for i in range(AGGREGATE_MAX_EVENTS + 2)]
    assert all(not o.message.startswith(COMBINED) for o in out[:AGGREGATE_MAX_EVENTS - 1])
    combined = out[AGGREGATE_MAX_EVENTS - 1:]
    assert [o.message for o in combined] == [COMBINED + f"{i} more GPUs needed"
                                             for i in range(AGGREGATE_MAX_EVENTS - 1, AGGREGATE_MAX_EVENTS + 2)]
    # One combined Event, its count growing.
    assert len({o.key for o in combined}) == 1 and [o.count for o in combined] == [1, 2, 3]
    # Another reason of the same object is not combined with them.
    assert not c.correlate(120.0, WL, "Normal", "Admitted", "ok").message.startswith(COMBINED)
    # A quiet gap longer than the interval starts over.
    later = c.correlate(120.0 + AGGREGATE_INTERVAL + 1, WL, "Normal", "Pending", "new message")
    assert later.message == "new message"


def test_a_source_writes_25_events_about_one_object_then_one_per_five_minutes():
    c = EventCorrelator()
    first = [c.correlate(100.0, WL, "Normal", "Pending", "no quota") for _ in range(SPAM_BURST + 5)]
    assert [o.skip for o in first] == [False] * SPAM_BURST + [True] * 5
    # The bucket is per object: another workload is not held back.
    assert not c.correlate(100.0, OTHER, "Normal", "Pending", "no quota").skip
    # Every reason draws on the same bucket.
    assert c.correlate(101.0, WL, "Warning", "Evicted", "preempted").skip
    assert c.correlate(100.0 + 299.0, WL, "Normal", "Pending", "no quota").skip
    after = c.correlate(100.0 + 301.0, WL, "Normal", "Pending", "no quota")
    # The skipped occurrences were still counted, so the next write carries them.
    assert not after.skip and after.count == SPAM_BURST + 5 + 2


def test_a_workload_requeued_every_cycle_writes_what_a_real_cluster_would():
    store = ObjectStore()
    now = [1_700_000_000.0]
    writer = EventWriter(store, lambda: now[0])
    wl = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
          "metadata": {"namespace": "team-a", "name": "train", "uid": "uid-1", "resourceVersion": "5"}}
    writes: list[tuple[str, int]] = []
    store.subscribe(lambda ev: writes.append((ev.type, ev.obj.get("count"))) if ev.kind.kind == "Event" else None)
    for i in range(100):  # a cycle a second, each with a new "N more needed" message
        now[0] += 1.0
        writer.emit(wl, "Pending", f"couldn't assign flavors: {i % 3} more needed")
    # 25 writes in all (the spam filter), not 100; one Event per message, none combined yet.
    assert len(writes) == SPAM_BURST
    events, _ = store.list("", "events", copy=False)
    assert len(events) == 3 and all(e["count"] >= 8 for e in events)
    # Another component (the kubelet) has its own recorder and its own budget.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "team-a", "name": "p", "uid": "uid-p"}}
    writer.emit(pod, "Started", "Started container main", component=KUBELET, host="node-1")
    assert len(writes) == SPAM_BURST + 1
