"""The console's what-if panel without Textual: changes offered from the store, and one what-if run.

A what-if is `kueuetop forecast --with …` on the console's store: the same change syntax
(`admission/forecast_changes`), the same before/after comparison (`forecast_report.eta_moves`,
`move_summary`), the same pools (only when a `nodes` change asks: `forecast_report.pools_from_store`).
The runtimes are those of the console's latest forecast, so the panel's "before" agrees with the
ETA column; that forecast itself is the "before" when the store has not changed since it ran.

Pure apart from reading the store; no clock (the caller passes `now`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.forecast_changes import Change, NodesChange, apply_changes, run_forecast
from kueuetop.admission.forecast_result import Forecast, PoolCapacity, RuntimeEstimate
from kueuetop.admission.pod_placement import GpuPlacement
from kueuetop.admission.runtime_estimate import RunSamples, estimate_runtimes
from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.kueue.core import GPU_RESOURCE, Node
from kueuetop.kueue.node_pool import node_pool
from kueuetop.kueue.quantity import format_resource_value
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload import Workload
from kueuetop.store import Store
from kueuetop.views.forecast_report import (
    POD_NOTE_RUN,
    checks_from_store,
    eta_moves,
    move_summary,
    pools_from_store,
)
from kueuetop.views.safe_text import clean

Key = tuple[str, str]

POD_NOTE_POOLS = "pods placed on the node pools at their current size"


# ---------------------------------------------------------------------------------------- suggestions
@dataclass(frozen=True, slots=True)
class Suggestion:
    spec: str  # the change as typed in the panel (and after `kueuetop forecast --with`)
    note: str  # why it is offered, e.g. "3 pending, 12 nvidia.com/gpu asked"
    cluster_queue: str = ""  # the ClusterQueue it concerns ("" for holds and nodes)


def _plain(name: str) -> bool:
    """A name a spec can carry as it is: printable, no blanks (Kubernetes names always are)."""
    return bool(name) and clean(name) == name and not any(c.isspace() for c in name)


def _waiting(snap: ClusterSnapshot) -> list[Workload]:
    """Pending workloads that more room could let in: unfinished, no quota, not held."""
    return [w for w in snap.workloads.values() if not w.is_finished and not w.has_quota_reservation and w.active]


def _asks(wl: Workload, resource: str) -> int:
    return sum(ps.requests.get(resource, 0) * ps.count for ps in wl.pod_sets)


def _quota_suggestion(cq: ClusterQueue, waiting: Sequence[Workload]) -> Suggestion | None:
    """More of the resource its waiting workloads ask for (GPUs first): as much as the largest asks."""
    covered = [r for g in cq.resource_groups for r in g.covered]
    asked = [r for r in covered if any(_asks(w, r) for w in waiting)]
    if not asked:
        return None
    resource = GPU_RESOURCE if GPU_RESOURCE in asked else asked[0]
    group = cq.group_for(resource)
    if group is None or not group.flavors:
        return None
    target = resource if len(group.flavors) == 1 else f"{group.flavors[0].name}/{resource}"
    if not _plain(target):
        return None
    biggest = max(_asks(w, resource) for w in waiting)
    total = sum(_asks(w, resource) for w in waiting)
    amount = format_resource_value(resource, biggest)
    return Suggestion(f"quota {cq.name} {target}=+{amount}",
                      f"{len(waiting)} pending, {format_resource_value(resource, total)} {resource} asked",
                      cq.name)


def suggestions(snap: ClusterSnapshot, nodes: Iterable[Node], focus_cq: str = "") -> list[Suggestion]:
    """Changes worth trying on this cluster: more quota for each ClusterQueue with pending
    workloads (`focus_cq` first), holding each namespace with pending workloads, more nodes in
    each node pool (enough for the largest GPU request waiting)."""
    waiting = _waiting(snap)
    by_cq: dict[str, list[Workload]] = {}
    by_ns: dict[str, int] = {}
    for w in waiting:
        cq = snap.cluster_queue_of(w)
        if cq:
            by_cq.setdefault(cq, []).append(w)
        by_ns[w.namespace] = by_ns.get(w.namespace, 0) + 1
    quotas = []
    for name, ws in by_cq.items():
        q = snap.cluster_queues.get(name)
        s = _quota_suggestion(q, ws) if q is not None and _plain(name) else None
        if s is not None:
            quotas.append((name != focus_cq, -len(ws), name, s))
    out = [s for *_, s in sorted(quotas, key=lambda t: t[:3])]
    out += [Suggestion(f"hold {ns}/*", f"{n} pending") for ns, n in sorted(by_ns.items(), key=lambda t: (-t[1], t[0]))
            if _plain(ns)]
    pools: dict[str, list[int]] = {}
    for n in nodes:
        pool = node_pool(n)
        if _plain(pool) and n.gpus > 0:
            pools.setdefault(pool, []).append(n.gpus)
    biggest = max((_asks(w, GPU_RESOURCE) for w in waiting), default=0)
    for pool, gpus in sorted(pools.items()):
        per_node = max(gpus)
        more = max(1, math.ceil(biggest / per_node))
        out.append(Suggestion(f"nodes {pool}=+{more}", f"{len(gpus)} nodes of {per_node} GPUs"))
    return out


def focus_index(items: Sequence[Suggestion], cluster_queue: str) -> int | None:
    """The first suggestion about this ClusterQueue, to preselect."""
    return next((i for i, s in enumerate(items) if cluster_queue and s.cluster_queue == cluster_queue), None)


# ---------------------------------------------------------------------------------------- running
Pools = tuple[dict[str, PoolCapacity], dict[Key, tuple[GpuPlacement, ...]]]  # node pools, running pods' GPUs
Latest = tuple[ClusterSnapshot, Forecast, Pools | None]  # a console forecast, its snapshot, the pools it placed pods on


@dataclass(frozen=True)
class WhatIfAnswer:
    specs: tuple[str, ...]
    at: float = 0.0  # the instant both forecasts start from
    moves: list[dict[str, Any]] = field(default_factory=list)  # eta_moves: most sooner first
    summary: dict[str, Any] = field(default_factory=dict)  # move_summary
    keys: Mapping[Key, Key] = field(default_factory=dict)  # (cleaned ns, cleaned name) → the workload's key
    pods: str = POD_NOTE_RUN
    reused: bool = False  # the "before" is the console's latest forecast
    error: str = ""  # one line: why there is no answer

    def key_of(self, move: Mapping[str, Any]) -> Key:
        shown = (move["namespace"], move["name"])
        return self.keys.get(shown, shown)


def _runtimes(snap: ClusterSnapshot, latest: Forecast | None, history: RunSamples | None,
              now: float) -> dict[Key, RuntimeEstimate]:
    """The latest forecast's runtimes (what the ETA column rests on); workloads it did not know
    yet (it ran on an older snapshot) are estimated now, or they would hold quota forever."""
    if latest is None:
        return estimate_runtimes(snap, history, now)
    runtimes = dict(latest.runtimes)
    if any(not w.is_finished and k not in runtimes for k, w in snap.workloads.items()):
        fresh = estimate_runtimes(snap, history, now)
        runtimes.update({k: r for k, r in fresh.items() if k not in runtimes})
    return runtimes


def run_what_if(store: Store, changes: Sequence[Change], now: float, *, history: RunSamples | None = None,
                latest: Latest | None = None, pause: Callable[[], bool | None] | None = None) -> WhatIfAnswer:
    """The store's cluster forecast before and after `changes`. `latest`: the console's latest
    forecast with the snapshot it ran on and the node pools and placements it placed pods on
    (None: it did not); it is the "before" (and its `at` the instant) when that snapshot is
    still the store's. Both forecasts place pods on those pools, as it did; a `nodes` change
    places pods on the pools at their current size when it did not. A change that does not
    apply (an unknown queue, flavor, resource or pool) is a ValueError with a one-line message.
    Meant for a worker thread: the engine gets a cache of its own; `pause` is called between its
    rounds."""
    specs = tuple(c.spec for c in changes)
    snap = store.snapshot()
    pools = latest[2] if latest is not None else None
    model = pools is not None or any(isinstance(c, NodesChange) for c in changes)
    fc = store.forecast()
    fc = fc if isinstance(fc, Forecast) else None
    # The console's forecast placed pods on these pools: the comparison does too, or it would
    # set a forecast with waits for nodes against one without.
    pools, placements = pools if pools is not None else (pools_from_store(store) if model else ({}, {}))
    changed, changed_pools = apply_changes(snap, pools, changes)
    before = None
    if latest is not None and latest[0] is snap and latest[1] is fc and fc.pods_placed == model:
        before, now = fc, fc.at
    runtimes = _runtimes(snap, fc, history, now)
    cache = EngineCache()  # not the forecast worker's: two threads never share one
    checks = checks_from_store(store, snap)
    if before is None:
        before = run_forecast(snap, pools if model else None, runtimes, now, cache, placements, pause, checks=checks)
    after = run_forecast(changed, changed_pools if model else None, runtimes, now, cache, placements, pause,
                         checks=checks)
    keys = sorted(after.workloads)
    moves = eta_moves(before, after, keys)
    shown = {(clean(k[0]), clean(k[1])): k for k in keys}
    note = (fc.pods_note if fc is not None and fc.pods_placed and fc.pods_note else POD_NOTE_POOLS) if model \
        else POD_NOTE_RUN
    return WhatIfAnswer(specs, now, moves, move_summary(moves), shown, note, reused=before is fc)
