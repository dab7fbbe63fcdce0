"""Shared helpers: run a cycle and pick decisions by type."""

from __future__ import annotations

from kueuetop.admission import decisions as d
from kueuetop.admission.cycle import CycleResult, schedule
from kueuetop.admission.queue_state import QueueState
from tests.builders import T0, snapshot

NOW = T0 + 100


def run(*objs: dict, config=None, state: QueueState | None = None, now: float = NOW) -> CycleResult:
    return schedule(snapshot(*objs, config=config), now, state)


def admitted(r: CycleResult) -> dict[str, dict]:
    """name → {resource: flavor} merged over pod sets."""
    out = {}
    for x in r.decisions:
        if isinstance(x, d.Admit):
            out[x.workload[1]] = {res: f for psa in x.assignments for res, f in psa.flavors.items()}
    return out


def admits(r: CycleResult) -> dict[str, d.Admit]:
    return {x.workload[1]: x for x in r.decisions if isinstance(x, d.Admit)}


def pending(r: CycleResult) -> dict[str, d.Pending]:
    return {x.workload[1]: x for x in r.decisions if isinstance(x, d.Pending)}


def preempted(r: CycleResult) -> dict[str, str]:
    """victim name → Preempted reason."""
    return {x.victim[1]: x.reason for x in r.decisions if isinstance(x, d.Preempt)}
