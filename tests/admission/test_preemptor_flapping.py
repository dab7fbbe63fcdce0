"""Preemptor flapping across a cohort (the `large` scenario's livelock, reduced to 3 workloads).

CQs a and b share cohort co (4 cpu nominal each; reclaimWithinCohort=Any,
withinClusterQueue=LowerPriority). V (priority 100, in a) runs borrowing 2 cpu from b;
F (priority 0, in b) fits in b's nominal and reclaims from V; T (priority 100, in b, created
after V) needs 6 cpu, so it borrows, and preempts F inside b.

Without Kueue's PrioritizePreemptorWorkloads gate the sequence repeats for ever (Kueue#13662):
when F's eviction completes, V (requeued, older than T, same borrowing level and priority)
is processed before T in the cycle and takes the quota back; T then has no candidates and is
parked, F becomes the head of b and reclaims from V again. With the gate (Kueue#13797) the
workload that waits for its preemptions is processed first in the cycle and is admitted.
"""

from __future__ import annotations

import pytest

from kueuetop.admission import decisions as d
from kueuetop.admission.cycle import schedule
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.queue_state import QueueState, changed_cluster_queues
from kueuetop.kueue.config import parse_kueue_config
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
    workload,
)

GATE = "PrioritizePreemptorWorkloads"


def _setup() -> dict[str, dict]:
    pre = {"cohort": "co", "reclaim": "Any", "within": "LowerPriority",
           "borrow_within": "LowerPriority", "max_priority_threshold": 100}
    return {
        "ns": namespace("ns"), "f": flavor("f"),
        "a": cluster_queue("a", group("cpu", fq("f", cpu="4")), **pre),
        "b": cluster_queue("b", group("cpu", fq("f", cpu="4")), **pre),
        "lqa": local_queue("ns", "lqa", "a"), "lqb": local_queue("ns", "lqb", "b"),
        "V": admit(workload("ns", "V", "lqa", {"cpu": "6"}, priority=100, created=T0), "a", {"cpu": "f"}),
        "F": workload("ns", "F", "lqb", {"cpu": "4"}, priority=0, created=T0 + 1),
        "T": workload("ns", "T", "lqb", {"cpu": "6"}, priority=100, created=T0 + 2),
    }


def _evicted(wl: dict, at: float) -> dict:
    """The eviction has completed: quota released, Evicted/Preempted kept, requeued."""
    return {**wl, "status": {"conditions": [
        condition("QuotaReserved", False, "Pending", "", at),
        condition("Evicted", True, "Preempted", "preempted", at),
        condition("Preempted", True, "InCohortReclamation", "preempted", at),
        condition("Requeued", True, "Preempted", "", at)]}}


def drive(config, cycles: int) -> list[tuple]:
    """Run cycles at one instant, applying each cycle's decisions as Kueue writes them (an
    eviction completes before the next cycle, requeueing the cohort's inadmissible workloads);
    returns (admitted, preempted (victim, preemptor, reason)) per cycle."""
    objs = _setup()
    state = QueueState()
    cache = EngineCache()
    now = T0 + 100
    prev = None
    log = []
    for _ in range(cycles):
        snap = snapshot(*objs.values(), config=config)
        if prev is not None:
            state = state.requeue_inadmissible(changed_cluster_queues(prev, snap, cache))
        r = schedule(snap, now, state, cache)
        state, prev = r.state, snap
        log.append((tuple(sorted(x.workload[1] for x in r.decisions if isinstance(x, d.Admit))),
                    tuple(sorted((x.victim[1], x.preemptor[1], x.reason) for x in r.decisions
                                 if isinstance(x, d.Preempt)))))
        for x in r.decisions:
            if isinstance(x, d.Admit):
                objs[x.workload[1]] = admit(objs[x.workload[1]], x.cluster_queue, {"cpu": "f"}, at=now)
            elif isinstance(x, d.Preempt):
                objs[x.victim[1]] = _evicted(objs[x.victim[1]], now)
    return log


# One round of the loop, as Kueue (default gates) decides it at a single instant.
ROUND = [
    ((), (("V", "F", "InCohortReclamation"),)),  # F (head of b, T parked) reclaims b's nominal from V
    (("F",), ()),                                # V's release: F, the sticky head, fits within nominal
    ((), (("F", "T", "InClusterQueue"),)),       # T (requeued by the release) preempts F in b, borrowing
    (("V",), ()),                                # F's release: V sorts before T (older) and takes it back
    ((), ()),                                    # T: its only candidate V can't be evicted while T borrows
]


# Classical admission order and the fair-sharing tournament (fair_sharing_iterator.go) alike.
MODES = pytest.mark.parametrize("base", [{}, {"fairSharing": {}}], ids=["classical", "fair-sharing"])


@MODES
def test_default_gates_flap_for_ever_like_kueue(base):
    """Kueue#13662: with PrioritizePreemptorWorkloads off (Kueue's default) the same five cycles
    repeat; nothing ever changes but the evictions."""
    log = drive(parse_kueue_config(base), 16)
    assert log[0] == ((), ())  # T is the head of b first: no candidates, parked
    assert log[1:6] == ROUND and log[6:11] == ROUND and log[11:16] == ROUND


@MODES
def test_prioritized_preemptor_is_admitted_and_cycles_converge(base):
    """Kueue#13797 (gate PrioritizePreemptorWorkloads): T, waiting for F's eviction, is processed
    before the requeued V in the next cycle and admitted; V stays pending (it would have to
    borrow, and its equal-priority candidate T can't be evicted while borrowing); F can reclaim
    nothing (b is the borrowing queue now). No further decision: the cycles have converged."""
    log = drive(parse_kueue_config({**base, "featureGates": {GATE: True}}), 12)
    assert log[:5] == [
        ((), ()),
        ((), (("V", "F", "InCohortReclamation"),)),
        (("F",), ()),
        ((), (("F", "T", "InClusterQueue"),)),
        (("T",), ()),
    ]
    assert all(entry == ((), ()) for entry in log[5:])


def test_prioritized_preemptor_keeps_reserving_without_candidates():
    """scheduler.go reserveCapacityForUnreclaimablePreempt: with the gate, a preemptor that finds
    no targets this cycle still holds capacity even in a CQ that can always reclaim
    (reclaimWithinCohort=Any), so a lower-priority head elsewhere can't take it meanwhile."""
    objs = _setup()
    del objs["F"]
    objs["W"] = workload("ns", "W", "lqa", {"cpu": "2"}, priority=0, created=T0 + 3)
    # T issued preemptions in an earlier cycle, at its current generation.
    gen = objs["T"]["metadata"]["generation"]
    sticky = QueueState(sticky={"b": ("ns", "T")}, preemptors={"b": (("ns", "T"), gen)})

    def decide(gates):
        r = schedule(snapshot(*objs.values(), config=parse_kueue_config({"featureGates": gates})),
                     T0 + 100, sticky)
        return sorted((type(x).__name__, x.workload[1]) for x in r.decisions if not isinstance(x, d.Preempt))

    assert decide({}) == [("Admit", "W"), ("Pending", "T")]
    assert decide({GATE: True}) == [("Pending", "T"), ("Pending", "W")]
