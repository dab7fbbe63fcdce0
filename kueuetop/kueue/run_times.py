"""When a workload's current run began: its admission, and its pods' start.

The runtime history (store/run_history.py) measures finished runs with these, and the runtime
estimates (admission/runtime_estimate.py) how long running workloads have run, by the same rules.
"""

from __future__ import annotations

from kueuetop.kueue.workload import Workload


def admitted_at(wl: Workload) -> float | None:
    """When the current admission began: the Admitted transition while True, else QuotaReserved's
    (a ClusterQueue without admission checks admits at once)."""
    for type_ in ("Admitted", "QuotaReserved"):
        c = wl.condition(type_)
        if c is not None and c.is_true and c.last_transition is not None:
            return c.last_transition
    return None


def pods_ready_at(wl: Workload, since: float, until: float | None = None) -> float | None:
    """When the pods of its current admission were all ready: the PodsReady=True transition, if it
    falls within [since, until] (Kueue: pkg/controller/jobframework/reconciler.go
    generatePodsReadyCondition; it stays True once reached while the workload is admitted)."""
    c = wl.condition("PodsReady")
    if c is None or not c.is_true or c.last_transition is None or c.last_transition < since:
        return None
    if until is not None and c.last_transition > until:
        return None
    return c.last_transition
