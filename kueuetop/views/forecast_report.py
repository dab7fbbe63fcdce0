"""`kueuetop forecast`: a forecast as a JSON document and as text, and what a what-if moved. No Textual.

ETAs are worded by `views/eta_text` (the console's columns use the same cells). Every string from
the cluster goes through `safe_text.clean`.

JSON document (`-o json`), stable: keys are never renamed or removed within a `schema` version,
new keys may be added; absent values are `null`. Times are given twice: RFC 3339 UTC, and as
seconds from the forecast's `at` (`…InSeconds`, ≥ 0).

    schema        1
    at            RFC 3339: the instant forecast from (the cluster's now, or the scenario's --at)
    horizon       RFC 3339: how far the forecast ran at most
    complete      false when the horizon or the step limit ended it with workloads still waiting
    source        {kind: "cluster", server, context} | {kind: "scenario", name, atSeconds} |
                  {kind: "recording", name, at, server, context} (`forecast --replay FILE --at WHEN`)
    assumptions   [text]
    workloads     [{namespace, name, queue, clusterQueue, position, localPosition,
                    eta: {text, start, startInSeconds, earliest, earliestInSeconds, latest,
                          latestInSeconds},
                    podsStart, podsStartInSeconds,
                    never, flavors: [{podSet, flavors: {resource: flavor}}],
                    after: ["ns/name"], preempts: ["ns/name"], basis,
                    runtime: {expectedSeconds, optimisticSeconds, pessimisticSeconds, basis},
                    waitsForChecks: [name] | null}]
                  the pending workloads (with --with: as forecast after the changes), sorted by
                  expected start (those without one last), then namespace and name;
                  position / localPosition 1-based, null when not queued; eta.text is the
                  console's ETA cell ("~14m (9m–22m)", "now", "never", "beyond");
                  podsStart: when its pods run, later than its start when they wait for nodes
                  (null unless the pods were placed on the node pools: `source.pods`);
                  never: why the engine never admits it (null when it starts or is beyond the
                  horizon); after: the workloads whose finish or eviction lets it in; basis: the
                  runtime estimates that ETA rests on; runtime: its own estimate;
                  waitsForChecks: a workload already holding quota whose ProvisioningRequest
                  checks wait (answered with the node pools: they pass when its pods find
                  nodes, and its eta is its admission)
    shown         how many workloads are listed; omitted: how many --at-most left out
    namespace     the namespace asked about (-n), null for all
    awaitingChecks [{namespace, name, clusterQueue, reservedAt, reservedForSeconds,
                    checks: [{name, state, message}]}]
                  workloads holding quota whose admission checks have not all passed and that
                  `workloads` does not list (a check other than a ProvisioningRequest, or node
                  pools not modelled): when those pass is not forecast, so they get no ETA; each
                  check's state and message as Kueue wrote them
    whatIf        null, or {changes: [spec], moved: [{namespace, name, clusterQueue,
                    before: eta, after: eta, change, deltaSeconds}],
                    summary: {sooner, soonerMedianSeconds, later, laterMedianSeconds,
                              nowStart, noLongerStart, text}}
                  moved: every workload whose expected start moved by 5 s or more, sorted by deltaSeconds
                  (most sooner first), at most --at-most of them (movedOmitted: how many more; the
                  summary counts them all); change: sooner | later | starts (had no start before) |
                  noLongerStarts; deltaSeconds: after − before (null unless both start)
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kueuetop.admission.check_timing import CHECKS_ASSUMED, NodeCheck, node_checks, waiting_checks
from kueuetop.admission.forecast_result import Forecast, PoolCapacity, WorkloadForecast
from kueuetop.admission.pod_placement import GpuPlacement, placements_from_cluster, pools_from_cluster
from kueuetop.kueue.autoscaler_status import NodeGroupStatus, pool_limits
from kueuetop.kueue.core import Node, Pod
from kueuetop.kueue.node_pool import queued_pool
from kueuetop.kueue.pool_growth import AUTOSCALER, FIXED, AutoscalerRead, PoolGrowth, pool_growth
from kueuetop.kueue.provisioning import ProvisioningRequestConfig
from kueuetop.kueue.run_times import admitted_at
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload import Workload
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.store.known_pools import KnownPools
from kueuetop.views.ages import age_text
from kueuetop.views.eta_text import NOW_WITHIN, eta_basis, eta_cell, eta_range
from kueuetop.views.safe_text import clean

# The snapshot command's table layout and engine queue order, shared rather than copied.
from kueuetop.views.snapshot import _engine_positions, _table

SCHEMA = 1
MOVED_WITHIN = NOW_WITHIN  # seconds: a start that moved less did not move (one scheduling instant)

Key = tuple[str, str]
PositionOf = Callable[[Key], tuple[int, int] | None]


def rfc3339(t: float | None) -> str | None:
    return None if t is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _name(key: Key) -> str:
    return clean(f"{key[0]}/{key[1]}")


def eta_doc(wf: WorkloadForecast, now: float, complete: bool = True) -> dict[str, Any]:
    r = eta_range(wf, now)
    lo, exp, hi = r if r is not None else (None, None, None)

    def at(seconds: float | None) -> str | None:
        return None if seconds is None else rfc3339(now + seconds)

    return {"text": eta_cell(wf, now, complete=complete), "start": at(exp), "startInSeconds": exp,
            "earliest": at(lo), "earliestInSeconds": lo, "latest": at(hi), "latestInSeconds": hi}


def _pods_start(wf: WorkloadForecast, fc: Forecast) -> dict[str, Any]:
    placed = wf.pods_start if fc.pods_placed and wf.start is not None else None
    return {"podsStart": rfc3339(placed),
            "podsStartInSeconds": None if placed is None else max(0.0, placed - fc.at)}


def _start_order(wf: WorkloadForecast) -> tuple[bool, float]:
    return (wf.start is None, wf.start or 0.0)


def workload_rows(snap: ClusterSnapshot, fc: Forecast, keys: Iterable[Key],
                  position_of: PositionOf | None = None) -> list[dict[str, Any]]:
    """One row per key the forecast answers for (see the module docstring)."""
    engine: dict[Key, tuple[int, int]] | None = None

    def position(key: Key) -> tuple[int, int] | None:
        nonlocal engine
        got = position_of(key) if position_of is not None else None
        if got is None:
            if engine is None:
                engine = _engine_positions(snap)  # built once, and only when Kueue did not answer
            got = engine.get(key)
        return got

    found = sorted((fc.workloads[k] for k in keys if k in fc.workloads), key=lambda w: (_start_order(w), w.key))
    rows = []
    for wf in found:
        wl = snap.workloads.get(wf.key)
        pos = position(wf.key)
        est = fc.runtimes.get(wf.key)
        rows.append({
            "namespace": clean(wf.key[0]), "name": clean(wf.key[1]),
            "queue": clean(wl.queue_name) if wl is not None else None,
            "clusterQueue": clean(wf.cluster_queue) or None,
            "position": pos[0] + 1 if pos is not None else None,
            "localPosition": pos[1] + 1 if pos is not None and pos[1] >= 0 else None,
            "eta": eta_doc(wf, fc.at, fc.complete),
            **_pods_start(wf, fc),
            "never": clean(wf.never) if wf.start is None and wf.never else None,
            "flavors": [{"podSet": clean(p.name), "flavors": {clean(r): clean(f) for r, f in p.flavors.items()}}
                        for p in wf.flavors],
            "after": [_name(k) for k in wf.after], "preempts": [_name(k) for k in wf.preempts],
            "basis": clean(eta_basis(wf, fc)) or None,
            "runtime": None if est is None else {
                "expectedSeconds": est.expected, "optimisticSeconds": est.optimistic,
                "pessimisticSeconds": est.pessimistic, "basis": clean(est.basis)},
            "waitsForChecks": [clean(n) for n in waiting_checks(wl)] if wl is not None and awaits_checks(wl) else None,
        })
    return rows


# ---------------------------------------------------------------------------------------- pools
# A new node's time from a scale-up to Ready, which cluster-autoscaler's status does not say.
NODE_DELAY_ASSUMED = 120.0
POD_NOTE_RUN = "pods run when admitted (node pools not modelled)"
POD_NOTE_AUTOSCALER = ("pods placed on the node pools (cluster-autoscaler's limits; a new node taken to be Ready "
                       f"{NODE_DELAY_ASSUMED:.0f}s after a scale-up)")


FIXED_NOTE = "at their current size (no cluster-autoscaler status, no Karpenter node: taken as fixed)"
POD_NOTE_FIXED = f"pods placed on the node pools {FIXED_NOTE}"


def pods_not_modelled(why: str) -> str:
    """POD_NOTE_RUN with the reason the pools are not modelled, when there is one."""
    return f"pods run when admitted (node pools not modelled: {why})" if why else POD_NOTE_RUN


def pods_note(growth: PoolGrowth) -> str:
    """What a forecast on these pools says of pods (beside its age in the console)."""
    if growth.basis == AUTOSCALER:
        return POD_NOTE_AUTOSCALER
    if growth.basis == FIXED:
        return POD_NOTE_FIXED
    return pods_not_modelled(growth.why)


def store_pool_growth(store: Store, read: AutoscalerRead) -> PoolGrowth:
    """`pool_growth` of a read of the autoscaler's status and the store's Nodes."""
    return pool_growth(read, (n for n in store.objects(K.NODES).values() if isinstance(n, Node)))


def pools_from_store(store: Store, groups: Iterable[NodeGroupStatus] | None = None, now: float | None = None,
                     delay: float = NODE_DELAY_ASSUMED, known: KnownPools | None = None,
                     ) -> tuple[dict[str, PoolCapacity], dict[Key, tuple[GpuPlacement, ...]]]:
    """The node pools of the store's cluster and the GPUs running workloads hold on them.
    `kueuetop forecast` and the console's what-if panel both start from these.

    Without `groups` each pool is at its current size (Nodes do not say how far an autoscaler may
    grow it). With cluster-autoscaler's node groups (`sources.autoscaler_status`), a pool they
    cover may grow to their summed maxSize, a new node Ready `delay` after it is asked for; the
    nodes already asked for and not yet joined are taken to be Ready `delay` after `now`.
    `known`: the pools seen before (`store.known_pools`); one with no Ready node now that the
    groups cover is a pool at zero that may grow, its nodes as they were when last seen."""
    nodes = [n for n in store.objects(K.NODES).values() if isinstance(n, Node)]
    pods = [p for p in store.objects(K.PODS).values() if isinstance(p, Pod)]
    limits = pool_limits(groups, nodes, known.bases() if known is not None else None) if groups is not None else {}
    pools = pools_from_cluster(nodes, pods, {name: (lim.max_nodes, delay) for name, lim in limits.items()})
    for name, shape in (known.pools.items() if known is not None else ()):
        lim = limits.get(name)
        if name not in pools and lim is not None and lim.max_nodes > 0 and shape.gpus_per_node > 0:
            pools[name] = PoolCapacity(name, dict(shape.node_labels), shape.gpus_per_node, (), lim.max_nodes, delay,
                                       queued=queued_pool(shape.node_labels))
    for name, lim in limits.items():
        if name in pools and lim.coming and now is not None:
            pools[name] = dataclasses.replace(pools[name], coming=(now + delay,) * lim.coming)
    placements = placements_from_cluster(nodes, pods, lambda p: store.workload_of_pod((p.namespace, p.name)))
    return pools, placements


def checks_from_store(store: Store, snap: ClusterSnapshot) -> dict[str, NodeCheck]:
    """The snapshot's ProvisioningRequest admission checks with the classes of the
    ProvisioningRequestConfigs the store holds (one not there: taken to grow the pools)."""
    configs = [c for c in store.objects(K.PROVISIONING_CONFIGS).values() if isinstance(c, ProvisioningRequestConfig)]
    return node_checks(snap.admission_checks, configs)


# ---------------------------------------------------------------------------------------- what-if
def eta_moves(before: Forecast, after: Forecast, keys: Iterable[Key]) -> list[dict[str, Any]]:
    """Every workload of `keys` whose expected start differs between the two forecasts."""
    now = before.at
    out = []
    for key in keys:
        b, a = before.workloads.get(key), after.workloads.get(key)
        if b is None or a is None:
            continue
        if b.start is not None and a.start is not None:
            delta = a.start - b.start
            if abs(delta) < MOVED_WITHIN:
                continue
            change = "sooner" if delta < 0 else "later"
        elif b.start is None and a.start is not None:
            change, delta = "starts", None
        elif b.start is not None and a.start is None:
            change, delta = "noLongerStarts", None
        else:
            continue
        out.append({"namespace": clean(key[0]), "name": clean(key[1]), "clusterQueue": clean(a.cluster_queue) or None,
                    "before": eta_doc(b, now, before.complete), "after": eta_doc(a, now, after.complete),
                    "never": clean(a.never) if a.start is None and a.never else None,
                    "change": change, "deltaSeconds": delta})
    out.sort(key=lambda m: (m["deltaSeconds"] is None, m["deltaSeconds"] or 0.0, m["namespace"], m["name"]))
    return out


def _count(n: int, verb: str, verb_one: str) -> str:
    return f"{n} workload{'s' if n != 1 else ''} {verb if n != 1 else verb_one}"


def move_summary(moves: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    sooner = [-m["deltaSeconds"] for m in moves if m["change"] == "sooner"]
    later = [m["deltaSeconds"] for m in moves if m["change"] == "later"]
    starts = sum(1 for m in moves if m["change"] == "starts")
    gone = sum(1 for m in moves if m["change"] == "noLongerStarts")
    s_med = statistics.median(sooner) if sooner else None
    l_med = statistics.median(later) if later else None
    text = _count(len(sooner), "start sooner", "starts sooner") + (f", median {age_text(s_med)}" if sooner else "")
    text += f"; {len(later)} later" + (f", median {age_text(l_med)}" if later else "")
    if starts:
        text += f"; {_count(starts, 'now start', 'now starts')} (no start before)"
    if gone:
        text += f"; {_count(gone, 'no longer start', 'no longer starts')}"
    return {"sooner": len(sooner), "soonerMedianSeconds": s_med, "later": len(later), "laterMedianSeconds": l_med,
            "nowStart": starts, "noLongerStart": gone, "text": text}


# ---------------------------------------------------------------------------------------- checks
def awaits_checks(wl: Workload) -> bool:
    """Holding quota, not admitted: an admission check has not passed yet (Kueue admits once every
    check of the workload is Ready: pkg/workload admissionchecks.go HasAllChecksReady)."""
    return (wl.has_quota_reservation and not wl.is_admitted and not wl.is_finished and not wl.is_evicted
            and any(c.state != "Ready" for c in wl.admission_checks))


def checks_text(wl: Workload) -> str:
    """"dws-prov Pending: Waiting for resources…": the checks not Ready yet, as Kueue wrote them."""
    return "; ".join(clean(f"{c.name} {c.state}" + (f": {c.message}" if c.message else ""))
                     for c in wl.admission_checks if c.state != "Ready")


def awaiting_rows(snap: ClusterSnapshot, keys: Iterable[Key], now: float) -> list[dict[str, Any]]:
    """One row per workload of `keys` that awaits its admission checks (the `awaitingChecks` key),
    the longest waiting first."""
    rows = []
    for key in keys:
        wl = snap.workloads.get(key)
        if wl is None or not awaits_checks(wl):
            continue
        since = admitted_at(wl)
        rows.append({
            "namespace": clean(key[0]), "name": clean(key[1]),
            "clusterQueue": clean(wl.admission.cluster_queue) if wl.admission is not None else None,
            "reservedAt": rfc3339(since), "reservedForSeconds": max(0.0, now - since) if since is not None else None,
            "checks": [{"name": clean(c.name), "state": clean(c.state), "message": clean(c.message) or None}
                       for c in wl.admission_checks if c.state != "Ready"],
        })
    rows.sort(key=lambda r: (-(r["reservedForSeconds"] or 0.0), r["namespace"], r["name"]))
    return rows


# ---------------------------------------------------------------------------------------- document
def forecast_doc(snap: ClusterSnapshot, fc: Forecast, keys: Sequence[Key], *, source: Mapping[str, Any],
                 position_of: PositionOf | None = None, at_most: int | None = None,
                 before: Forecast | None = None, changes: Sequence[str] = (),
                 awaiting: Iterable[Key] = (), namespace: str | None = None) -> dict[str, Any]:
    """The `-o json` document. `fc`: the forecast shown (after the changes, with --with);
    `before`: the forecast without them; `keys`: the workloads asked about; `awaiting`: those
    holding quota to look at for admission checks not passed yet."""
    rows = workload_rows(snap, fc, keys, position_of)
    shown = rows if at_most is None else rows[:max(0, at_most)]
    what_if = None
    if before is not None:
        moves = eta_moves(before, fc, keys)
        listed = moves if at_most is None else moves[:max(0, at_most)]
        # --at-most bounds this list too; the summary counts every move.
        what_if = {"changes": [clean(c) for c in changes], "moved": listed, "movedOmitted": len(moves) - len(listed),
                   "summary": move_summary(moves)}
    return {"schema": SCHEMA, "at": rfc3339(fc.at), "horizon": rfc3339(fc.horizon), "complete": fc.complete,
            "source": dict(source), "assumptions": [CHECKS_ASSUMED], "workloads": shown,
            "shown": len(shown), "omitted": len(rows) - len(shown), "whatIf": what_if,
            "awaitingChecks": awaiting_rows(snap, awaiting, fc.at), "namespace": clean(namespace) if namespace else None}


# ---------------------------------------------------------------------------------------- text
def _flavors_cell(row: Mapping[str, Any]) -> str:
    sets = row["flavors"]
    if not sets:
        return "-"
    names = [",".join(dict.fromkeys(p["flavors"].values())) or "-" for p in sets]
    if len(sets) == 1:
        return names[0]
    return " ".join(f"{p['podSet']}={n}" for p, n in zip(sets, names, strict=True))


def _waits_cell(row: Mapping[str, Any]) -> str:
    """Whose finish lets it in; for one holding quota, its ProvisioningRequest checks first."""
    checks = row.get("waitsForChecks") or []
    names = _names_cell(row["after"])
    if not checks:
        return names
    head = "nodes for " + ", ".join(checks)
    return head if names == "-" else f"{head}; {names}"


def _names_cell(names: Sequence[str], limit: int = 3) -> str:
    if not names:
        return "-"
    more = len(names) - limit
    return ", ".join(names[:limit]) + (f" +{more} more" if more > 0 else "")


def change_cell(m: Mapping[str, Any]) -> str:
    """What a what-if did to one workload's start: "sooner by 5m", "later by 2m", …."""
    if m["change"] == "sooner":
        return f"sooner by {age_text(-m['deltaSeconds'])}"
    if m["change"] == "later":
        return f"later by {age_text(m['deltaSeconds'])}"
    if m["change"] == "starts":
        return "starts (had no start)"
    return "no longer starts" + (f": {m['never']}" if m.get("never") else "")


def render_text(doc: Mapping[str, Any]) -> str:
    """The same document as aligned text (`-o table`)."""
    src = doc["source"]
    where = (f"scenario {src['name']} at {age_text(src['atSeconds'])}" if src.get("kind") == "scenario"
             else f"recording {src['name']} (cluster {src.get('context') or '-'})" if src.get("kind") == "recording"
             else f"cluster {src.get('context') or '-'} ({src.get('server')})")
    lines = [f"forecast of {where}, at {doc['at']}" + ("" if doc["complete"] else
                                                        " (incomplete: the horizon ended it)")]
    lines += [f"  assumes {a}" for a in doc["assumptions"]]
    lines.append("")
    what_if = doc.get("whatIf")
    if what_if is not None:
        lines.append("with " + "; ".join(what_if["changes"]))
        rows = [[f"{m['namespace']}", m["name"], m["clusterQueue"], m["before"]["text"], m["after"]["text"],
                 change_cell(m)] for m in what_if["moved"]]
        omitted = what_if.get("movedOmitted") or 0
        if not rows and not omitted:
            return "\n".join([*lines, "No workload's ETA moved.", what_if["summary"]["text"]]) + "\n"
        lines += _table("Workloads whose ETA moved", ["NAMESPACE", "NAME", "CLUSTERQUEUE", "BEFORE", "AFTER",
                                                      "CHANGE"], rows)
        if omitted:
            lines.append(f"{omitted} more moved, not shown (--at-most {len(rows)})")
        lines.append(what_if["summary"]["text"])
        return "\n".join(lines) + "\n"
    ws = doc["workloads"]
    starting = [w for w in ws if w["never"] is None]
    rows = [[w["namespace"], w["name"], w["clusterQueue"], None if w["position"] is None else f"#{w['position']}",
             w["eta"]["text"], _flavors_cell(w), _waits_cell(w), _names_cell(w["preempts"]),
             w["basis"]] for w in starting]
    if not ws and not doc["omitted"]:
        ns = doc.get("namespace")
        lines.append(f"No pending workloads in namespace {ns}." if ns else "No pending workloads.")
    lines += [] if not rows else _table("Pending workloads", ["NAMESPACE", "NAME", "CLUSTERQUEUE", "POS", "ETA", "FLAVORS",
                                          "WAITS FOR", "PREEMPTS", "BASIS"], rows)
    never = [w for w in ws if w["never"] is not None]
    if never:
        lines += _table("Never admitted as the cluster stands", ["NAMESPACE", "NAME", "CLUSTERQUEUE", "WHY"],
                        [[w["namespace"], w["name"], w["clusterQueue"], w["never"]] for w in never])
    if doc["omitted"]:
        lines.append(f"{doc['omitted']} more not shown (--at-most {doc['shown']})")
    waiting = doc.get("awaitingChecks") or []
    if waiting:
        lines += _table("Holding quota, waiting for admission checks (when a check passes is not forecast)",
                        ["NAMESPACE", "NAME", "CLUSTERQUEUE", "RESERVED", "CHECKS"],
                        [[w["namespace"], w["name"], w["clusterQueue"],
                          f"{age_text(w['reservedForSeconds'])} ago" if w["reservedForSeconds"] is not None else None,
                          "; ".join(f"{c['name']} {c['state']}" + (f": {c['message']}" if c["message"] else "")
                                    for c in w["checks"])] for w in waiting])
    return "\n".join(lines).rstrip("\n") + "\n"
