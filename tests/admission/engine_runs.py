"""Random small clusters run for a few scheduling cycles: shared by the EngineCache tests.

A cluster is three ClusterQueues (tests/engine/test_properties strategies), some workloads
(some admitted, so heads preempt) and a model that applies each cycle's decisions: an admitted
workload holds its flavors, a preempted one comes back pending. Workloads are parsed once and
keep their identity while unchanged, as in the simulator, so the cache's incremental paths
(index patches, the kept quota tree, head scans, candidate lists) are the ones exercised.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from kueuetop.admission import decisions as d
from kueuetop.admission.cycle import schedule
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.queue_state import QueueState, changed_cluster_queues
from kueuetop.kueue.config import FairSharing, KueueConfig
from kueuetop.kueue.snapshot import ClusterSnapshot
from tests.admission.test_properties import TOL, build, cq_spec
from tests.builders import T0, admit, snapshot, workload

wl_spec = st.fixed_dictionaries({
    "cq": st.integers(0, 2), "cpu": st.integers(1, 4), "priority": st.integers(0, 4),
    "tolerates": st.booleans(), "admitted": st.booleans(), "spot": st.booleans(),
})
cluster_spec = st.fixed_dictionaries({
    "cqs": st.lists(cq_spec, min_size=3, max_size=3), "cohorted": st.booleans(), "fair": st.booleans(),
    "wls": st.lists(wl_spec, min_size=2, max_size=12),
})


@dataclass(frozen=True)
class CycleOutcome:
    """What one cycle decided, as compared between runs."""

    decisions: tuple[d.Decision, ...]
    state: QueueState


def _pending_again(victim_obj: dict, victim_wl) -> dict:
    return workload("ns", victim_wl.name, victim_wl.queue_name,
                    {"cpu": str(victim_wl.pod_sets[0].requests["cpu"] // 1000)},
                    priority=victim_wl.priority, created=victim_wl.meta.creation,
                    tolerations=TOL if victim_wl.pod_sets[0].shape.tolerations else None)


class ClusterRun:
    """One random cluster driven cycle by cycle with one EngineCache (a scheduler)."""

    def __init__(self, spec: dict, cache: EngineCache) -> None:
        self.config = KueueConfig(fair_sharing=FairSharing()) if spec["fair"] else KueueConfig()
        self.base_objects = build(spec["cqs"], spec["cohorted"])
        self.base = snapshot(*self.base_objects, config=self.config)
        self.model: dict[str, dict] = {}
        for i, w in enumerate(spec["wls"]):
            obj = workload("ns", f"w{i}", f"lq{w['cq']}", {"cpu": str(w["cpu"])}, priority=w["priority"],
                           created=T0 + i, tolerations=TOL if w["tolerates"] else None)
            if w["admitted"]:
                obj = admit(obj, f"cq{w['cq']}",
                            {"cpu": "spot" if w["spot"] and w["tolerates"] else "on-demand"})
            self.model[f"w{i}"] = obj
        self.parsed = {name: snapshot(obj).workloads[("ns", name)] for name, obj in self.model.items()}
        self.cache = cache
        self.state: QueueState | None = None
        self.prev: ClusterSnapshot | None = None
        self.cycle = 0
        self.snapshots: list[ClusterSnapshot] = []  # the snapshot each cycle scheduled

    def objects(self) -> list[dict]:
        """The cluster as API objects (what a preview simulates)."""
        return [*self.base_objects, *self.model.values()]

    def snapshot(self) -> ClusterSnapshot:
        return replace(self.base, workloads={wl.key: wl for wl in self.parsed.values()})

    def step(self) -> CycleOutcome:
        snap = self.snapshot()
        self.snapshots.append(snap)
        if self.state is not None and self.prev is not None:
            self.state = self.state.requeue_inadmissible(changed_cluster_queues(self.prev, snap, self.cache))
        r = schedule(snap, T0 + 100 + self.cycle, self.state, self.cache)
        self.state, self.prev, self.cycle = r.state, snap, self.cycle + 1
        for x in r.decisions:
            if isinstance(x, d.Preempt):
                name = x.victim[1]
                self._set(name, _pending_again(self.model[name], snap.workloads[x.victim]))
            elif isinstance(x, d.Admit):
                name = x.workload[1]
                self._set(name, admit(self.model[name], x.cluster_queue, dict(x.assignments[0].flavors),
                                      counts={"main": x.assignments[0].count}))
        return CycleOutcome(r.decisions, r.state)

    def _set(self, name: str, obj: dict) -> None:
        self.model[name] = obj
        self.parsed[name] = snapshot(obj).workloads[("ns", name)]


def run_alone(spec: dict, cycles: int, cache: EngineCache | None = None) -> list[CycleOutcome]:
    run = ClusterRun(spec, cache if cache is not None else EngineCache())
    return [run.step() for _ in range(cycles)]


def replay(snapshots: list[ClusterSnapshot], cache: EngineCache) -> list[CycleOutcome]:
    """Schedule recorded snapshots again, in order, with `cache` (read-only snapshots)."""
    state: QueueState | None = None
    prev: ClusterSnapshot | None = None
    out = []
    for i, snap in enumerate(snapshots):
        if state is not None and prev is not None:
            state = state.requeue_inadmissible(changed_cluster_queues(prev, snap, cache))
        r = schedule(snap, T0 + 100 + i, state, cache)
        state, prev = r.state, snap
        out.append(CycleOutcome(r.decisions, r.state))
    return out
