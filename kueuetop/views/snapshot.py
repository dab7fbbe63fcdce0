"""`kueuetop snapshot`: the console's four tables, once, as JSON or text. No Textual here.

Rows are built from the store as the console shows them: workload state derived as in
reference/kueue.md §4.5, queue positions from Kueue's visibility API when the cluster serves it
(else the embedded engine's queue order), quota usage summed from the workloads that hold quota,
GPUs joined to pods and pods to Workloads. Every string from the cluster or from Prometheus goes
through `safe_text.clean`.

JSON document (`-o json`), stable: keys are never renamed or removed within a `schema`
version, new keys may be added; lists are sorted as noted; absent values are `null`.

    schema            1
    generatedAt       RFC 3339 UTC time of the snapshot
    cluster           {context, server, kueueApi, positions: "visibility" | "visibility+engine" | "engine"}
    sources           [{name, state, message, ageSeconds, stale}]          sorted by name
    clusterQueues     [{name, cohort, active, inactiveReason, stopPolicy, status,
                        pending, reserving, admitted,
                        quota: [{flavor, resource, usage, nominal, borrowed, borrowingLimit}]}]
                      sorted by name; quota in spec order; quantities are Kubernetes quantity
                      strings ("4", "500m", "20Gi"); borrowingLimit null = unlimited;
                      pending / reserving / admitted and active are Kueue's own (the queue's
                      status, as `kubectl get clusterqueues` and the console show them:
                      reserving counts every workload holding quota, admitted ones included;
                      active null while Kueue has not written the Active condition); status:
                      Active | Inactive(reason) | Stopped(policy) | ? (views/queue_rows.py)
    workloads         [{namespace, name, queue, clusterQueue, priority, state, reason, message,
                        position, localPosition, flavors: {resource: flavor}, waitSeconds,
                        gpus, gpuUtil, gpuUse, evictions}]                  sorted by (namespace, name)
                      state: Pending | Backoff | Blocked | OnHold | Gated | Inactive |
                      QuotaReserved | Admitted | Evicting | Finished; position / localPosition are
                      1-based (null when not queued); waitSeconds: creation → quota
                      reservation (or now while queued), null when a finished workload
                      never had quota;
                      gpuUtil: mean % over the workload's fresh GPUs (null without telemetry);
                      gpuUse: busy | low | idle | stale | unknown (null when not admitted)
    nodes             [{name, pool, flavors, gpuModel, gpusAllocated, gpus, gpuUtil, gpuStale, ready}]
                      GPU nodes only, sorted by (pool, name); flavors: ResourceFlavors whose
                      nodeLabels the node carries; gpusAllocated: GPUs requested by the
                      Kueue-managed pods bound there
    gpus              [{node, index, model, util, memUsedMiB, memTotalMiB, namespace, pod, stale}]
                      sorted by (node, index); stale: sample or source stale (never shown as 0 %)
    replay            only in `snapshot --replay`: {recording, at, start, end}, the recording's
                      name, the replayed moment and the span it covers (a live snapshot has none)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from kueuetop.admission.queue_order import pending_workloads
from kueuetop.admission.queue_state import QueueState
from kueuetop.admission.workload_index import WorkloadIndex
from kueuetop.kueue.core import GPU_RESOURCE, Node, Pod
from kueuetop.kueue.gpu import GpuSample
from kueuetop.kueue.quantity import format_resource_value
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.views.queue_rows import cluster_queue_row
from kueuetop.views.safe_text import clean
from kueuetop.views.workload_rows import Key, store_position, workload_row

SCHEMA = 1
POOL_LABELS = ("cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool",
               "kubernetes.azure.com/agentpool", "node.kubernetes.io/pool")
POOL_ANNOTATION = "kueuetop.io/node-pool"
MODEL_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator")


class GpuUse(Protocol):
    """What a row reads of a workload's GPU use (sources/gpu_join.py `WorkloadGpuUse`)."""

    state: str


def _rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _num(v: float | None, digits: int = 1) -> float | None:
    return None if v is None or not math.isfinite(v) else round(v, digits)


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    return sum(vals) / len(vals) if vals else None


def observed_now(snap: ClusterSnapshot, local: float) -> float:
    """The cluster's "now": the local clock, or the newest time the cluster wrote when that is
    later (a server clock ahead of ours, or the simulator running faster than real time), so
    wait times and backoffs never come out negative."""
    newest = local
    for wl in snap.workloads.values():
        newest = max(newest, wl.meta.creation or 0.0,
                     *(c.last_transition or 0.0 for c in wl.conditions))
    return newest


# ======================================================================== rows
def source_rows(store: Store, now: float) -> list[dict[str, Any]]:
    out = []
    for name, st in sorted(store.sources().items()):
        age = st.age(now)
        out.append({"name": clean(name), "state": st.state.value, "message": clean(st.message),
                    "ageSeconds": _num(age), "stale": st.stale(now)})
    return out


def _usage(snap: ClusterSnapshot) -> dict[str, dict[tuple[str, str], int]]:
    out: dict[str, dict[tuple[str, str], int]] = {}
    for wl in snap.workloads.values():
        if wl.admission is None or wl.is_finished or not wl.has_quota_reservation:
            continue
        per_cq = out.setdefault(wl.admission.cluster_queue, {})
        for fr, v in wl.usage().items():
            per_cq[fr] = per_cq.get(fr, 0) + v
    return out


def cluster_queue_rows(store: Store, snap: ClusterSnapshot) -> list[dict[str, Any]]:
    usage = _usage(snap)
    rows = []
    for name in sorted(snap.cluster_queues):
        cq = snap.cluster_queues[name]
        q = cluster_queue_row(cq)
        used = usage.get(name, {})
        quota = []
        for group in cq.resource_groups:
            for fq in group.flavors:
                for res, rq in fq.resources.items():
                    u = used.get((fq.name, res), 0)
                    quota.append({
                        "flavor": clean(fq.name), "resource": clean(res),
                        "usage": format_resource_value(res, u),
                        "nominal": format_resource_value(res, rq.nominal),
                        "borrowed": format_resource_value(res, max(0, u - rq.nominal)),
                        "borrowingLimit": None if rq.borrowing_limit is None
                        else format_resource_value(res, rq.borrowing_limit),
                    })
        rows.append({
            "name": clean(name), "cohort": clean(cq.cohort) or None, "active": q.active,
            "inactiveReason": clean(q.inactive_reason) if q.inactive_reason else None,
            "stopPolicy": clean(cq.stop_policy), "status": clean(q.status),
            "pending": q.pending, "reserving": q.reserving, "admitted": q.admitted,
            "quota": quota,
        })
    return rows


def _engine_positions(snap: ClusterSnapshot) -> dict[tuple[str, str], tuple[int, int]]:
    """(position in CQ, position in LQ), 0-based, in the embedded engine's queue order."""
    state = QueueState()
    index = WorkloadIndex().update(snap)  # once: it indexes every ClusterQueue's pending workloads
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for cq in snap.cluster_queues:
        per_lq: dict[tuple[str, str], int] = {}
        for i, wl in enumerate(pending_workloads(snap, state, cq, index)):
            lq = (wl.namespace, wl.queue_name)
            out[wl.key] = (i, per_lq.get(lq, 0))
            per_lq[lq] = per_lq.get(lq, 0) + 1
    return out


def workload_rows(store: Store, snap: ClusterSnapshot, now: float, *, gpu_stale: bool = False,
                  gpu_use: Mapping[Key, GpuUse] | None = None) -> list[dict[str, Any]]:
    """The shared workload rows (views/workload_rows.py) as JSON fields; `gpu_use`: each
    admitted workload's GPU use (busy / low / idle / stale / unknown), when the caller joined it."""
    engine: dict[Key, tuple[int, int]] | None = None  # built on first need: when Kueue's
    # visibility API answered for every queue, the engine's index is never built
    from_store = store_position(store)

    def position_of(key: Key) -> tuple[int, int] | None:
        nonlocal engine
        got = from_store(key)
        if got is None:
            if engine is None:
                engine = _engine_positions(snap)
            got = engine.get(key)
        return got

    use = gpu_use or {}
    rows = []
    for key in sorted(snap.workloads):
        wl = snap.workloads[key]
        r = workload_row(store, key, wl, now, position_of)
        st, u = r.state, use.get(key)
        rows.append({
            "namespace": clean(wl.namespace), "name": clean(wl.name), "queue": clean(wl.queue_name),
            "clusterQueue": clean(r.cluster_queue) or None, "priority": wl.effective_priority,
            "state": st.phase.value,
            "reason": clean(st.reason) if st.reason else None,
            "message": clean(st.message) if st.message else None,
            "position": r.position, "localPosition": r.local_position,
            "flavors": {clean(res): clean(f) for res, f in r.flavors_by_resource.items()},
            "waitSeconds": _num(r.wait, 0),
            "gpus": sum(ps.total().get(GPU_RESOURCE, 0) for ps in wl.pod_sets),
            "gpuUtil": _num(r.gpu_util),
            "gpuUse": ("stale" if gpu_stale and u.state != "unknown" else u.state) if u else None,
            "evictions": r.evictions,
        })
    return rows


def _pool(node: Node) -> str:
    labels = node.meta.labels
    for k in POOL_LABELS:
        if labels.get(k):
            return labels[k]
    return node.meta.annotations.get(POOL_ANNOTATION, "")


def _node_flavors(node: Node, snap: ClusterSnapshot) -> list[str]:
    labels = node.meta.labels
    return sorted(clean(name) for name, f in snap.flavors.items()
                  if f.node_labels and all(labels.get(k) == v for k, v in f.node_labels.items()))


def node_rows(store: Store, snap: ClusterSnapshot, gpus_by_node: Mapping[str, Sequence[GpuSample]],
              *, gpu_stale: bool = False) -> list[dict[str, Any]]:
    rows = []
    for node in store.objects(K.NODES).values():
        if not isinstance(node, Node) or node.gpus <= 0:
            continue
        samples = gpus_by_node.get(node.name, ())
        allocated = 0
        for pkey in store.pods_on_node(node.name):
            pod = store.get(K.PODS, pkey)
            if isinstance(pod, Pod) and pod.phase not in ("Succeeded", "Failed"):
                allocated += pod.gpus
        model = next((node.meta.labels[k] for k in MODEL_LABELS if node.meta.labels.get(k)), "") \
            or next((s.model for s in samples if s.model), "")
        fresh = [s.util for s in samples if not s.stale]
        rows.append({
            "name": clean(node.name), "pool": clean(_pool(node)) or None,
            "flavors": _node_flavors(node, snap), "gpuModel": clean(model) or None,
            "gpusAllocated": allocated, "gpus": node.gpus,
            "gpuUtil": _num(_mean(fresh)), "gpuStale": bool(samples) and (gpu_stale or not fresh),
            "ready": node.ready,
        })
    rows.sort(key=lambda r: (r["pool"] or "", r["name"]))
    return rows


def gpu_rows(samples: Iterable[GpuSample], *, gpu_stale: bool = False) -> list[dict[str, Any]]:
    rows = []
    for s in sorted(samples, key=lambda s: (s.node, _gpu_sort(s.gpu))):
        rows.append({
            "node": clean(s.node), "index": clean(s.gpu), "model": clean(s.model) or None,
            "util": _num(s.util), "memUsedMiB": _num(s.mem_used_mib, 0), "memTotalMiB": _num(s.mem_total_mib, 0),
            "namespace": clean(s.namespace) or None, "pod": clean(s.pod) or None,
            "stale": s.stale or gpu_stale,
        })
    return rows


def _gpu_sort(gpu: str) -> tuple[int, str]:
    head = gpu.split("/", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, gpu)


def build_snapshot(store: Store, *, now: float, context: str = "", server: str = "", kueue_api: str = "",
                   positions: str = "engine", gpu_source: str | None = None,
                   gpu_use: Callable[[ClusterSnapshot, float], Mapping[Key, GpuUse]] | None = None) -> dict[str, Any]:
    """The whole JSON document (see the module docstring). `gpu_use(snapshot, now)`: each admitted
    workload's GPU use, joined by the caller (sources/gpu_join.py); without it `gpuUse` is null."""
    snap = store.snapshot()
    # Source ages are on our clock; workload waits on the cluster's (see observed_now).
    cluster_now = observed_now(snap, now)
    gpu_stale = gpu_source is not None and store.stale(gpu_source, now)
    samples = list(store.gpus().values())
    by_node: dict[str, list[GpuSample]] = {}
    for s in samples:
        by_node.setdefault(s.node, []).append(s)
    return {
        "schema": SCHEMA,
        "generatedAt": _rfc3339(now),
        "cluster": {"context": clean(context), "server": clean(server), "kueueApi": clean(kueue_api),
                    "positions": positions},
        "sources": source_rows(store, now),
        "clusterQueues": cluster_queue_rows(store, snap),
        "workloads": workload_rows(store, snap, cluster_now, gpu_stale=gpu_stale,
                                   gpu_use=gpu_use(snap, cluster_now) if gpu_use is not None else None),
        "nodes": node_rows(store, snap, by_node, gpu_stale=gpu_stale),
        "gpus": gpu_rows(samples, gpu_stale=gpu_stale),
    }


# ======================================================================== text
def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, dict):
        return ",".join(f"{k}={x}" for k, x in v.items()) or "-"
    if isinstance(v, list):
        return ",".join(str(x) for x in v) or "-"
    return clean(v)


def _table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    out = [f"{title} ({len(rows)})", "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return [*out, ""]


def _pct(v: float | None, stale: bool) -> str | None:
    if v is None:
        return "stale" if stale else None
    return f"{v:.0f}%" + (" (stale)" if stale else "")


def _wait(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    s = int(seconds)
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h{(s % 3600) // 60:02d}m"


def render_text(doc: Mapping[str, Any]) -> str:
    """The same document as aligned text tables (`-o table`)."""
    c = doc["cluster"]
    lines = [f"cluster {c['context'] or '-'} ({c['server']}), kueue.x-k8s.io/{c['kueueApi']}, at {doc['generatedAt']}"]
    replay = doc.get("replay")
    if replay:
        lines[0] = (f"replayed from recording {replay['recording'] or '-'} ({replay['start']} to {replay['end']}): "
                    + lines[0])
        if all(s["state"] == "connecting" for s in doc["sources"]):  # none yet, or none synced
            lines.append("  nothing had been read yet at this moment of the recording: try a later --at")
    for s in doc["sources"]:
        if s["stale"] or s["message"]:
            age = f", {s['ageSeconds']:.0f}s old" if s["ageSeconds"] is not None else ""
            lines.append(f"  source {s['name']}: {s['state']}{age}" + (f" — {s['message']}" if s["message"] else ""))
    lines.append("")
    cq_rows = []
    for q in doc["clusterQueues"]:
        quota = "; ".join(f"{r['flavor']}/{r['resource']} {r['usage']}/{r['nominal']}"
                          + (f" (+{r['borrowed']} borrowed)" if r["borrowed"] not in ("0", "") else "")
                          for r in q["quota"])
        cq_rows.append([q["name"], q["cohort"], q["pending"], q["reserving"], q["admitted"], q["status"], quota])
    lines += _table("ClusterQueues", ["NAME", "COHORT", "PENDING", "RESERVING", "ADMITTED", "STATUS",
                                      "USAGE/NOMINAL"], cq_rows)
    wl_rows = []
    for w in doc["workloads"]:
        state = w["state"] + (f" ({w['reason']})" if w["reason"] else "")
        pos = None if w["position"] is None else f"#{w['position']}"
        wl_rows.append([w["namespace"], w["name"], w["queue"], w["clusterQueue"], w["priority"], state, pos,
                        w["flavors"], _wait(w["waitSeconds"]), _pct(w["gpuUtil"], w["gpuUse"] == "stale"),
                        w["evictions"]])
    lines += _table("Workloads", ["NAMESPACE", "NAME", "QUEUE", "CLUSTERQUEUE", "PRIO", "STATE", "POS",
                                  "FLAVORS", "WAIT", "GPU UTIL", "EVICTIONS"], wl_rows)
    node_rows_ = [[n["name"], n["pool"], n["flavors"], n["gpuModel"], f"{n['gpusAllocated']}/{n['gpus']}",
                   _pct(n["gpuUtil"], n["gpuStale"])] for n in doc["nodes"]]
    lines += _table("Nodes", ["NAME", "POOL", "FLAVOR", "GPU MODEL", "GPUS ALLOC/CAP", "GPU UTIL"], node_rows_)
    gpu_rows_ = [[g["node"], g["index"], _pct(g["util"], g["stale"]),
                  None if g["memUsedMiB"] is None else f"{g['memUsedMiB']:.0f}/{g['memTotalMiB'] or 0:.0f} MiB",
                  f"{g['namespace']}/{g['pod']}" if g["pod"] else None] for g in doc["gpus"]]
    lines += _table("GPUs", ["NODE", "GPU", "UTIL", "MEMORY", "POD"], gpu_rows_)
    return "\n".join(lines)
