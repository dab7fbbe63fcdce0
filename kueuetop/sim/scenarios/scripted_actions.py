"""kueuetop actions scheduled in a scenario (`kind: Action`), run against the simulated API.

They follow `kueue.actions` step by step — the same patches the console sends to a real cluster —
so a scripted what-if run shows exactly what the keyboard action would do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kueuetop.kueue.actions import (
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    WORKLOAD,
    Patch,
    Step,
    Target,
    WaitFor,
    plan,
    wait_satisfied,
)
from kueuetop.sim.apiserver.patch import merge_patch
from kueuetop.sim.scenarios.scenario import ACTIONS, ScenarioAction, ScenarioStep
from kueuetop.sim.storage.objectstore import ObjectStore, StoreError, WatchEvent

_log = logging.getLogger(__name__)
KUEUE = "kueue.x-k8s.io"
_PLURAL = {WORKLOAD: "workloads", CLUSTER_QUEUE: "clusterqueues", LOCAL_QUEUE: "localqueues"}


@dataclass
class _Running:
    action: str
    target: Target
    steps: list[Step]
    started: float
    origin: str
    log: list[str] = field(default_factory=list)


class ScriptedActions:
    name = "scripted-actions"

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.running: list[_Running] = []
        self.done: list[tuple[float, str, str, str]] = []  # (time, action, target, outcome)
        self.errors: list[str] = []

    # SimCluster step hook: returns True when it handled the step.
    def handle_step(self, step: ScenarioStep, now: float) -> bool:
        if step.kind != "action" or step.action is None or step.action.action not in ACTIONS:
            return False  # node faults are sim.kube.node_faults' to play
        a = step.action
        try:
            target = self._resolve(a)
            self.running.append(_Running(a.action, target, list(plan(a.action, target)), now, step.origin))
        except (ValueError, StoreError) as exc:
            self.errors.append(f"{step.origin}: {a.action} {a.target}: {exc}")
            self.done.append((now, a.action, a.target, f"failed: {exc}"))
        return True

    def _resolve(self, a: ScenarioAction) -> Target:
        if a.target_kind == "clusterqueue":
            return Target(CLUSTER_QUEUE, a.name)
        if a.target_kind == "localqueue":
            return Target(LOCAL_QUEUE, a.name, a.namespace or "")
        if a.target_kind == "workload":
            return Target(WORKLOAD, a.name, a.namespace or "")
        # job/NS/NAME or pod/NS/NAME: the Workload that object owns.
        kind = {"job": "Job", "pod": "Pod"}.get(a.target_kind, a.target_kind)
        items, _ = self.store.list(KUEUE, "workloads", a.namespace, copy=False)
        for wl in items:
            for ref in (wl.get("metadata") or {}).get("ownerReferences") or []:
                if ref.get("kind") == kind and ref.get("name") == a.name:
                    return Target(WORKLOAD, wl["metadata"]["name"], a.namespace or "")
        raise ValueError(f"no Workload for {a.target_kind} {a.namespace}/{a.name}")

    def on_event(self, ev: WatchEvent) -> None:
        pass

    def _get(self, t: Target) -> dict | None:
        return self.store.try_get(KUEUE, _PLURAL[t.kind], t.namespace or None, t.name, copy=False)

    def reconcile(self, now: float) -> bool:
        wrote = False
        for run in list(self.running):
            while run.steps:
                step = run.steps[0]
                if isinstance(step, Patch):
                    body = step.body
                    try:
                        self.store.patch(KUEUE, _PLURAL[run.target.kind], run.target.namespace or None,
                                         run.target.name, lambda cur, b=body: merge_patch(cur, b))
                        wrote = True
                    except StoreError as exc:
                        self._finish(run, now, f"failed: {exc.message}")
                        break
                    run.steps.pop(0)
                elif isinstance(step, WaitFor):
                    if not wait_satisfied(step.condition, self._get(run.target)):
                        if now - run.started > step.timeout_seconds:
                            self._finish(run, now, f"timed out waiting for {step.condition}")
                        break
                    run.steps.pop(0)
            else:
                self._finish(run, now, "done")
        return wrote

    def _finish(self, run: _Running, now: float, outcome: str) -> None:
        self.running.remove(run)
        self.done.append((now, run.action, str(run.target), outcome))
        if outcome != "done":
            self.errors.append(f"{run.origin}: {run.action} {run.target}: {outcome}")

    def next_wakeup(self, now: float) -> float | None:
        # Waits end on store changes, which wake the loop; the timeout needs a timer.
        times = [r.started + s.timeout_seconds for r in self.running for s in r.steps[:1] if isinstance(s, WaitFor)]
        return min(times) if times else None
