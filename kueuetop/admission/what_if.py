"""Preview an operator action: what Kueue would admit, evict or preempt because of it.

Actions are the live path's (`kueue.actions.plan`, ARCHITECTURE §3, reference/kueue.md §5.3):
JSON merge patches of `spec.active` on a Workload and `spec.stopPolicy` on a ClusterQueue or
LocalQueue, with waits between them. Each patch is applied and the cluster run to stability
with `simulate` (which is what every wait waits for), once with the action and once without,
and the two outcomes are compared.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.kueue_loop import Scheduler
from kueuetop.admission.simulate import SimEvent, SimulationResult, simulate
from kueuetop.kueue.actions import CLUSTER_QUEUE, LOCAL_QUEUE, WORKLOAD, Patch, Target, plan
from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload_state import derive_state

WorkloadKey = tuple[str, str]

_KINDS = MappingProxyType({WORKLOAD: "Workload", CLUSTER_QUEUE: "ClusterQueue", LOCAL_QUEUE: "LocalQueue"})


def _key(target: Target) -> WorkloadKey | str:
    return target.name if target.kind == CLUSTER_QUEUE else (target.namespace, target.name)


@dataclass(frozen=True, slots=True)
class Change:
    workload: WorkloadKey
    kind: str  # admitted | evicted | preempted | deactivated
    reason: str = ""
    message: str = ""
    cluster_queue: str = ""
    by: WorkloadKey | None = None
    readmitted: bool = False  # evicted/preempted, then admitted again within the preview


@dataclass(frozen=True)
class WhatIfResult:
    action: str  # a kueue.actions action name
    target: Target
    admitted: tuple[Change, ...]  # admitted with the action, not without it
    evicted: tuple[Change, ...]  # evicted (any reason but preemption) with the action, not without it
    preempted: tuple[Change, ...]  # preempted with the action, not without it
    target_state: str  # the target workload's state afterwards ("" for queue actions)
    outcome: SimulationResult
    baseline: SimulationResult

    def lines(self) -> list[str]:
        """A human summary, one line per change."""
        out = []
        for c in self.admitted:
            out.append(f"admit {c.workload[0]}/{c.workload[1]} in {c.cluster_queue}")
        for c in self.preempted:
            by = f" by {c.by[0]}/{c.by[1]}" if c.by else ""
            out.append(f"preempt {c.workload[0]}/{c.workload[1]} ({c.reason}){by}"
                       + (" then readmit" if c.readmitted else ""))
        for c in self.evicted:
            out.append(f"evict {c.workload[0]}/{c.workload[1]} ({c.reason})" + (" then readmit" if c.readmitted else ""))
        return out or ["no admission changes"]


def _merge(target: dict, patch: Mapping) -> None:
    """RFC 7386 JSON merge patch."""
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, Mapping) and isinstance(target.get(k), dict):
            _merge(target[k], v)
        else:
            target[k] = copy.deepcopy(v)


def _matches(obj: Mapping, kind: str, key: Any) -> bool:
    if obj.get("kind") != kind:
        return False
    meta = obj.get("metadata") or {}
    if isinstance(key, tuple):
        return (meta.get("namespace", ""), meta.get("name", "")) == key
    return meta.get("name") == key


def apply_patch(objects: list[dict], kind: str, key: Any, patch: Mapping) -> bool:
    """Merge-patch the matching object in place (bumping generation on spec changes); False if absent."""
    for i, o in enumerate(objects):
        if _matches(o, kind, key):
            new = copy.deepcopy(o)
            _merge(new, patch)
            if new.get("spec") != o.get("spec"):
                meta = new.setdefault("metadata", {})
                meta["generation"] = int(meta.get("generation") or 0) + 1
            objects[i] = new
            return True
    return False


def _admitted(result: SimulationResult) -> dict[WorkloadKey, str]:
    """Workloads holding quota at the end → their ClusterQueue."""
    out = {}
    for key, o in result.workloads().items():
        st = (o.get("status") or {})
        conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
        if conds.get("QuotaReserved") == "True" and conds.get("Finished") != "True":
            out[key] = (st.get("admission") or {}).get("clusterQueue", "")
    return out


def _diff(events: Iterable[SimEvent], outcome: SimulationResult, baseline: SimulationResult
          ) -> tuple[tuple[Change, ...], tuple[Change, ...], tuple[Change, ...]]:
    """Changes caused by the action: the baseline is already stable, so every eviction after the
    patch is a consequence of it; admissions compare who holds quota at the end."""
    before, after = _admitted(baseline), _admitted(outcome)
    admitted = tuple(Change(k, "admitted", cluster_queue=cq) for k, cq in sorted(after.items()) if k not in before)
    evicted: list[Change] = []
    preempted: list[Change] = []
    done: set[tuple] = set()
    for e in events:
        sig = (e.kind, e.workload, e.reason)
        if e.kind not in ("evicted", "preempted") or sig in done:
            continue
        done.add(sig)
        change = Change(e.workload, e.kind, e.reason, e.message, e.cluster_queue, e.by, e.workload in after)
        (preempted if e.kind == "preempted" else evicted).append(change)
    # Quota lost without an eviction of its own (a reservation released by Hold).
    for k, cq in sorted(before.items()):
        if k not in after and not any(c.workload == k for c in evicted + preempted):
            evicted.append(Change(k, "evicted", "QuotaReleased", cluster_queue=cq))
    return admitted, tuple(evicted), tuple(preempted)


def what_if(objects: Iterable[Mapping], action: str, target: Target, now: float, *,
            config: KueueConfig | None = None,
            state: Any = None, schedule: Scheduler | None = None, max_steps: int = 200,
            cache: EngineCache | None = None) -> WhatIfResult:
    """Apply `action` (a kueue.actions name) on `target` to the cluster described by `objects`
    (API dicts) and compare with doing nothing. ValueError for an action the target can't take.

    Pure: the input objects are not modified.
    """
    steps = plan(action, target)
    if isinstance(objects, ClusterSnapshot):
        raise TypeError("what_if needs the API objects (dicts) the snapshot was parsed from")
    base_objects = [copy.deepcopy(dict(o)) for o in objects]
    # One cache for the baseline and every step after it: each follows the one before.
    kw: dict[str, Any] = {"config": config, "schedule": schedule, "max_steps": max_steps,
                          "cache": cache if cache is not None else EngineCache()}
    baseline = simulate(base_objects, now, state=state, **kw)
    current = list(baseline.objects)
    outcome = baseline
    events: list[SimEvent] = []
    kueue_events: list[dict] = []
    kind, key = _KINDS[target.kind], _key(target)
    for step in steps:
        if not isinstance(step, Patch):
            continue  # a wait: each patch below is followed by a run to stability
        if not apply_patch(current, kind, key, step.body):
            raise KeyError(f"{kind} {key} not found")
        outcome = simulate(current, now, state=outcome.state, **kw)
        events += outcome.events
        kueue_events += outcome.kueue_events
        current = list(outcome.objects)
    outcome = dataclasses.replace(outcome, events=tuple(events), kueue_events=tuple(kueue_events))
    admitted, evicted, preempted = _diff(events, outcome, baseline)
    target_state = ""
    if target.kind == WORKLOAD:
        wl = outcome.workloads().get(key)  # type: ignore[arg-type]
        if wl is not None:
            target_state = derive_state(parse_object(wl), now).phase.value
    return WhatIfResult(action, target, admitted, evicted, preempted, target_state, outcome, baseline)
