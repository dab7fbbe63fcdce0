"""Every cluster's workloads in one table (the console across contexts, `:wl`): the cluster as a
column, and for a manager Workload where MultiKueue dispatched it and its worker copy's state.

Pure: rows come from `views.clusters.ClusterRead`s (each cluster's snapshot document and raw
Workloads) and the manager's placements. A worker's copy of a manager Workload (it carries
MultiKueue's origin label) is its own row, marked as a copy: Kueue expects actions on the
manager's Workload, never on the copy (MultiKueue would overwrite or remove it), so a copy row
names the manager that actions go to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueuetop.views.ages import age_text
from kueuetop.views.clusters import ClusterRead, Placement, clean, placements
from kueuetop.views.rows import Row, cell

MANAGER, COPY, LOCAL = "manager", "copy", "local"
COLUMNS = ("CLUSTER", "NAMESPACE/NAME", "QUEUE", "STATE", "GPUS", "WAIT", "DISPATCHED TO", "WORKER COPY")
# Capital-letter sorts (k9s style), as in the one-cluster console's workloads view.
SORTS = {"N": "name", "S": "status", "C": "cluster", "A": "age", "G": "gpus"}


@dataclass(frozen=True, slots=True)
class CrossWorkload:
    cluster: str
    namespace: str
    name: str
    queue: str
    state: str
    gpus: int
    wait: float | None
    role: str  # manager (MultiKueue placed it), copy (a worker's copy of one), local
    act_on: str  # the context whose Workload actions go to: the manager's for a copy
    dispatched: str = ""  # manager rows: the worker it runs on; copy rows: ""
    copy: str = ""  # manager rows: the chosen worker's copy state (or each nominated one's)


def _manager_of(ns: str, name: str, by_key: Mapping[tuple[str, str], Placement]) -> str:
    p = by_key.get((ns, name))
    return p.manager if p is not None else ""


def cross_workloads(reads: Sequence[ClusterRead], places: Sequence[Placement] | None = None) -> list[CrossWorkload]:
    """One entry per Workload of every cluster read; a cluster without a document adds none."""
    places = placements(reads) if places is None else places
    by_key = {(p.namespace, p.name): p for p in places}
    managers = {p.manager for p in places} | {r.context for r in reads if r.multikueue_clusters}
    out: list[CrossWorkload] = []
    for r in reads:
        if r.doc is None:
            continue
        ctx = clean(r.context)
        copies = set()
        if ctx not in managers:  # a worker lists only the Workloads with MultiKueue's origin label
            copies = {(clean((w.get("metadata") or {}).get("namespace")), clean((w.get("metadata") or {}).get("name")))
                      for w in r.workloads}
        for w in r.doc.get("workloads") or []:
            ns, name = clean(w.get("namespace")), clean(w.get("name"))
            role, act_on, dispatched, copy = LOCAL, ctx, "", ""
            p = by_key.get((ns, name)) if ctx in managers else None
            if p is not None and p.manager == ctx:
                role, dispatched = MANAGER, p.cluster
                copy = (p.copies.get(p.cluster, "") if p.cluster
                        else "; ".join(f"{c}: {s}" for c, s in p.copies.items() if s != "no copy"))
            elif (ns, name) in copies:
                role, act_on = COPY, _manager_of(ns, name, by_key)
            gpus = w.get("gpus")
            wait = w.get("waitSeconds")
            out.append(CrossWorkload(ctx, ns, name, clean(w.get("queue")), clean(w.get("state")),
                                     int(gpus) if isinstance(gpus, (int, float)) else 0,
                                     float(wait) if isinstance(wait, (int, float)) else None,
                                     role, act_on, dispatched, copy))
    return out


def workload_row(w: CrossWorkload) -> Row:
    """A table row; the key is (cluster, namespace, name)."""
    if w.role == MANAGER:
        dispatched = w.dispatched or "(not yet)"
    elif w.role == COPY:
        dispatched = f"copy of {w.act_on or 'a manager'}"
    else:
        dispatched = "-"
    cells = (cell(w.cluster), cell(f"{w.namespace}/{w.name}"), cell(w.queue or "-"), cell(w.state),
             cell(w.gpus), cell(age_text(w.wait) if w.wait is not None else "-"), cell(dispatched),
             cell(w.copy or "-"))
    return Row((w.cluster, w.namespace, w.name), cells,
               sort={"name": f"{w.namespace}/{w.name}", "status": w.state.lower(), "cluster": w.cluster,
                     "age": w.wait, "gpus": w.gpus, "namespace": w.namespace},
               state=" ".join({w.state.lower(), w.role, "dispatched" if w.dispatched else ""} - {""}))


def workload_rows(items: Sequence[CrossWorkload], *, cluster: str | None = None, text_filter: str = "",
                  sort: str | None = None, reverse: bool = False) -> list[tuple[CrossWorkload, Row]]:
    """Rows shown: those on `cluster` (or dispatched to it) that pass the `/` filter, sorted."""
    from kueuetop.views.filtering import parse_filter, sort_rows

    flt = parse_filter(text_filter) if text_filter.strip() else None
    pairs: dict[Any, tuple[CrossWorkload, Row]] = {}
    for w in items:
        if cluster is not None and cluster not in (w.cluster, w.dispatched):
            continue
        row = workload_row(w)
        if flt is not None and not flt(row):
            continue
        pairs[row.key] = (w, row)
    rows = sort_rows([r for _, r in pairs.values()], sort, reverse)
    return [(pairs[r.key][0], r) for r in rows]


@dataclass(frozen=True, slots=True)
class ActionPlace:
    """Where an action on a workload row goes, or why it cannot go anywhere."""

    context: str
    namespace: str
    name: str
    note: str = ""  # said to the user before the preview (a copy's action goes to its manager)
    refused: str = ""


def action_place(w: CrossWorkload) -> ActionPlace:
    """Kueue expects a MultiKueue workload to be acted on at its manager: a hold (spec.active:
    false) evicts it there, and a manager Workload without quota reservation has its remote
    Workloads deleted (admissionchecks/multikueue/workload.go, wlReconciler.reconcileGroup);
    a change made to a copy would be overwritten, or the copy removed."""
    if w.role != COPY:
        return ActionPlace(w.act_on, w.namespace, w.name)
    if not w.act_on:
        return ActionPlace("", w.namespace, w.name,
                           refused=f"{w.namespace}/{w.name} on {w.cluster} is a MultiKueue copy whose manager "
                                   "is not among the contexts shown: act on it at its manager")
    return ActionPlace(w.act_on, w.namespace, w.name,
                       note=f"{w.namespace}/{w.name} on {w.cluster} is MultiKueue's copy: acting on the manager's "
                            f"Workload (context {w.act_on}), which then updates or removes the copy")
