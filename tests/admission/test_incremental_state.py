"""Incremental bookkeeping between cycles gives the same results as recomputing from scratch.

Per-cycle work that the engine does only for what changed since the last cycle: pruning the
last flavor assignments to pending workloads (§6.3 LastAssignment), the cached "parked until"
of pending workloads in head scans (§6.1), queue totals for ClusterQueue/LocalQueue status.
"""

from dataclasses import replace

from kueuetop.admission.cycle import schedule
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.queue_totals import QueueTotals
from kueuetop.admission.status_updates import cluster_queue_status, local_queue_status
from tests.builders import (
    T0,
    admit,
    cluster_queue,
    condition,
    flavor,
    fq,
    group,
    local_queue,
    namespace,
    snapshot,
    ts,
    workload,
)

NOW = T0 + 100
# Two queues whose single flavor-pair is too small: each head is nominated, gets NoFit and a
# remembered LastAssignment.
BASE = [namespace("ns"), flavor("f1"), flavor("f2"),
        cluster_queue("a", group("cpu", fq("f1", cpu="1"), fq("f2", cpu="1"))),
        cluster_queue("b", group("cpu", fq("f1", cpu="1"), fq("f2", cpu="1"))),
        local_queue("ns", "lqa", "a"), local_queue("ns", "lqb", "b")]
W, OTHER = ("ns", "w"), ("ns", "other")


def _with(snap, key, obj):
    """`snap` with one workload replaced; every other object keeps its identity."""
    return replace(snap, workloads={**snap.workloads, key: snapshot(obj).workloads[key]})


def test_last_assignment_forgotten_when_workload_leaves_queue():
    """§6.3 the memory of a workload that is no longer pending is dropped, also when only that
    workload changed since the previous cycle (incremental pruning)."""
    s1 = snapshot(*BASE, workload("ns", "w", "lqa", {"cpu": "2"}), workload("ns", "other", "lqb", {"cpu": "2"}))
    cache = EngineCache()
    r1 = schedule(s1, NOW, None, cache)
    assert {W, OTHER} <= r1.state.last_assignments.keys()
    s2 = _with(s1, W, workload("ns", "w", "lqa", {"cpu": "2"}, active=False))
    r2 = schedule(s2, NOW + 1, r1.state, cache)
    assert W not in r2.state.last_assignments and OTHER in r2.state.last_assignments
    # Replaying an older state (what-if) against a later snapshot prunes from scratch.
    s3 = _with(s1, OTHER, workload("ns", "other", "lqb", {"cpu": "2"}, active=False))
    r3 = schedule(s3, NOW + 1, r1.state, cache)
    assert OTHER not in r3.state.last_assignments
    fresh = schedule(s3, NOW + 1, r1.state)
    assert r3.state == fresh.state


def test_backoff_ends_between_cycles_without_workload_change():
    """§6.1 a workload in backoff becomes a head once requeueAt passes, with no object change."""
    wl = workload("ns", "w", "lqa", {"cpu": "1"})
    wl["status"] = {"requeueState": {"count": 1, "requeueAt": ts(NOW + 10)},
                    "conditions": [condition("Requeued", True, "BackoffFinished")]}
    s = snapshot(*BASE, wl)
    cache = EngineCache()  # the head scan kept from the first cycle must see the backoff end
    r1 = schedule(s, NOW, None, cache)
    assert not r1.decisions
    r2 = schedule(s, NOW + 10, r1.state, cache)
    assert [type(d).__name__ for d in r2.decisions] == ["Admit"]


def test_queue_totals_match_status_counted_from_snapshot():
    """ClusterQueue/LocalQueue status from running totals equals the status counted from the
    workloads (reserving, admitted, pending, flavorsReservation/flavorsUsage)."""
    objs = [*BASE,
            admit(workload("ns", "r1", "lqa", {"cpu": "1"}), "a", {"cpu": "f1"}),
            admit(workload("ns", "r2", "lqa", {"cpu": "1"}), "a", {"cpu": "f2"}),
            workload("ns", "p1", "lqa", {"cpu": "1"}), workload("ns", "p2", "lqb", {"cpu": "1"}),
            workload("ns", "off", "lqa", {"cpu": "1"}, active=False)]
    s = snapshot(*objs)
    totals = QueueTotals()
    for key, wl in s.workloads.items():
        totals.set(key, wl, s.cluster_queue_of(wl))
    totals.set(("ns", "gone"), s.workloads[("ns", "p1")], "a")
    totals.discard(("ns", "gone"))
    for cq in ("a", "b"):
        assert cluster_queue_status(s, cq, NOW, pending_workloads=totals.cq_pending(s, cq),
                                    reservations=totals.cq_reservations(cq)) == cluster_queue_status(s, cq, NOW)
    for lq in (("ns", "lqa"), ("ns", "lqb")):
        assert local_queue_status(s, lq, NOW, pending_workloads=totals.lq_pending(s, lq),
                                  reservations=totals.lq_reservations(lq)) == local_queue_status(s, lq, NOW)


def test_workload_delta_gives_same_index_and_requeues_as_a_full_scan():
    """§6.1 with a WorkloadDelta the index and the requeue triggers only look at the listed
    keys, and end up exactly where a full scan of the workloads does."""
    from kueuetop.admission.queue_state import changed_cluster_queues
    from kueuetop.kueue.snapshot import WorkloadDelta
    running = admit(workload("ns", "r1", "lqa", {"cpu": "1"}), "a", {"cpu": "f1"})
    s1 = snapshot(*BASE, running, workload("ns", "p1", "lqa", {"cpu": "1"}, created=T0 + 1),
                  workload("ns", "p2", "lqb", {"cpu": "2"}))
    fast_cache, full_cache = EngineCache(), EngineCache()
    r1 = schedule(s1, NOW, None, fast_cache)
    schedule(s1, NOW, None, full_cache)
    done = dict(running, status={**running["status"], "conditions": [
        *running["status"]["conditions"], condition("Finished", True, "Succeeded")]})
    wls = dict(s1.workloads)
    wls[("ns", "r1")] = snapshot(*BASE, done).workloads[("ns", "r1")]
    del wls[("ns", "p2")]
    wls[("ns", "p3")] = snapshot(*BASE, workload("ns", "p3", "lqb", {"cpu": "1"})).workloads[("ns", "p3")]
    delta = WorkloadDelta(s1.workloads, wls, frozenset({("ns", "r1"), ("ns", "p2"), ("ns", "p3")}))
    with_delta = replace(s1, workloads=wls, workload_delta=delta)
    plain = replace(s1, workloads=dict(wls))
    assert changed_cluster_queues(s1, with_delta) == changed_cluster_queues(s1, plain) == {"a"}
    fast = schedule(with_delta, NOW + 1, r1.state, fast_cache)
    full = schedule(plain, NOW + 1, r1.state, full_cache)
    assert fast.decisions == full.decisions and fast.state == full.state
    a, b = fast_cache.index, full_cache.index
    assert {k: (e.cq, e.reserving, e.key) for k, e in a.entries.items()} == \
        {k: (e.cq, e.reserving, e.key) for k, e in b.entries.items()}
    def nonzero(usage):
        return {cq: {fr: v for fr, v in u.items() if v} for cq, u in usage.items() if any(u.values())}
    assert a.pending == b.pending and nonzero(a.cq_usage) == nonzero(b.cq_usage)
    assert a.queued_in_order() == b.queued_in_order() == sorted(cq for cq, lst in b.pending.items() if lst)
    # The simulator's snapshots hold versions of one SharedMap: the same answers again.
    from kueuetop.admission.shared_map import DELETE, SharedMap
    v1 = SharedMap.of(s1.workloads)
    v2 = v1.evolve({k: wls.get(k, DELETE) for k in delta.keys})
    shared_prev = replace(s1, workloads=v1)
    shared = replace(s1, workloads=v2, workload_delta=WorkloadDelta(v1, v2, delta.keys))
    assert changed_cluster_queues(shared_prev, shared) == {"a"}
    shared_cache = EngineCache()
    r1s = schedule(shared_prev, NOW, None, shared_cache)
    via_shared = schedule(shared, NOW + 1, r1s.state, shared_cache)
    assert via_shared.decisions == full.decisions and via_shared.state == full.state


def test_queues_with_nothing_queued_are_not_looked_at_for_heads():
    """The index keeps which ClusterQueues have a queued workload; a queue whose last one
    leaves drops out, and one that gets one back returns."""
    s1 = snapshot(*BASE, workload("ns", "w", "lqa", {"cpu": "2"}), workload("ns", "other", "lqb", {"cpu": "2"}))
    cache = EngineCache()
    r1 = schedule(s1, NOW, None, cache)
    assert cache.index.queued_in_order() == ["a", "b"]
    s2 = _with(s1, W, workload("ns", "w", "lqa", {"cpu": "2"}, active=False))
    r2 = schedule(s2, NOW + 1, r1.state, cache)
    assert cache.index.queued_in_order() == ["b"]
    schedule(s1, NOW + 2, r2.state, cache)
    assert cache.index.queued_in_order() == ["a", "b"]


def test_unchanged_queue_state_keeps_its_mappings():
    """A cycle that changes nothing in the queue state hands back the same mappings (the
    simulator's fixpoint check compares states, by identity first); a cycle that changes one
    entry copies only the mapping it changed, never the previous state's."""
    s1 = snapshot(*BASE, workload("ns", "w", "lqa", {"cpu": "2"}), workload("ns", "other", "lqb", {"cpu": "2"}))
    cache = EngineCache()
    r1 = schedule(s1, NOW, None, cache)
    before = r1.state
    parked = {cq: dict(keys) for cq, keys in before.inadmissible.items()}  # the per-queue sets too
    r2 = schedule(s1, NOW, before, cache)  # the same input: the same decisions, nothing to remember anew
    assert r2.state == before
    assert r2.state.inadmissible is before.inadmissible
    assert r2.state.last_assignments is before.last_assignments
    # One workload leaves: its entries go, in new mappings; the old state is left as it was.
    s2 = _with(s1, W, workload("ns", "w", "lqa", {"cpu": "2"}, active=False))
    r3 = schedule(s2, NOW + 1, before, cache)
    assert W not in r3.state.last_assignments and W in before.last_assignments
    assert {cq: dict(keys) for cq, keys in before.inadmissible.items()} == parked
    assert r3.state.last_assignments is not before.last_assignments


def test_parking_adds_to_the_workloads_already_parked_in_a_queue():
    """BestEffortFIFO parks each head that does not fit; a second head of the same ClusterQueue
    parked a cycle later joins the first (the per-queue set is copied, then written)."""
    s1 = snapshot(*BASE, workload("ns", "w", "lqa", {"cpu": "2"}, created=T0 + 1),
                  workload("ns", "other", "lqa", {"cpu": "3"}, created=T0 + 2))
    cache = EngineCache()
    r1 = schedule(s1, NOW, None, cache)
    assert set(r1.state.inadmissible.get("a", {})) == {W}
    r2 = schedule(s1, NOW + 1, r1.state, cache)
    assert set(r2.state.inadmissible["a"]) == {W, OTHER}
    assert set(r1.state.inadmissible["a"]) == {W}  # the earlier state is left as it was


def test_heads_kept_between_cycles_match_heads_found_afresh():
    """§6.1 heads: the answers kept from the last cycle (recomputed only for queues whose
    pending list, parked set or sticky head changed, or whose backoff ended) are the heads a
    fresh index finds, over random sequences of arrivals, departures, backoffs and requeues."""
    import random

    from kueuetop.admission.cq_status import active_map
    from kueuetop.admission.engine_cache import EngineCache
    from kueuetop.admission.queue_order import heads

    rng = random.Random(7)
    cqs = [cluster_queue(f"q{i}", group("cpu", fq("f1", cpu="2")), cohort="c" if i < 3 else "")
           for i in range(5)]
    base = snapshot(namespace("ns"), flavor("f1"), *cqs, *(local_queue("ns", f"l{i}", f"q{i}") for i in range(5)))
    wls: dict = {}  # parsed once: unchanged workloads keep their identity, as in the simulator
    state, now, compared = None, NOW, 0
    cache = EngineCache()
    for step in range(120):
        for _ in range(rng.randint(0, 3)):
            name = f"w{step}-{rng.randint(0, 999)}"
            wl = workload("ns", name, f"l{rng.randrange(5)}", {"cpu": str(rng.randint(1, 3))},
                          priority=rng.choice([0, 10]), created=T0 + rng.randint(0, 50))
            if rng.random() < 0.2:
                wl["status"] = {"requeueState": {"count": 1, "requeueAt": ts(now + rng.randint(1, 6))},
                                "conditions": [condition("Requeued", True, "BackoffFinished")]}
            wls[("ns", name)] = snapshot(wl).workloads[("ns", name)]
        if wls and rng.random() < 0.3:
            del wls[rng.choice(sorted(wls))]
        snap = replace(base, workloads=dict(wls))
        if state is not None and rng.random() < 0.3:
            state = state.requeue_inadmissible([f"q{rng.randrange(5)}"])
        if state is not None:
            kept = heads(snap, state, now, cache.workload_index(snap), active_map(snap, cache), cache)
            fresh = heads(snap, state, now)
            assert [w.key for w in kept] == [w.key for w in fresh], step
            compared += bool(fresh)
        state = schedule(snap, now, state, cache).state
        now += rng.choice([0, 1, 2])
    assert compared > 50  # the sequences did put heads in front of the check


def test_parked_sets_name_the_queues_changed_since_a_recent_mapping():
    """The heads cache asks which queues' parked sets changed since the mapping it saw last:
    the answer covers every change along the way, and a mapping too far back (its link cut so
    old mappings are freed) gets no answer, which makes the caller compare every queue."""
    from kueuetop.admission.queue_state import ParkedSets, QueueState

    start = {f"cq{i}": {("ns", f"w{i}"): 1} for i in range(8)}
    states = [QueueState(inadmissible=start)]
    for i in range(ParkedSets.KEEP + 2):
        states.append(states[-1].requeue_inadmissible([f"cq{i}"]))
    newest = states[-1].inadmissible
    assert newest.changed_since(states[-2].inadmissible) == {f"cq{ParkedSets.KEEP + 1}"}
    assert newest.changed_since(states[-4].inadmissible) == {f"cq{i}" for i in range(ParkedSets.KEEP - 1,
                                                                                      ParkedSets.KEEP + 2)}
    assert newest.changed_since(states[0].inadmissible) is None
    assert newest.changed_since({}) is None
    # The queues it names are exactly those whose sets are other objects.
    old = states[-3].inadmissible
    named = newest.changed_since(old)
    assert named == {k for k in old.keys() | newest.keys() if old.get(k) is not newest.get(k)}
