"""Preview an operator action: what Kueue would admit, evict or preempt because of it.

Actions are applied exactly as the live path sends them (ARCHITECTURE §3, reference/kueue.md
§5.3): JSON merge patches of `spec.active` on a Workload and `spec.stopPolicy` on a
ClusterQueue or LocalQueue. Requeue is deactivate-then-reactivate (resets the backoff); preempt
is deactivate, wait until the quota is released, reactivate (or keep it held). The cluster is
then run to stability with `simulate`, once with the action and once without, and the two
outcomes are compared.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.simulate import Scheduler, SimEvent, SimulationResult, simulate
from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload_state import derive_state

WorkloadKey = tuple[str, str]

HOLD = "hold"  # spec.active=false
RESUME = "resume"  # spec.active=true
REQUEUE = "requeue"  # deactivate, then reactivate (resets backoff)
PREEMPT = "preempt"  # deactivate, quota released, reactivate
PREEMPT_AND_HOLD = "preempt-and-hold"  # deactivate and keep it inactive
CQ_HOLD, CQ_DRAIN, CQ_RESUME = "cq-hold", "cq-drain", "cq-resume"
LQ_HOLD, LQ_DRAIN, LQ_RESUME = "lq-hold", "lq-drain", "lq-resume"

WORKLOAD_VERBS = (HOLD, RESUME, REQUEUE, PREEMPT, PREEMPT_AND_HOLD)
_STOP_POLICY = {CQ_HOLD: "Hold", CQ_DRAIN: "HoldAndDrain", CQ_RESUME: "None",
                LQ_HOLD: "Hold", LQ_DRAIN: "HoldAndDrain", LQ_RESUME: "None"}


@dataclass(frozen=True, slots=True)
class Action:
    """`target` is (namespace, name) for workloads and LocalQueues, the name for a ClusterQueue."""

    verb: str
    target: WorkloadKey | str

    def patches(self) -> list[tuple[str, Any, dict]]:
        """The merge patches, in order, as (kind, key, patch); a None patch means "wait for stability"."""
        if self.verb in (HOLD, PREEMPT_AND_HOLD):
            return [("Workload", self.target, {"spec": {"active": False}})]
        if self.verb == RESUME:
            return [("Workload", self.target, {"spec": {"active": True}})]
        if self.verb in (REQUEUE, PREEMPT):
            return [("Workload", self.target, {"spec": {"active": False}}),
                    ("Workload", self.target, {"spec": {"active": True}})]
        if self.verb in (CQ_HOLD, CQ_DRAIN, CQ_RESUME):
            return [("ClusterQueue", self.target, {"spec": {"stopPolicy": _STOP_POLICY[self.verb]}})]
        if self.verb in (LQ_HOLD, LQ_DRAIN, LQ_RESUME):
            return [("LocalQueue", self.target, {"spec": {"stopPolicy": _STOP_POLICY[self.verb]}})]
        raise ValueError(f"unknown action {self.verb!r}")


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
    action: Action
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


def what_if(objects: Iterable[Mapping], action: Action, now: float, *, config: KueueConfig | None = None,
            state: Any = None, schedule: Scheduler | None = None, max_steps: int = 200,
            cache: EngineCache | None = None) -> WhatIfResult:
    """Apply `action` to the cluster described by `objects` (API dicts) and compare with doing nothing.

    Pure: the input objects are not modified.
    """
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
    for kind, key, patch in action.patches():
        if not apply_patch(current, kind, key, patch):
            raise KeyError(f"{kind} {key} not found")
        outcome = simulate(current, now, state=outcome.state, **kw)
        events += outcome.events
        kueue_events += outcome.kueue_events
        current = list(outcome.objects)
    outcome = dataclasses.replace(outcome, events=tuple(events), kueue_events=tuple(kueue_events))
    admitted, evicted, preempted = _diff(events, outcome, baseline)
    target_state = ""
    if action.verb in WORKLOAD_VERBS:
        wl = outcome.workloads().get(action.target)  # type: ignore[arg-type]
        if wl is not None:
            target_state = derive_state(parse_object(wl), now).phase.value
    return WhatIfResult(action, admitted, evicted, preempted, target_state, outcome, baseline)
